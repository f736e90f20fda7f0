"""The report in real headless Chromium (Debian's ``chromium``), driven over the DevTools protocol:
no console errors, the key sections, a trajectory opened by a real mouse click on a grid cell,
a non-blank screenshot, and hostile text from a trajectory shown as text and never run."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from agentrig.report import write_report

from .cdp import Browser, find_chromium, png_pixels
from .runs import EVENT_TEXT, IMG_TEXT, INVALID_CAUSE, INVALID_ONLY, REPLAYED, SCRIPT_TEXT, TAMPERED, make_run


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        msg = ("chromium not found: the report test needs Debian's chromium "
               "(`apt-get install -y chromium`; .ci/run and `make test` install it when missing)")
        if os.environ.get("CI") or os.environ.get("AGENTRIG_REQUIRE_TAU2_DATA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="module")
def report(hostile_run, tmp_path_factory) -> Path:
    return write_report([hostile_run], tmp_path_factory.mktemp("out") / "report.html")


async def _settle(page) -> None:
    await page.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    await asyncio.sleep(0.2)


async def _open(browser, report: Path, width: int):
    """A page showing the report at ``width`` × 900 CSS px, loaded and laid out."""
    page = await browser.page()
    await page.send("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
    await page.goto(report.resolve().as_uri())
    await _settle(page)
    return page


def _colour_stats(png: bytes) -> tuple[int, int, int, float]:
    w, h, ch, rows = png_pixels(png)
    colours = set()
    lum_sum = lum_sq = 0.0
    n = 0
    for y in range(0, h, 4):
        row = rows[y]
        for x in range(0, w, 4):
            px = row[x * ch:x * ch + 3]
            colours.add(bytes(px))
            lum = 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]
            lum_sum += lum
            lum_sq += lum * lum
            n += 1
    mean = lum_sum / n
    return w, h, len(colours), lum_sq / n - mean * mean


async def test_report_in_chromium(chromium, report, tmp_path):
    async with await Browser.launch(tmp_path / "profile", chromium) as browser:
        page = await _open(browser, report, 1280)
        assert page.errors == []

        # the key sections, with content
        sections = await page.eval("[...document.querySelectorAll('main > section')].map(s => s.id)")
        for sid in ("summary", "passk", "gap", "grid", "failures", "ab", "usage", "trajectory-help", "trajectory"):
            assert sid in sections, sections
        assert await page.eval("document.querySelectorAll('#passk svg polyline').length") == 3  # one per arm
        assert await page.eval("document.querySelectorAll('#passk svg polygon').length") >= 1   # CI bands
        assert await page.eval("document.querySelectorAll('#gap svg circle').length") == 3
        assert await page.eval("document.querySelectorAll('#ab svg circle').length") >= 2
        assert await page.eval("document.querySelectorAll('#failures svg rect').length") > 3
        # 3 arms × 16 tasks × 2 trials = 96 cells, all played
        assert await page.eval("document.querySelectorAll('#grid-host span.c').length") == 96
        assert await page.eval("document.querySelectorAll('#grid-host span.c.missing').length") == 0
        assert await page.eval("document.getElementById('trajectory').hidden") is True

        # a real mouse click on the tampered trial's cell opens its trajectory
        arm, domain, task, trial = TAMPERED
        t_index = await page.eval(f"JSON.parse(document.getElementById('grid-data').textContent).tasks"
                                  f".findIndex(t => t[0] === {json.dumps(domain)} && t[1] === {json.dumps(task)})")
        a_index = await page.eval(f"JSON.parse(document.getElementById('grid-data').textContent).arms"
                                  f".findIndex(a => a.label === {json.dumps(arm)})")
        sel = f'#grid-host span.c[data-a="{a_index}"][data-t="{t_index}"][data-k="{trial}"]'
        await page.eval(f"document.querySelector({json.dumps(sel)}).scrollIntoView({{block: 'center'}})")
        await _settle(page)
        rect = await page.eval(f"(() => {{ const r = document.querySelector({json.dumps(sel)}).getBoundingClientRect();"
                               " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        await page.click_at(*rect)
        await _settle(page)
        assert await page.eval("document.getElementById('trajectory').hidden") is False
        title = await page.eval("document.getElementById('viewer-title').textContent")
        assert task in title and arm in title
        assert await page.eval("document.querySelectorAll('#viewer .msg').length") >= 4
        assert await page.eval("document.querySelectorAll('#viewer .event').length") >= 1
        assert await page.eval("document.querySelectorAll('#viewer .toolcall').length") >= 1

        # the hostile text is on screen as text, and nothing of it ran or became an element
        viewer_text = await page.eval("document.getElementById('viewer').innerText")
        assert SCRIPT_TEXT in viewer_text
        assert IMG_TEXT in viewer_text
        assert "get_bike<i>" in viewer_text
        assert await page.eval("typeof window.__pwned") == "undefined"
        assert await page.eval("document.querySelectorAll('#viewer img, #viewer script, #viewer svg, #viewer i, #viewer b').length") == 0
        assert await page.eval("document.querySelectorAll('body > script:not([type])').length") == 1  # ours only
        await page.eval("document.querySelector('#viewer details.reasoning, #viewer details')?.setAttribute('open', '')")
        events_text = await page.eval("[...document.querySelectorAll('#viewer .event')].map(e => e.textContent).join(' ')")
        assert EVENT_TEXT in events_text

        # a link elsewhere (a failure-taxonomy example) opens a trial too
        before = title
        clicked = await page.eval("(() => { const l = [...document.querySelectorAll('#failures a.open')]"
                                  ".find(a => a.dataset.openTask !== " + json.dumps(task) + ");"
                                  " if (!l) return null; l.click(); return l.dataset.openTask; })()")
        assert clicked
        await _settle(page)
        title = await page.eval("document.getElementById('viewer-title').textContent")
        assert clicked in title and title != before

        # an invalid trial (its cell hatched) and a replayed one (its attempts as tabs)
        async def click_cell(key) -> str:
            a, d, t, k = key
            js = (f"(() => {{ const g = JSON.parse(document.getElementById('grid-data').textContent);"
                  f" const ai = g.arms.findIndex(x => x.label === {json.dumps(a)});"
                  f" const ti = g.tasks.findIndex(x => x[0] === {json.dumps(d)} && x[1] === {json.dumps(t)});"
                  f" const c = document.querySelector(`#grid-host span.c[data-a='${{ai}}'][data-t='${{ti}}'][data-k='{k}']`);"
                  f" c.click(); return c.className; }})()")
            return await page.eval(js)

        assert "invalid" in await click_cell(INVALID_ONLY)
        await _settle(page)
        text = await page.eval("document.getElementById('viewer').innerText")
        assert INVALID_CAUSE in text and "retries_exhausted" in text
        assert "retried" in await click_cell(REPLAYED)
        await _settle(page)
        tabs = await page.eval("[...document.querySelectorAll('#viewer .tabs button')].map(b => b.textContent)")
        assert tabs == ["attempt 0 (invalid)", "attempt 1"]
        await page.eval("document.querySelector('#viewer .tabs button').click()")
        assert INVALID_CAUSE in await page.eval("document.getElementById('viewer').innerText")

        # a screenshot of the grid that is not blank
        await page.eval("document.getElementById('grid').scrollIntoView()")
        await _settle(page)
        png = await page.screenshot()
        w, h, colours, variance = _colour_stats(png)
        assert (w, h) == (1280, 900)
        assert colours > 20, colours
        assert variance > 100, variance
        (tmp_path / "grid.png").write_bytes(png)

        assert await page.eval("typeof window.__pwned") == "undefined"
        assert page.errors == []
        # the page loaded nothing but itself: no network, no CDN
        assert page.requests and all(u.startswith("file://") for u in page.requests), page.requests


# -- the charts at 1400 px: every label whole, no two alike, nothing over the marks ----------------

LONG_ARMS = """
[[arms]]
name = "bash-native-tool-calls"
agent = { kind = "gold" }

[[arms]]
name = "bash-text-action-blocks"
agent = { kind = "flaky-gold", drop_p = 0.3 }
"""

# per chart: its texts, legend entries and row names (each under the group title above it), and
# whatever overlaps — all measured by the browser's layout, in CSS pixels
CHART_LAYOUT_JS = """
(() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const meet = (a, b) => Math.min(a[2], b[2]) - Math.max(a[0], b[0]) > 0.5 && Math.min(a[3], b[3]) - Math.max(a[1], b[1]) > 0.5;
  return [...document.querySelectorAll('main section svg')].map((svg) => {
    const id = svg.closest('section').id + ': ' + svg.getAttribute('aria-label');
    const frame = box(svg);
    const texts = [...svg.querySelectorAll('text')];
    const marks = [...svg.querySelectorAll('.mark')];
    const keys = [...svg.querySelectorAll('.key')];
    const labels = [];
    let group = '';
    for (const t of svg.querySelectorAll('text.group, text.label')) {
      if (t.classList.contains('group')) group = t.textContent; else labels.push(group + ' | ' + t.textContent);
    }
    const problems = [];
    for (const t of texts) {
      const b = box(t);
      if (b[0] < frame[0] - 0.5 || b[2] > frame[2] + 0.5 || b[1] < frame[1] - 0.5 || b[3] > frame[3] + 0.5)
        problems.push('cut: ' + t.textContent);
      for (const m of marks) if (meet(b, box(m))) problems.push('text over a mark: ' + t.textContent);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (meet(box(texts[i]), box(texts[j]))) problems.push('texts overlap: ' + texts[i].textContent + ' / ' + texts[j].textContent);
    for (const k of keys) for (const m of marks) if (meet(box(k), box(m))) problems.push('legend over a mark: ' + k.textContent);
    return {id, problems, keys: keys.map((k) => k.textContent), labels, groups: [...svg.querySelectorAll('text.group')].map((t) => t.textContent),
            width: frame[2] - frame[0], drawn: svg.viewBox.baseVal.width};
  });
})()
"""


@pytest.fixture(scope="module")
def long_names_report(demo_run, tmp_path_factory) -> tuple[Path, list[str]]:
    """The demo's shape with long names: a reference run and a second run whose arm names share a
    long prefix, in one report (so every label is ``RUN:ARM``)."""
    where = tmp_path_factory.mktemp("long")
    first = where / "demo-terminal-reference-agents"
    shutil.copytree(demo_run, first)
    second = make_run(where / "llm", arms=LONG_ARMS, name="demo-terminal-llm-agents")
    out = write_report([first, second], where / "report.html")
    labels = [f"{first.name}:{a}" for a in ("gold", "flaky-gold", "noop")] + \
        [f"{second.name}:{a}" for a in ("bash-native-tool-calls", "bash-text-action-blocks")]
    return out, labels


async def test_charts_show_whole_distinct_labels_at_1400px(chromium, long_names_report, tmp_path):
    report, labels = long_names_report
    async with await Browser.launch(tmp_path / "profile", chromium) as browser:
        page = await _open(browser, report, 1400)
        assert page.errors == []
        charts = await page.eval(CHART_LAYOUT_JS)
        # the arms differ only in their own settings: each comparison says so, none in red
        banners = await page.eval("[...document.querySelectorAll('.banner, .differs')].map(b => [b.className, b.innerText])")
    by_section = {c["id"].split(":")[0]: c for c in charts}
    for sid in ("passk", "gap", "failures", "ab"):
        assert sid in by_section, [c["id"] for c in charts]
    for c in charts:
        assert c["problems"] == [], c["id"]
        assert len(set(c["keys"])) == len(c["keys"]), (c["id"], c["keys"])          # no two legend entries alike
        assert len(set(c["labels"])) == len(c["labels"]), (c["id"], c["labels"])    # nor two rows
        assert c["width"] >= c["drawn"] - 1, c["id"]  # drawn at full size at 1400 px, not scaled down
    # the full arm names, readable: in the pass^k legend, on the consistency and failure rows
    assert by_section["passk"]["keys"] == labels
    assert [x.split(" | ")[1] for x in by_section["gap"]["labels"]] == labels
    assert [x.split(" | ")[1] for x in by_section["failures"]["labels"]] == labels
    # the A/B plot: one titled group per comparison (B − A, full names), its rows the metrics; each
    # run's arms against its own first arm, as the demo's terminal report compares bash-text with bash-native
    groups = by_section["ab"]["groups"]
    assert groups == [f"{labels[1]} − {labels[0]}", f"{labels[2]} − {labels[0]}", f"{labels[4]} − {labels[3]}"]
    assert f"{labels[4]} − {labels[3]} | Δpass^1" in by_section["ab"]["labels"]
    assert [c for c, _ in banners if c != "banner info"] == ["differs"] * 3, banners  # no banner: a caption
    neutral = [t for c, t in banners if c == "differs"]
    assert all(t.startswith("What differs: ") for t in neutral), banners
    assert any("arm.agent.kind: gold → flaky-gold" in t for t in neutral), banners


# -- long invalid causes do not squeeze the summary table ----------------------------------------

LONG_CAUSES = [f"sandbox: the sandbox is not running (it ended or was killed) while {what} ran; "
               "its last output: " + "x" * 60 for what in ("the agent's command", "the verifier", "the build",
                                                         "the task's set-up")]

SUMMARY_LAYOUT_JS = """
(() => {
  const t = document.querySelector('#summary table.data');
  const heads = [...t.rows[0].cells];
  const lines = (e) => { const r = document.createRange(); r.selectNodeContents(e);
                         return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size; };
  return {table: t.getBoundingClientRect().width, section: document.querySelector('#summary').getBoundingClientRect().width,
          invalid: heads[2].getBoundingClientRect().width,
          wrapped: heads.filter((h) => lines(h) > 1).map((h) => h.textContent),
          shown: t.rows[1].cells[2].innerText, title: (t.rows[1].cells[2].querySelector('[title]') || {}).title || ''};
})()
"""


@pytest.fixture(scope="module")
def long_causes_report(demo_run, tmp_path_factory) -> Path:
    """The demo run in which a few trials were first spoiled with long causes (as a sandbox's
    are), then replayed: the summary lists the invalid attempts and their causes."""
    from agentrig.store.store import Store
    from agentrig.types import Verdict

    where = tmp_path_factory.mktemp("causes")
    target = where / "run"
    target.mkdir()
    shutil.copy(demo_run / "config.json", target / "config.json")
    with Store.open(demo_run / "trials.sqlite", create=False) as src, Store.open(target / "trials.sqlite") as dst:
        for name in ("run", "comparability", "config"):
            value = src.get_meta(name)
            if value is not None:
                dst.set_meta(name, value)
        causes = iter(LONG_CAUSES)
        for rec in src.records():
            cause = next(causes, None) if rec.key.arm == "gold" else None
            if cause is not None:
                dst.append(rec.model_copy(update={"verdict": Verdict(valid=False, invalid_cause=cause,
                                                                     termination="sandbox_error")}))
                rec = rec.model_copy(update={"attempt": 1})
            dst.append(rec)
    return write_report([target], where / "report.html")


async def test_long_invalid_causes_keep_the_summary_table_whole(chromium, long_causes_report, tmp_path):
    async with await Browser.launch(tmp_path / "profile", chromium) as browser:
        page = await _open(browser, long_causes_report, 1280)
        assert page.errors == []
        layout = await page.eval(SUMMARY_LAYOUT_JS)
    assert "invalid attempt(s)" in layout["shown"], layout
    assert layout["table"] <= layout["section"] + 1, layout
    assert layout["wrapped"] == [], layout  # no header squeezed onto two lines
    assert layout["invalid"] < 0.25 * layout["table"], layout  # the causes wrap inside a narrow column
    assert all(c[:40] in layout["shown"] + layout["title"] for c in LONG_CAUSES), layout  # every cause readable
