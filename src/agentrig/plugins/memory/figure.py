"""The memory plug-in's figure (the figure protocol, ``analysis/figure.py``; the plug-in registers
it in ``__init__.py``): what the proactive memory plug-in did in an arm, what it cost, and whether
the arm beat the baseline. ``agentrig analyze`` prints it after the failure classes, ``--json`` holds
it as ``arms.<arm>.memory``, the report draws it after the A/B differences (drawer ``memory`` in
``report/drawers.py``) — for arms with a memory plug-in only.

Read from the arm's VALID trials (the same trials every other figure counts):

- a *trigger* is one ``PluginEvent`` with ``plugin = "memory"`` and ``kind = "memory.trigger"``
  (the plug-in writes one per trigger: edit phase, decide phase, the injected text);
- an *injection* is a trigger whose ``injected`` text is non-empty (a reminder, or the bank shown
  by ``full_bank`` / ``retrieval``). ``injection_rate`` = injections / triggers. ``full_bank`` and
  ``retrieval`` also show memory at agent steps between triggers (``interval`` > 1: one
  ``memory.show`` event each, counted as ``shown``); ``injections_per_step`` = (injections +
  shown) / agent steps (the trials' ``agent_steps`` counters) — the share of agent calls that got
  memory text;
- ``decisions`` counts the decide phase's outcomes (``inject`` / ``silent``; ``none`` for modes
  without that phase) and ``parsed`` what its answers were (``reminder``, ``no_intervention``,
  ``empty``, ``conflicting``, ``unparseable`` — the last three count as silence);
- memory calls are the trajectory's model calls with role ``memory`` (purposes ``memory.edit``
  and ``memory.decide``); the agent's own are those with role ``agent``. Tokens are prompt +
  completion of answered calls, latency their ``latency_s`` (retry waits included). Each
  ``Overhead`` gives the memory figure per trial (mean over valid trials), the agent's per trial,
  their ``ratio`` (total memory / total agent, i.e. the ratio of the two means) and the memory
  figure per trigger; ``latency_share`` is memory latency over the trials' wall-clock durations;
- a memory call *failure* is a memory model call with an ``error`` (retries exhausted or
  fatal): the trial went on without that phase. ``trigger_errors`` counts triggers whose edit or
  decide phase recorded an error (a failed call, or an answer the plug-in could not use).

The A/B (``ab``) is ``agentrig compare RUN:BASELINE RUN:ARM`` computed in place, with the same
functions and defaults (``analysis.compare.build``: paired bootstrap over tasks, 4,000 draws,
seed 0, McNemar, the controlled-variable check), over the planned trials of both arms. The
baseline is the first arm, in the experiment's order, with no memory plug-in
(``baseline_arm``); a run without one gets no A/B (``ab_note`` says why).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.text import Text

from agentrig.analysis import compare as cmp
from agentrig.analysis.config_diff import SideConfig, differences
from agentrig.analysis.figure import ArmInputs, Figure, RunInputs
from agentrig.tables import Stack
from agentrig.types import Strict

PLUGIN = "memory"
TRIGGER = "memory.trigger"
SHOW = "memory.show"
ROLE = "memory"


class Overhead(Strict):
    memory_per_trial: float | None = None
    agent_per_trial: float | None = None
    ratio: float | None = None  # total memory / total agent (None when the agent's total is 0)
    per_trigger: float | None = None


class MemoryFigures(Strict):
    arm: str
    modes: list[str] = []  # the mode of each memory plug-in of the arm (as configured)
    trials: int = 0  # valid trials counted
    agent_steps: int = 0
    triggers: int = 0
    injections: int = 0
    shown: int = 0  # memory.show events: memory text at a step between triggers (full_bank, retrieval)
    triggers_per_trial: float | None = None
    injection_rate: float | None = None  # injections / triggers
    injections_per_step: float | None = None  # (injections + shown) / agent steps
    decisions: dict[str, int] = {}  # decide phase: inject / silent / none (the mode has no decide phase)
    parsed: dict[str, int] = {}  # decide answers: reminder / no_intervention / empty / conflicting / unparseable
    edit_tool_calls: int = 0  # bank tool calls made by the edit phases
    edit_rejected: int = 0  # of those, calls the bank refused (unknown tool or id, bad arguments)
    edit_tool_calls_per_trigger: float | None = None
    bank_entries_mean: float | None = None  # knowledge + procedural after a trial's last trigger
    calls: int = 0  # memory model calls
    failed_calls: int = 0
    failed_trials: int = 0  # valid trials with at least one failed memory call
    failure_causes: dict[str, int] = {}
    trigger_errors: int = 0
    tokens: Overhead = Overhead()
    latency_s: Overhead = Overhead()
    latency_share: float | None = None  # memory latency / trial durations
    baseline: str | None = None
    ab: cmp.Comparison | None = None
    ab_note: str | None = None


def memory_modes(plugins: Iterable[dict[str, Any]]) -> list[str]:
    """The modes of an arm's memory plug-ins (``selective`` when a plug-in leaves it unset)."""
    return [str(p.get("mode") or "selective") for p in plugins if p.get("kind") == PLUGIN]


def baseline_arm(arms: list[str], plugins: dict[str, list[dict[str, Any]]]) -> str | None:
    """The first arm (in the experiment's order) without a memory plug-in, or None."""
    return next((a for a in arms if not memory_modes(plugins.get(a) or [])), None)


GARBLED = ("empty", "conflicting", "unparseable")  # decide answers taken as silence


def decisions_text(m: MemoryFigures) -> str:
    """``inject 3, silent 5 (unparseable 1)``: the decisions and the answers taken as silence."""
    text = ", ".join(f"{k} {v}" for k, v in m.decisions.items())
    odd = [f"{k} {m.parsed[k]}" for k in GARBLED if m.parsed.get(k)]
    return text + (f" ({', '.join(odd)})" if odd else "")


def injected_text(m: MemoryFigures) -> str:
    return f"{m.injections}/{m.triggers}" + (f" (+{m.shown} shown between triggers)" if m.shown else "")


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


class MemoryCollector:
    """Sums over an arm's valid records; ``add`` each record once, then ``figures``."""

    def __init__(self) -> None:
        self.trials = self.steps = self.triggers = self.injections = self.shown = 0
        self.edit_calls = self.edit_rejected = self.trigger_errors = 0
        self.calls = self.failed = self.failed_trials = 0
        self.mem_tokens = self.agent_tokens = 0
        self.mem_latency = self.agent_latency = self.duration = 0.0
        self.banks: list[int] = []
        self.decisions: Counter[str] = Counter()
        self.parsed: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()

    def add(self, rec: Any) -> None:
        traj = rec.trajectory
        self.trials += 1
        self.steps += traj.counters.get("agent_steps", 0)
        self.duration += rec.duration_s
        bank = None
        for e in traj.events:
            if e.plugin != PLUGIN:
                continue
            data = e.data
            if e.kind == SHOW:
                self.shown += bool(data.get("injected"))
                continue
            if e.kind != TRIGGER:
                continue
            self.triggers += 1
            if data.get("injected"):
                self.injections += 1
            edit, decide = data.get("edit"), data.get("decide")
            self.decisions[str(decide.get("decision") or "none") if isinstance(decide, dict) else "none"] += 1
            if isinstance(decide, dict) and decide.get("parsed"):
                self.parsed[str(decide["parsed"])] += 1
            if isinstance(edit, dict):
                calls = edit.get("tool_calls") or []
                self.edit_calls += len(calls)
                self.edit_rejected += sum(1 for c in calls if isinstance(c, dict) and c.get("ok") is False)
                size = edit.get("bank_size")
                if isinstance(size, dict):
                    bank = int(size.get("knowledge") or 0) + int(size.get("procedural") or 0)
            if any(isinstance(p, dict) and p.get("error") for p in (edit, decide)):
                self.trigger_errors += 1
        if bank is not None:
            self.banks.append(bank)
        failed_here = False
        for c in traj.model_calls:
            if c.role == ROLE:
                self.calls += 1
                if c.error is not None:
                    self.failed += 1
                    self.causes[c.error] += 1
                    failed_here = True
                    continue
                self.mem_tokens += c.usage.prompt_tokens + c.usage.completion_tokens
                self.mem_latency += c.latency_s
            elif c.role == "agent" and c.error is None:
                self.agent_tokens += c.usage.prompt_tokens + c.usage.completion_tokens
                self.agent_latency += c.latency_s
        self.failed_trials += failed_here

    def figures(self, arm: str, modes: list[str]) -> MemoryFigures:
        n = self.trials

        def overhead(mem: float, agent: float) -> Overhead:
            return Overhead(memory_per_trial=_div(mem, n), agent_per_trial=_div(agent, n), ratio=_div(mem, agent),
                            per_trigger=_div(mem, self.triggers))

        return MemoryFigures(
            arm=arm, modes=modes, trials=n, agent_steps=self.steps, triggers=self.triggers,
            injections=self.injections, triggers_per_trial=_div(self.triggers, n),
            shown=self.shown, injection_rate=_div(self.injections, self.triggers),
            injections_per_step=_div(self.injections + self.shown, self.steps),
            decisions=dict(self.decisions.most_common()), parsed=dict(self.parsed.most_common()),
            edit_tool_calls=self.edit_calls, edit_rejected=self.edit_rejected,
            edit_tool_calls_per_trigger=_div(self.edit_calls, self.triggers),
            bank_entries_mean=_div(sum(self.banks), len(self.banks)), calls=self.calls, failed_calls=self.failed,
            failed_trials=self.failed_trials, failure_causes=dict(self.causes.most_common()),
            trigger_errors=self.trigger_errors, tokens=overhead(self.mem_tokens, self.agent_tokens),
            latency_s=overhead(self.mem_latency, self.agent_latency),
            latency_share=_div(self.mem_latency, self.duration))


def memory_figures(arm: str, records: Iterable[Any], modes: list[str] | None = None) -> MemoryFigures:
    """The figures of one arm from its valid ``TrialRecord``s."""
    col = MemoryCollector()
    for rec in records:
        col.add(rec)
    return col.figures(arm, list(modes or []))


# ------------------------------------------------------------------------------------------ A/B


def _side(run_dir: str, arm: str, config: dict, trials: int, counts: cmp.Counts) -> cmp.Side:
    return cmp.Side(label=f"{run_dir or 'run'}:{arm}", run_dir=run_dir, arm=arm, run_id=config.get("run_id"),
                    trials=trials, tasks=len(counts), valid_trials=sum(n for n, _ in counts.values()))


def against_baseline(store: Any, config: dict, *, run_dir: str, baseline: str, arm: str, n: int,
                     planned: set[tuple[str, str]], cache: dict[str, cmp.Counts] | None = None
                     ) -> tuple[cmp.Comparison | None, str | None]:
    """``compare RUN:baseline RUN:arm`` over the planned trials: (comparison, or None and why).
    ``cache`` keeps each arm's per-task counts between calls."""
    cache = {} if cache is None else cache
    counts = []
    for name in (baseline, arm):
        if name not in cache:
            rows = store.verdict_rows(arm=name, valid=True)
            cache[name] = cmp.task_counts((r.domain, r.task_id, r.reward) for r in rows
                                          if (r.domain, r.task_id) in planned and 0 <= r.trial < n)
        counts.append(cache[name])
    if not set(counts[0]) & set(counts[1]):
        return None, f"no task has a valid trial on both {baseline} and {arm}"
    comparability = store.get_meta("comparability")
    diffs = differences(SideConfig(f"{run_dir}:{baseline}", baseline, config, comparability),
                        SideConfig(f"{run_dir}:{arm}", arm, config, comparability))
    a = _side(run_dir, baseline, config, n, counts[0])
    b = _side(run_dir, arm, config, n, counts[1])
    return cmp.build(a, b, counts[0], counts[1], diffs, k=n), None


def attach_ab(store: Any, config: dict, figures: list[MemoryFigures], *, arms: list[str],
              plugins: dict[str, list[dict[str, Any]]], tasks: dict[str, list[str]], n: int, run_dir: str) -> None:
    """Fill ``baseline`` / ``ab`` / ``ab_note`` of each memory arm's figures."""
    base = baseline_arm(arms, plugins)
    planned = {(d, t) for d, ids in tasks.items() for t in ids}
    cache: dict[str, cmp.Counts] = {}
    for m in figures:
        m.baseline = base
        if base is None:
            m.ab_note = "no arm without a memory plug-in to compare against (add a baseline arm)"
            continue
        m.ab, m.ab_note = against_baseline(store, config, run_dir=run_dir, baseline=base, arm=m.arm, n=n,
                                           planned=planned, cache=cache)


# ---- the figure ---------------------------------------------------------------------------------


class MemoryFigure(Figure):
    id = "memory"
    result = MemoryFigures
    json_keys = ("memory",)
    analyze_slot = "details"
    report_slot = "after_ab"

    def _modes(self, arm: ArmInputs) -> list[str]:
        plan = arm.run.plan
        return memory_modes((plan.plugins.get(arm.arm) or []) if plan is not None else [])

    def collector(self, arm: ArmInputs) -> MemoryCollector | None:
        return MemoryCollector() if self._modes(arm) else None

    def compute(self, arm: ArmInputs) -> MemoryFigures | None:
        col = arm.collected.get(self.id)
        return None if col is None else col.figures(arm.arm, self._modes(arm))

    def finish(self, results: dict[str, MemoryFigures], run: RunInputs) -> dict[str, MemoryFigures]:
        plan = run.plan
        attach_ab(run.store, run.config, list(results.values()), arms=plan.arms, plugins=plan.plugins,
                  tasks=plan.tasks, n=plan.n, run_dir=run.run_dir)
        return results

    def print(self, results: dict[str, MemoryFigures], out: Any, analysis: Any) -> bool:
        from agentrig.analysis.text import ci, f, pct, table, times

        mem = list(results.items())
        if not mem:
            return True
        t = table("memory plug-in: what it did (valid trials; rate = injected / triggers)", ("arm", "left"),
                  ("mode", "left"), ("trig./trial", "right"), ("injected", "right"), ("rate", "right"),
                  ("/step", "right"), ("decisions", "wrap"), ("edits/trig.", "right"), ("bank", "right"))
        for a, m in mem:
            t.add_row(escape(a), escape(", ".join(m.modes)), f(m.triggers_per_trial, 1), escape(injected_text(m)),
                      pct(m.injection_rate), f(m.injections_per_step, 2), escape(decisions_text(m)),
                      f(m.edit_tool_calls_per_trigger, 2), f(m.bank_entries_mean, 1))
        t.print(out)
        t = table("memory plug-in: overhead per trial (memory calls against the agent's own)", ("arm", "left"),
                  (Stack("tokens", "memory"), "right"), (Stack("tokens", "agent"), "right"),
                  (Stack("tokens", "×"), "right"), (Stack("seconds", "memory"), "right"),
                  (Stack("seconds", "agent"), "right"), (Stack("seconds", "×"), "right"),
                  (Stack("share", "of trial"), "right"), ("failed calls", "wrap"))
        for a, m in mem:
            tok, lat = m.tokens, m.latency_s
            t.add_row(escape(a), f(tok.memory_per_trial, 0), f(tok.agent_per_trial, 0), times(tok.ratio),
                      f(lat.memory_per_trial, 2), f(lat.agent_per_trial, 2), times(lat.ratio), pct(m.latency_share),
                      f"{m.failed_calls}/{m.calls}" + (f" in {m.failed_trials} trial(s)" if m.failed_calls else ""))
        t.print(out)
        base = next((m.baseline for _, m in mem if m.baseline), None)
        if base is None:
            out.print(Text(f"memory A/B: {mem[0][1].ab_note or ''}", style="yellow"))
            return True
        t = table(f"memory arms against the baseline {escape(base)} (as `agentrig compare RUN:{escape(base)} "
                  "RUN:ARM`; Δ = arm − baseline)", ("arm", "left"), ("tasks", "right"), (ci("Δpass^1"), "right"),
                  (ci("Δpass^k"), "right"), ("McNemar p", "right"), ("better/worse", "right"), ("", "left"))

        def delta(m: Any, prefix: str = "") -> Stack | str:
            if m is None or m.delta is None or m.ci is None:
                return "-"
            sig = {"worse": "worse", "better": "better", "none": "n.s."}.get(m.significance or "", "not called")
            return Stack(f"{prefix}{m.delta:+.3f}", f"[{m.ci[0]:+.3f}, {m.ci[1]:+.3f}]", sig)

        notes: dict[str, list[str]] = {}
        for a, m in mem:
            if m.ab is None:
                t.add_row(escape(a), "-", "-", "-", "-", "-", escape(m.ab_note or ""))
                continue
            c = m.ab
            pk = c.metrics.get("pass^k")
            t.add_row(escape(a), str(c.paired.tasks), delta(c.metrics.get("pass^1")),
                      delta(pk, f"k={pk.k}: " if pk is not None else ""), f"{c.mcnemar.p:.3g}",
                      f"{len(c.flips.better)}/{len(c.flips.worse)}",
                      "" if c.comparable else Text("NOT COMPARABLE", style="bold red"))
            note = c.verdict if not c.comparable else c.metrics["pass^1"].note
            if note:
                notes.setdefault(note, []).append(a)
        t.print(out)
        for note, names in notes.items():
            out.print(Text(f"  {', '.join(names)}: {note}", style="yellow"))
        return True
