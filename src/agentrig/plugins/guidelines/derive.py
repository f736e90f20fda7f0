"""``agentrig guidelines derive RUN --out FILE``: guidelines from a run's inconsistent decisions.

1. Evidence (``guidelines_inputs``): the arm's unstable steps (top ``top`` per trial at or above
   ``threshold``) and the forks of its reruns; none at all is an error (nothing to learn from).
2. The analyst model (role ``analyst``: ``[roles.analyst]`` over ``[channel]`` of the run's
   experiment, or of ``--config FILE``) reads the evidence in batches of ``BATCH`` items, one call
   per batch, and answers with JSON guidelines (``ANALYST_SYSTEM`` — our own prompt — forbids
   task-specific values). A reply that is not the asked JSON gets one corrective follow-up. When
   NO batch got a usable reply, nothing was derived for a reason other than the evidence: a
   DataError (exit 1) says so and no file is written — distinct from a usable reply with no
   guideline (exit 0, an empty file) and from "no evidence" (its own error).
3. The value-leak check: a guideline whose text, trigger or rationale repeats a literal value of
   the source tasks' data (``Benchmark.task_values``: ids, names, amounts, paths) is moved to
   ``rejected`` with the values it repeats. Matching is case-insensitive on whole tokens.
4. The file (``plugins.guidelines.filemodel``) with its provenance: run id, the run directory
   (resolved, absolute), arm, split, source tasks.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrig.errors import ConfigError, DataError
from agentrig.plugins.guidelines.filemodel import (Analyst, Guideline, GuidelinesFile, Inputs, Provenance,
                                                   Rejected)

from agentrig.plugins.guidelines.inputs import Evidence, fork_evidence, unstable_evidence

BATCH = 24  # evidence items per analyst call
MAX_GUIDELINES = 12  # asked per call

ANALYST_SYSTEM = """You review how an AI agent behaved on repeated attempts of the same tasks. \
Where its decisions were unstable (resampling the same moment gave different actions) or where \
reruns parted ways (one attempt succeeded, another failed from the same situation), write short \
guidelines that would make the agent choose the better action every time.

Rules:
- A guideline is general: it states a rule of conduct that holds for any task of this kind. \
Never copy task-specific values into it: no ids, names, e-mail addresses, amounts, dates, \
file paths, order or reservation numbers, or quoted strings from the evidence. Write "the \
user's id", "the requested amount", "the target file" instead.
- Say what to do, when it applies (the trigger) and why (the rationale, from the evidence).
- category: "strategy" (how to approach a decision), "recovery" (what to do after an error or \
a surprise) or "constraint" (what must or must not be done).
- Prefer few strong guidelines over many weak ones; merge duplicates.
- sources: the evidence items each guideline comes from, by their task, trial and step.

Answer with one JSON object and nothing else:
{"guidelines": [{"text": "...", "rationale": "...", "category": "strategy", "trigger": "...",
  "sources": [{"task": "...", "trial": 0, "step": 0, "kind": "unstable_step"}]}]}"""

FIX_REPLY = ("Your reply was not the JSON object asked for. Answer again with only "
             '{"guidelines": [...]} as described, no other text.')


def evidence_prompt(items: list[Evidence], limit: int = MAX_GUIDELINES) -> str:
    parts = [f"Evidence ({len(items)} item(s)). Write at most {limit} guidelines.", ""]
    for i, e in enumerate(items, 1):
        what = "unstable decision" if e.kind == "unstable_step" else "rerun fork"
        parts.append(f"### item {i}: {what} · task {e.task} · trial {e.trial} · step {e.step} · kind {e.kind}")
        parts.append(e.text)
        parts.append("")
    return "\n".join(parts)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_reply(content: str | None) -> list[dict] | None:
    """The ``guidelines`` list of a reply (fenced or bare JSON), or None when there is none."""
    if not content:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(content)] + [content]
    for text in candidates:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            data = json.loads(text[start:end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("guidelines"), list):
            return [g for g in data["guidelines"] if isinstance(g, dict)]
    return None


def leaked_values(g: Guideline | dict, values: set[str]) -> list[str]:
    """The task values a guideline repeats (case-insensitive, as whole tokens)."""
    if isinstance(g, Guideline):
        text = " ".join((g.text, g.trigger, g.rationale))
    else:
        text = " ".join(str(g.get(k) or "") for k in ("text", "trigger", "rationale"))
    low = text.lower()
    found = []
    for v in values:
        lv = v.lower()
        if lv in low and re.search(r"(?<![\w])" + re.escape(lv) + r"(?![\w])", low):
            found.append(v)
    return sorted(found)


def _channel_config(config: dict, channel_file: Path | None) -> Any:
    from agentrig.config import ChannelConfig, format_validation_error, load_channel_config

    if channel_file is not None:
        return load_channel_config(channel_file)
    exp = config.get("experiment") or {}
    part = {k: exp[k] for k in ("channel", "roles", "prices") if exp.get(k)}
    try:
        return ChannelConfig.model_validate(part)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, "the run's stored experiment") +
                          "\n  fix: give the channel with --config EXPERIMENT.toml") from None


def _pick_arm(config: dict, arm: str | None) -> str:
    arms = [a.get("name") for a in (config.get("experiment") or {}).get("arms", [])]
    if arm is None:
        if len(arms) != 1:
            raise ConfigError(f"the run has {len(arms)} arms ({', '.join(map(str, arms))}); choose one with --arm")
        return str(arms[0])
    if arm not in arms:
        raise ConfigError(f"--arm {arm!r}: no such arm in the run; its arms: {', '.join(map(str, arms))}")
    return arm


UNUSABLE = "gave no usable reply after 2 calls"


def _split(config: dict, wanted: str | None) -> str | None:
    """The split the run played (checked against ``--from-split``)."""
    splits = {d: s for d, s in (config.get("splits") or {}).items()}
    played = sorted({s for s in splits.values() if s})
    if wanted is None:
        return played[0] if len(played) == 1 and all(splits.values()) else None
    wrong = {d: s for d, s in splits.items() if s != wanted}
    if not splits or wrong:
        shown = ", ".join(f"{d}: {s or 'no split'}" for d, s in (wrong or {"(run)": None}).items())
        raise ConfigError(f"--from-split {wanted}: the run did not play that split ({shown}).\n"
                          f"  fix: derive from a run whose [benchmark] selects split = \"{wanted}\", or drop --from-split")
    return wanted


async def _ask(channel: Any, items: list[Evidence], run_id: str | None) -> tuple[list[dict], int, int, int, list[str]]:
    from agentrig.types import CallContext

    ctx = CallContext(run=run_id, role="analyst")
    messages = [{"role": "system", "content": ANALYST_SYSTEM}, {"role": "user", "content": evidence_prompt(items)}]
    calls = prompt_tokens = completion_tokens = 0
    notes: list[str] = []
    for attempt in range(2):
        done = await channel.complete("analyst", messages, None, ctx)
        calls += 1
        prompt_tokens += done.usage.prompt_tokens
        completion_tokens += done.usage.completion_tokens
        found = parse_reply(done.message.content)
        if found is not None:
            return found, calls, prompt_tokens, completion_tokens, notes
        messages = messages + [{"role": "assistant", "content": done.message.content or ""},
                               {"role": "user", "content": FIX_REPLY}]
    notes.append(f"a batch of {len(items)} evidence item(s) {UNUSABLE}")
    return [], calls, prompt_tokens, completion_tokens, notes


async def _derive(cfg: Any, batches: list[list[Evidence]], run_id: str | None) -> tuple[list[dict], Analyst, list[str]]:
    from agentrig.channel.client import Channel

    channel = Channel(cfg, run_id=run_id)
    analyst = Analyst(model=channel.role("analyst").model)
    found: list[dict] = []
    notes: list[str] = []
    try:
        for batch in batches:
            got, calls, pt, ct, why = await _ask(channel, batch, run_id)
            found += got
            notes += why
            analyst.calls += calls
            analyst.prompt_tokens += pt
            analyst.completion_tokens += ct
    finally:
        await channel.aclose()
    return found, analyst, notes


def _admit(found: list[dict], values: set[str], known_tasks: set[str]) -> tuple[list[Guideline], list[Rejected], list[str]]:
    admitted: list[Guideline] = []
    rejected: list[Rejected] = []
    notes: list[str] = []
    seen_texts: set[str] = set()
    for raw in found:
        raw = {k: raw.get(k) for k in ("text", "rationale", "category", "trigger", "sources") if raw.get(k) is not None}
        if isinstance(raw.get("sources"), list):
            raw["sources"] = [s for s in raw["sources"] if isinstance(s, dict) and s.get("task") in known_tasks]
        leaks = leaked_values(raw, values)
        if leaks:
            rejected.append(Rejected(guideline=raw, values=leaks))
            continue
        try:
            g = Guideline.model_validate({"id": f"g{len(admitted) + 1}", **raw})
        except ValidationError as exc:
            notes.append(f"a guideline was dropped as malformed ({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})")
            continue
        key = " ".join(g.text.lower().split())
        if key in seen_texts:
            continue
        seen_texts.add(key)
        admitted.append(g)
    return admitted, rejected, notes


def derive(run_dir: Path, out: Path, *, arm: str | None = None, from_split: str | None = None, top: int = 3,
           threshold: float = 0.2, channel_file: Path | None = None) -> GuidelinesFile:
    from agentrig.benchmark import benchmark_of_config
    from agentrig.store.rundir import open_run_dir

    if top < 1:
        raise ConfigError(f"--top {top}: give a whole number >= 1 (unstable steps per trial)")
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"--threshold {threshold}: give an instability between 0 and 1")
    store, config = open_run_dir(run_dir)
    try:
        arm = _pick_arm(config, arm)
        split = _split(config, from_split)
        bench = benchmark_of_config(config)
        unstable, has_table = unstable_evidence(run_dir, arm, top=top, threshold=threshold)
        forks = fork_evidence(store.records(arm=arm, valid=True), bench.action_sequence)
    finally:
        store.close()
    notes = []
    if not has_table:
        notes.append("no instability table in the run (run `agentrig instability RUN` first): forks of reruns only")
    evidence = sorted(unstable, key=lambda e: -e.weight) + sorted(forks, key=lambda e: -e.weight)
    if not evidence:
        raise DataError(f"{run_dir}: arm {arm!r} has nothing to derive guidelines from: no unstable step at or above "
                        f"{threshold:g} and no task with mixed outcomes over its reruns.\n"
                        "  fix: run more trials per task, resample the steps (`agentrig instability RUN`), "
                        "or lower --threshold")
    tasks = sorted({e.task for e in evidence})
    every = bench.task_values(config)
    values = {v for t in tasks for v in every.get(t, [])}
    cfg = _channel_config(config, channel_file)
    if not cfg.resolve("analyst").model:
        raise ConfigError("the analyst role has no model.\n  fix: set `model` in [roles.analyst] or [channel] "
                          "of the run's experiment, or pass --config FILE with one")
    batches = [evidence[i:i + BATCH] for i in range(0, len(evidence), BATCH)]
    found, analyst, why = asyncio.run(_derive(cfg, batches, config.get("run_id")))
    unusable = sum(1 for n in why if n.endswith(UNUSABLE))
    if unusable == len(batches):  # nothing came back in the form asked for: not "no guideline to give"
        raise DataError(f"the analyst ({analyst.model}) gave no usable reply: {unusable} of {len(batches)} batch(es) of "
                        f"evidence got no JSON object with a 'guidelines' list after 2 calls each "
                        f"({analyst.calls} call(s)); {out} was not written.\n"
                        "  fix: use an analyst model that follows the JSON reply format (role `analyst`, "
                        "--config FILE), then run the command again")
    admitted, rejected, dropped = _admit(found, values, set(tasks))
    gf = GuidelinesFile(
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        provenance=Provenance(run_id=config.get("run_id"), run_dir=str(Path(run_dir).resolve()),
                              benchmark=bench.kind, arm=arm, split=split, source_tasks=tasks,
                              inputs=Inputs(unstable_steps=len(unstable), forks=len(forks), notes=notes + why + dropped),
                              analyst=analyst),
        guidelines=admitted, rejected=rejected)
    from agentrig.plugins.guidelines.filemodel import write

    write(gf, out)
    return gf
