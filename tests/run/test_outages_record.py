"""What a person sees of an outage: the progress line, the summary line, the store's record."""

from __future__ import annotations

from rich.console import Console

from agentrig.channel.breaker import Outage
from agentrig.run import outages
from agentrig.run.executor import Stats
from agentrig.run.progress import ProgressView
from agentrig.store.store import Store

DOWN = Outage(endpoint="http://127.0.0.1:8000/v1", started_at="2026-12-03T13:42:10+00:00", duration_s=31.4,
              calls_held=8, probes=5, last_fault="connection: connection refused at 127.0.0.1:8000")


def render(view: ProgressView) -> str:
    console = Console(record=True, width=160)
    console.print(view)
    return console.export_text()


def test_the_progress_display_shows_an_ongoing_outage_and_nothing_otherwise():
    stats = Stats(planned=10)
    assert "endpoint down" not in render(ProgressView(stats, "exp"))
    stats.outage_now = lambda: DOWN
    text = render(ProgressView(stats, "exp"))
    assert "endpoint down for 31 s (http://127.0.0.1:8000/v1): 8 call(s) held" in text
    assert "resumes by itself" in text


def test_the_store_keeps_every_outage_of_every_session(tmp_path):
    first = DOWN.model_copy(update={"ended_at": "2026-12-03T13:42:41+00:00", "resumed": True})
    second = DOWN.model_copy(update={"started_at": "2026-12-03T15:00:00+00:00",
                                     "ended_at": "2026-12-03T15:10:00+00:00", "resumed": False})
    with Store.open(tmp_path / "trials.sqlite") as store:
        outages.record(store, [])  # no outage: nothing written
        assert store.get_meta(outages.META) is None
        outages.record(store, [first])
    with Store.open(tmp_path / "trials.sqlite", create=False) as store:  # a later session
        outages.record(store, [second])
        kept = outages.stored(store)
    assert kept == [first, second]
    assert outages.describe(first) == (
        "endpoint http://127.0.0.1:8000/v1 down 13:42:10–13:42:41 UTC (31 s), 8 call(s) held, 5 probe(s): "
        "answered again; the held calls resumed")
    assert outages.describe(second).endswith("outage_wait_s ran out: the run stopped")
