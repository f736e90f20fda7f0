"""The report file without a browser: escaping, the security policy, self-containment, what is
embedded under limits, several runs and the A/B section, the command."""

from __future__ import annotations

import base64
import hashlib
import html as htmllib
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.errors import DataError
from agentrig.commands.report import report_command
from agentrig.report import REPORT_FILE, write_report
from agentrig.report.embed import Limits
from agentrig.report.findings import pairs
from agentrig.report.safe import json_for_script
from agentrig.report.svg import Bar, Series, hbars, line_chart, stacked
from agentrig.store.store import Store

from .runs import EVENT_TEXT, IMG_TEXT, INVALID_CAUSE, INVALID_ONLY, REPLAYED, SCRIPT_TEXT, make_run

TEMPLATES = Path(__file__).resolve().parents[2] / "src" / "agentrig" / "report" / "templates"


def _blocks(html: str) -> dict[str, object]:
    return {m.group(1): json.loads(m.group(2)) for m in
            re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S)}


def _grid(html: str) -> dict:
    return _blocks(html)["grid-data"]  # type: ignore[return-value]


def test_json_for_script_escapes_and_round_trips():
    value = {"a": "</script><script>x()</script>", "b": "<!-- & -->", "c": "line\u2028sep\u2029para", "d": [1, 2.5, None]}
    text = str(json_for_script(value))
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == value


def test_svg_is_well_formed_and_escapes_labels():
    hostile = '<script>alert("x")</script> & co'
    charts = [
        line_chart([Series(hostile, [(1, 0.5), (2, 0.25)], [(1, 0.4, 0.6), (2, 0.1, 0.4)])], x_label=hostile, y_label="y"),
        hbars([Bar(hostile, -3.0, -5.0, 1.0), Bar("b", 2.0)], unit=" pp"),
        stacked([(hostile, [("x<y", 3), ("z", 1)])], {"x<y": "#111", "z": "#222"}),
    ]
    for chart in charts:
        root = ET.fromstring(str(chart))  # well-formed XML, so nothing broke out of an attribute or a text
        assert root.tag.endswith("svg")
        assert not [e for e in root.iter() if e.tag.endswith("script")]
        assert hostile in "".join(root.itertext()) or "x<y" in "".join(root.itertext())


def test_report_is_self_contained_and_escaped(hostile_run):
    path = write_report([hostile_run])
    assert path == hostile_run / REPORT_FILE
    html = path.read_text(encoding="utf-8")
    # the hostile texts never appear raw anywhere in the file
    for raw in (SCRIPT_TEXT, IMG_TEXT, EVENT_TEXT, "<script>window.__pwned", "<img src=x", "get_bike<i>"):
        assert raw not in html
    # but they are in the data, intact
    blocks = _blocks(html)
    dumped = json.dumps(blocks, ensure_ascii=False)
    for raw in (SCRIPT_TEXT, IMG_TEXT, EVENT_TEXT):
        assert json.dumps(raw, ensure_ascii=False)[1:-1] in dumped
    # exactly one executable script, allowed by its hash in the policy; nothing loaded from outside
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = htmllib.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1))
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1]
    assert not re.search(r"""\b(src|href)=["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html


def test_invalid_and_replayed_trials(hostile_run, tmp_path):
    html = write_report([hostile_run], tmp_path / "r.html").read_text()
    blocks = _blocks(html)
    grid = blocks["grid-data"]
    tix = {tuple(t): i for i, t in enumerate(grid["tasks"])}

    def cell(key):
        arm, domain, task, trial = key
        a = next(a for a in grid["arms"] if a["arm"] == arm)
        return next(c for c in a["cells"] if c[0] == tix[(domain, task)] and c[1] == trial)

    bad = cell(INVALID_ONLY)
    assert bad[2] == 2 and grid["terminations"][bad[4]] == "channel_error" and bad[10] == 1
    data = blocks[f"t-{bad[11]}"]
    assert [a["valid"] for a in data["attempts"]] == [False]
    assert data["attempts"][0]["invalid_cause"] == INVALID_CAUSE
    assert data["attempts"][0]["calls"][0]["error"] == "retries_exhausted"
    replayed = cell(REPLAYED)
    assert replayed[2] == 1 and replayed[10] == 2  # shown: the valid replay; two stored attempts
    data = blocks[f"t-{replayed[11]}"]
    assert data["stored_attempts"] == 2
    assert [(a["attempt"], a["valid"]) for a in data["attempts"]] == [(0, False), (1, True)]
    # the summary counts the trial with no valid attempt, apart from failures
    counts = re.search(r"<td class=\"l\">flaky-gold</td><td>32</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>", html)
    assert counts and int(counts.group(3)) == 1
    assert "have no valid attempt" in html


def test_script_writes_text_only():
    script = (TEMPLATES / "report.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script


def test_templates_are_package_data():
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    patterns = re.search(r"\[tool\.setuptools\.package-data\]\s*agentrig\s*=\s*\[([^\]]*)\]", pyproject).group(1)
    suffixes = {p.strip().strip('"').split("*.")[-1] for p in patterns.split(",") if p.strip()}
    for f in TEMPLATES.iterdir():
        assert f.suffix.lstrip(".") in suffixes, f"{f.name} would be missing from a wheel: add **/*{f.suffix} to package-data"


def test_grid_matches_the_store(demo_run, tmp_path):
    html = write_report([demo_run], tmp_path / "r.html").read_text()
    grid = _grid(html)
    assert [a["label"] for a in grid["arms"]] == ["gold", "flaky-gold", "noop"]
    assert len(grid["tasks"]) == 16
    with Store.open(demo_run / "trials.sqlite", create=False) as store:
        rows = {(r.arm, r.domain, r.task_id, r.trial): r for r in store.verdict_rows(valid=True)}
    seen = 0
    for arm in grid["arms"]:
        for task, trial, status, reward, *_rest, embedded in arm["cells"]:
            domain, task_id = grid["tasks"][task]
            row = rows[(arm["arm"], domain, task_id, trial)]
            assert status == (1 if row.reward >= 1 - 1e-6 else 0)
            assert reward == pytest.approx(row.reward, abs=1e-4)
            assert embedded >= 0  # a small run has every trajectory
            seen += 1
    assert seen == len(rows) == 96
    gold = next(a for a in grid["arms"] if a["arm"] == "gold")
    assert all(c[2] == 1 for c in gold["cells"])
    assert "every trial&#39;s trajectory" in html or "every trial's trajectory" in html


def test_limits_bound_what_is_embedded_and_links_still_open(demo_run, tmp_path):
    limits = Limits(embed_all=0, failed_per_arm=2, invalid_per_arm=0, passed_per_arm=1)
    html = write_report([demo_run], tmp_path / "r.html", limits=limits).read_text()
    blocks = _blocks(html)
    grid = blocks["grid-data"]
    trajectories = {k: v for k, v in blocks.items() if k.startswith("t-")}
    embedded = {(a["arm"], c[0], c[1]): c[11] for a in grid["arms"] for c in a["cells"] if c[11] >= 0}
    assert len(embedded) == len(trajectories) < 96
    # every link in the page (taxonomy examples, forks) opens an embedded trial
    links = re.findall(r'data-open-arm="([^"]+)" data-open-domain="([^"]+)" data-open-task="([^"]+)" data-open-trial="(\d+)"', html)
    assert links
    tix = {tuple(t): i for i, t in enumerate(grid["tasks"])}
    for arm, domain, task, trial in links:
        assert (arm, tix[(domain, task)], int(trial)) in embedded
    # beyond the linked trials: at most the caps (2 failed + 1 passed per arm)
    linked = {(arm, tix[(d, t)], int(k)) for arm, d, t, k in links}
    for arm in ("gold", "flaky-gold", "noop"):
        extra = [k for k in embedded if k[0] == arm and k not in linked]
        assert len(extra) <= 3
    gold_cells = next(a for a in grid["arms"] if a["arm"] == "gold")["cells"]
    assert sum(1 for c in gold_cells if c[11] >= 0) == 1  # gold never fails: one sampled success
    # each embedded block is the trial it claims to be
    for (arm, t, k), block in embedded.items():
        data = trajectories[f"t-{block}"]
        assert (data["arm"], data["task"], data["trial"]) == (arm, grid["tasks"][t][1], k)
        assert data["attempts"] and data["attempts"][0]["messages"]
    assert "agentrig export" in html and "of 96 trajectories" in html


def test_byte_budget_stops_embedding(demo_run, tmp_path):
    html = write_report([demo_run], tmp_path / "r.html", limits=Limits(embed_all=0, byte_budget=1)).read_text()
    assert sum(1 for k in _blocks(html) if k.startswith("t-")) == 1
    assert "size budget was reached" in html


def test_pairs_of_sides():
    sides = [("a", Path("a"), "gold"), ("a", Path("a"), "noop"), ("b", Path("b"), "noop"), ("b", Path("b"), "new")]
    assert pairs(sides) == [(0, 1), (1, 2), (2, 3)]  # b:new against its own run's first arm (b:noop)
    assert pairs(sides[:1]) == []


def test_two_runs_compare_arms_across_runs(demo_run, tmp_path):
    arms = '\n[[arms]]\nname = "noop"\nagent = { kind = "noop" }\n'
    other = make_run(tmp_path / "other", trials=2, arms=arms)
    cfg = json.loads((other / "config.json").read_text())
    assert cfg["experiment"]["run"]["trials"] == 2
    out = write_report([demo_run, other], tmp_path / "both.html")
    html = out.read_text()
    grid = _grid(html)
    labels = [a["label"] for a in grid["arms"]]
    assert labels == ["run#1:gold", "run#1:flaky-gold", "run#1:noop", "run#2:noop"] or \
        labels == [f"{demo_run.name}:gold", f"{demo_run.name}:flaky-gold", f"{demo_run.name}:noop", f"{other.name}:noop"]
    assert 'id="ab"' in html
    # within the first run: flaky-gold and noop against gold; the second run's noop against the first's
    for b, a in ((labels[1], labels[0]), (labels[2], labels[0]), (labels[3], labels[2])):
        assert f"{b} vs {a}" in html
    # the same noop agent on the same tasks: comparable, no difference
    section = html.split(f"<h3>{labels[3]} vs {labels[2]}</h3>")[1].split("<h3>")[0].split("</section>")[0]
    assert "0 task(s) that got worse and 0 that got better" in section
    assert "not a controlled comparison" not in section.lower()


def test_mismatched_runs_are_flagged(demo_run, tmp_path):
    other = make_run(tmp_path / "x", trials=2, arms='\n[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n')
    # a different step limit is a confound, not an intended change of the arms
    exp = (tmp_path / "x" / "exp.toml").read_text().replace("concurrency = 8", "concurrency = 8\nmax_steps = 150")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "exp.toml").write_text(exp)
    from agentrig.commands.run import run_command
    assert run_command(tmp_path / "y" / "exp.toml", run_dir=tmp_path / "y" / "run", as_json=True) == 0
    html = write_report([other, tmp_path / "y" / "run"], tmp_path / "m.html").read_text()
    assert "not a controlled comparison" in html
    assert "max_steps" in html
    assert 'class="banner bad"' in html and 'class="differs"' not in html


def test_report_command_and_errors(demo_run, tmp_path):
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    target = tmp_path / "dir"
    target.mkdir()
    path = report_command([demo_run], out_path=target, console=console)
    assert path == target / REPORT_FILE and path.stat().st_size > 10_000
    assert str(path) in buf.getvalue()
    with pytest.raises(DataError, match="not a run directory"):
        write_report([tmp_path / "nothing-here"])
    with pytest.raises(DataError):
        write_report([])


def test_a_given_analysis_is_used(demo_run, tmp_path):
    from agentrig.analysis.build import analyze_run

    with Store.open(demo_run / "trials.sqlite", create=False) as store:
        config = store.get_meta("config")
        only_gold = analyze_run(store, config, run_dir=str(demo_run), arm="gold", resamples=200)
    html = write_report([demo_run], tmp_path / "r.html", analyses={str(demo_run): only_gold}).read_text()
    summary = html.split('id="summary"')[1].split("</section>")[0]
    assert "gold</td>" in summary and "pass^1" in summary
    rows = re.findall(r'<span class="swatch"[^>]*></span>([^<]+)</td>', summary)
    assert rows == ["gold"]  # the analysis given (one arm), not a fresh one (three)
    # the grid still shows every arm, straight from the store
    assert [a["arm"] for a in _grid(html)["arms"]] == ["gold", "flaky-gold", "noop"]


def test_shape_keeps_zero_values_and_drops_defaults():
    from agentrig.report.embed import CLIP_CHARS, shape
    from agentrig.types import (Message, ModelCall, RewardInfo, ToolCall, Trajectory, TrialKey, TrialRecord,
                                Usage, Verdict)

    rec = TrialRecord(
        key=TrialKey(arm="a", domain="d", task_id="t", trial=0), run_id="r", seed=1, started_at="2026-01-01T00:00:00Z",
        duration_s=0.0,
        trajectory=Trajectory(messages=[
            Message(role="user", content="hi", turn=0, t=0.0, call=0),
            Message(role="assistant", turn=1, t=0.5, tool_calls=[ToolCall(id="c", name="f", arguments=None,
                                                                          arguments_raw="{oops", arguments_error="not JSON")]),
            Message(role="tool", turn=2, content="x" * (CLIP_CHARS + 10), tool_call_id="c", requestor="assistant"),
        ], model_calls=[ModelCall(role="user", purpose="user", turn=0, usage=Usage(prompt_tokens=0, completion_tokens=3))]),
        verdict=Verdict(reward=0.0, termination="user_stop", reward_info=RewardInfo(reward=0.0, components={"DB": 0.0})))
    out = shape(json.loads(rec.model_dump_json()))
    first, second, third = out["messages"]
    assert first["call"] == 0 and first["t"] == 0.0 and first["turn"] == 0
    assert "error" not in first and "tool_calls" not in first and "extra" not in first
    assert second["tool_calls"] == [{"id": "c", "name": "f", "arguments_raw": "{oops", "arguments_error": "not JSON"}]
    assert third["content"].startswith("x" * CLIP_CHARS) and "10 more characters clipped" in third["content"]
    assert out["calls"][0]["usage"] == {"prompt_tokens": 0, "completion_tokens": 3, "reported": True}
    assert out["reward"] == 0.0 and out["reward_info"]["components"] == {"DB": 0.0}


def test_single_trial_ab_shows_pass1_once(tmp_path):
    arms = '\n[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n\n[[arms]]\nname = "noop"\nagent = { kind = "noop" }\n'
    run = make_run(tmp_path / "one", trials=1, num_tasks=4, arms=arms)
    html = write_report([run], tmp_path / "r.html").read_text()
    section = html.split('id="ab"')[1].split("</section>")[0]
    # with one trial per task pass^k is pass^1: one table row, one bar
    assert section.count('<td class="l">pass^1</td>') == 1
    assert re.findall(r'<text class="label"[^>]*>([^<]+)</text>', section) == ["Δpass^1"]


def test_arms_that_differ_as_intended_get_no_banner_only_a_caption(demo_run, tmp_path):
    html = write_report([demo_run], tmp_path / "r.html").read_text()
    section = html.split('id="ab"')[1].split("</section>")[0]
    # what differs is said in a caption, not a banner; nothing is red: only the arms' own settings differ
    assert '<p class="differs">What differs: the arms\' own settings — arm.agent.kind: gold → noop.' in section
    assert 'class="banner bad"' not in html and "not a controlled comparison" not in html.lower()


def test_a_guessed_cross_run_pair_that_would_not_be_controlled_is_left_out(demo_run, tmp_path):
    # a second run with another arm name and other trials per task: the report would guess its
    # pair (the first run's first arm); the trials differ, so it says why it does not compare them
    arms = '\n[[arms]]\nname = "candidate"\nagent = { kind = "noop" }\n'
    other = make_run(tmp_path / "o", trials=1, num_tasks=4, arms=arms, name="second")
    html = write_report([demo_run, other], tmp_path / "r.html").read_text()
    first = demo_run.name
    assert f"second:candidate is not compared with {first}:gold" in html and "run.trials: 2 → 1" in html
    assert f"<h3>second:candidate vs" not in html
    assert 'class="banner bad"' not in html
    # the same arm by name in both runs is compared whatever differs, and flagged red
    arms = '\n[[arms]]\nname = "noop"\nagent = { kind = "noop" }\n'
    same = make_run(tmp_path / "s", trials=1, num_tasks=4, arms=arms, name="third")
    html = write_report([demo_run, same], tmp_path / "s.html").read_text()
    assert f"<h3>third:noop vs {first}:noop</h3>" in html
    assert '<div class="banner bad">Not a controlled comparison: besides the arms\' own settings, the sides ' \
           'differ in run.trials: 2 → 1.' in html
