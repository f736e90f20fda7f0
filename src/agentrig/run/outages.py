"""A run's record of endpoint outages (channel/breaker.py): what the progress display shows while
one lasts, what the store keeps and what the summary prints.

The store's meta ``outages`` holds ``{"outages": [Outage, ...]}``: every outage of every session
of the run, in order (``started_at``, ``ended_at``, ``duration_s``, ``calls_held``, ``probes``,
``resumed``: True when the endpoint answered again, False when ``outage_wait_s`` ran out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrig.channel.breaker import Breaker, Outage

if TYPE_CHECKING:
    from agentrig.channel.client import Channel

    from agentrig.store.store import Store

META = "outages"


def breakers(channels: dict[str, Channel]) -> list[Breaker]:
    """The breakers of every endpoint the channels opened (shared endpoints counted once)."""
    out: dict[int, Breaker] = {}
    for ch in list(channels.values()):
        for ep in list(ch._endpoints.values()):
            out.setdefault(id(ep.breaker), ep.breaker)
    return list(out.values())


def ongoing(channels: dict[str, Channel]) -> Outage | None:
    """The outage going on now (the longest, if several endpoints are down). Safe to call from
    the progress display's thread: it only reads."""
    try:
        now = [o for b in breakers(channels) if (o := b.current()) is not None]
    except RuntimeError:  # an endpoint was added while we looked; the next refresh will see it
        return None
    return max(now, key=lambda o: o.duration_s) if now else None


def session_outages(channels: dict[str, Channel]) -> list[Outage]:
    """Every outage of this session, finished or not, oldest first."""
    found: list[Outage] = []
    for b in breakers(channels):
        found.extend(b.history)
        current = b.current()
        if current is not None:
            found.append(current)
    return sorted(found, key=lambda o: o.started_at)


def record(store: Store, outages: list[Outage]) -> None:
    """Append this session's outages to the run's meta (nothing written when there were none)."""
    if not outages:
        return
    old = (store.get_meta(META) or {}).get("outages", [])
    store.set_meta(META, {"outages": [*old, *(o.model_dump(mode="json") for o in outages)]})


def record_session(store: Store, channels: dict[str, Channel]) -> list[Outage]:
    """This session's outages (``session_outages``), recorded in the store (``record``)."""
    found = session_outages(channels)
    record(store, found)
    return found


def stored(store: Store) -> list[Outage]:
    return [Outage.model_validate(o) for o in (store.get_meta(META) or {}).get("outages", [])]


def describe(o: Outage) -> str:
    """One line for a person: where, when, how long, how many calls waited, how it ended."""
    end = o.ended_at[11:19] if o.ended_at else "now"
    how = {True: "answered again; the held calls resumed", False: "outage_wait_s ran out: the run stopped",
           None: "still down"}[o.resumed]
    return (f"endpoint {o.endpoint} down {o.started_at[11:19]}–{end} UTC ({o.duration_s:.0f} s), "
            f"{o.calls_held} call(s) held, {o.probes} probe(s): {how}")


def progress_text(o: Outage) -> str:
    return (f"endpoint down for {o.duration_s:.0f} s ({o.endpoint}): {o.calls_held} call(s) held, "
            f"probing; the run resumes by itself when it answers")


def as_json(outages: list[Outage]) -> list[dict[str, Any]]:
    return [o.model_dump(mode="json") for o in outages]
