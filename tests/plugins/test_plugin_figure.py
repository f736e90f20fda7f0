"""A plug-in adds a figure (issue 34's acceptance: "adding a figure is one module"): a plug-in
defined here registers its figure with one line — ``agentrig.plugins.register(kind, factory,
figures=[...])`` — and a real stored run (``agentrig run`` of the reference agents) shows it in
``agentrig analyze`` (text and ``--json``) and in the report, with nothing else changed.
"""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from agentrig import plugins
from agentrig.analysis import figure as protocol
from agentrig.commands.analyze import analyze_command
from agentrig.report import write_report
from agentrig.types import Strict

from tests.report.runs import make_run


# ---- the plug-in and its figure: one module ---------------------------------------------------------

class Messages(Strict):
    trials: int
    mean: float


class MessagesPerTrial(protocol.Figure):
    """How many messages a valid trial of each arm holds, on average (from the verdict rows)."""

    id = "messages_per_trial"
    result = Messages

    def compute(self, arm):
        valid = [r.n_messages for r in arm.rows if r.valid]
        return Messages(trials=len(valid), mean=sum(valid) / len(valid)) if valid else None

    def view(self, results):
        return protocol.FigureView(id=self.id, title="messages per valid trial", columns=["arm", "trials", "mean"],
                                   rows=[[a, str(r.trials), f"{r.mean:.2f} msgs"] for a, r in results.items()],
                                   bars=[protocol.Bar(name=a, value=r.mean) for a, r in results.items()])


def counting_plugin(settings, ctx):  # the plug-in's factory (this test plays no trial with it)
    raise AssertionError("not played here")


# ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("plugin-figure"), trials=2, num_tasks=4)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(plugins, "REGISTRY", dict(plugins.REGISTRY))
    monkeypatch.setattr(protocol, "PLUGIN_FIGURES", list(protocol.PLUGIN_FIGURES))
    plugins.register("counting", counting_plugin, figures=[f"{__name__}:MessagesPerTrial"])  # the one line
    yield
    monkeypatch.undo()
    protocol._LOADED = None  # the registry as it was for other tests


def _analyze(run: Path, as_json: bool = False) -> str:
    buf = io.StringIO()
    assert analyze_command(run, arm=None, as_json=as_json, out=Console(file=buf, width=160, color_system=None)) == 0
    return buf.getvalue()


def _expected(run: Path) -> dict[str, tuple[int, float]]:
    """Per arm from the store, by hand: (valid trials, mean messages)."""
    from agentrig.store.store import Store

    out = {}
    with Store.open(run / "trials.sqlite", create=False) as store:
        for arm in ("gold", "flaky-gold", "noop"):
            valid = [r.n_messages for r in store.verdict_rows(arm=arm) if r.valid and r.trial < 2]
            out[arm] = (len(valid), sum(valid) / len(valid))
    return out


class _Sections(HTMLParser):
    """The page's sections in order: id → the text inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.text: dict[str, str] = {}
        self._at: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            sid = dict(attrs).get("id") or ""
            self.order.append(sid)
            self.text[sid] = ""
            self._at.append(sid)

    def handle_endtag(self, tag):
        if tag == "section" and self._at:
            self._at.pop()

    def handle_data(self, data):
        if self._at:
            self.text[self._at[-1]] += data


def test_a_plugin_adds_a_figure_to_analyze_and_the_report(run, registered, tmp_path):
    expected = _expected(run)
    doc = json.loads(_analyze(run, as_json=True))
    for arm, (trials, mean) in expected.items():
        assert doc["arms"][arm]["figures"]["messages_per_trial"] == {"trials": trials, "mean": pytest.approx(mean)}
        assert "usage" in doc["arms"][arm] and "messages_per_trial" not in doc["arms"][arm]  # the keys as before

    text = _analyze(run)
    assert "messages per valid trial" in text
    for arm, (trials, mean) in expected.items():
        assert re.search(rf"{re.escape(arm)}\s.*\s{trials}\s.*{mean:.2f} msgs", text), arm
    # the default analyze slot: after the terminations, before usage, reruns and retries
    assert text.index("terminations (valid trials)") < text.index("messages per valid trial") < \
        text.index("reruns (rerun i = trial i of every task)")

    page = _Sections()
    page.feed(write_report([run], tmp_path / "r.html").read_text(encoding="utf-8"))
    section = "figure-messages_per_trial"
    assert section in page.order
    # the default report slot: after the A/B differences, before the usage section
    assert page.order.index("ab") < page.order.index(section) < page.order.index("usage")
    body = page.text[section]
    assert "Messages per valid trial" in body
    for arm, (trials, mean) in expected.items():
        assert f"{mean:.2f} msgs" in body and arm in body


def test_without_the_plugin_there_is_no_such_figure(run, tmp_path):
    assert "messages per valid trial" not in _analyze(run)
    assert "messages_per_trial" not in json.loads(_analyze(run, as_json=True))["arms"]["gold"]["figures"]
    assert 'id="figure-messages_per_trial"' not in write_report([run], tmp_path / "r.html").read_text()
