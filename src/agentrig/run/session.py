"""One session of a run, conducted from here: ``agentrig run`` parses its arguments, hands the
experiment file to ``Session.open`` and prints what the session returns.

    session = Session.open(Path("exp.toml"))   # load and check the experiment, open (or resume) the
                                               # run directory, plan, the budget
    result = session.conduct(progress)         # play with the chosen executor, summarize, write the
    result.exit_code                           # report, close; 0, 1, 3 or 130 (below)

The parts, for a caller that needs one of them (tests, benchmarks, the smoke check):

    run = open_run(r, force=False)          # the run directory: store, config.json, comparability
    specs = plan(r, run.store)              # arms × tasks × trials, minus what is stored as valid
    outcome = await Executor(r, run.store, run.run_id, channels, stats).run(specs)   # executor.py
    summary = summarize(r, run.store)       # per arm: counts, reward, pass^1, pass^k, tokens

Resume is the same command again: ``plan`` leaves out every trial stored as valid. The executor is
chosen here: ``run.executor = "ray"`` plays on a Ray cluster (run/ray/executor.py), else the local
one (executor.py); the store, the plan and the summary are the same. Ctrl-C (SIGINT) asks the
executor to stop (``Session.conduct`` installs the handler for the time the trials play, on the
main thread): trials in flight are cancelled, every finished one is kept; a second Ctrl-C
interrupts at once. A run stopped by its budget (``[run] max_cost``/``max_tokens``, budget.py)
ends with status "budget". Exit codes (docs/experiments.md): 0 done (or stopped by the budget), 1
a fatal channel error or a stalled run (finished trials kept), 3 the run finished but an arm has
no valid trial (nothing it played can be scored), 130 interrupted.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrig.analysis.reliability import is_success, mean_at_n, pass_hat_k
from agentrig.errors import ConfigError
from agentrig.types import TrialKey

from . import experiment, snapshot
from .budget import Budget, check_prices
from .executor import Executor, Outcome, Stats, TrialSpec, trial_seed
from .experiment import Resolved
from agentrig.store import rundir
from agentrig.store.replay_cache import ReplayCache
from agentrig.store.rundir import STORE_FILE, Run
from agentrig.store.store import Store

EXIT_INTERRUPTED = 130
EXIT_NO_VALID_TRIAL = 3  # an arm ended with no valid trial: nothing of it can be scored


# ------------------------------------------------------------------------------- run directory


def _refusal(r: Resolved, directory: Path, diffs: list[str]) -> ConfigError:
    shown = diffs[:20]
    more = f"\n    … and {len(diffs) - 20} more" if len(diffs) > 20 else ""
    return ConfigError(
        f"{r.source}: the configuration changed since the trials in {directory} were played, so new "
        f"trials would not be comparable with them:\n" + "\n".join(f"    {d}" for d in shown) + more +
        "\n  fix: restore those settings to resume the run, or pass --force to start a new run "
        "in a new directory (the old one is kept)")


def open_run(r: Resolved, *, force: bool = False, store_file: str = STORE_FILE) -> Run:
    """Open (or create) the run directory for ``r``: store/rundir.py ``open_run`` with this
    experiment's snapshots (run/snapshot.py); refuses an incomparable configuration."""
    return rundir.open_run(r.run_dir, name=r.name, comparability=snapshot.comparability(r),
                           config_for=lambda run_id: snapshot.config_snapshot(r, run_id),
                           refusal=lambda directory, diffs: _refusal(r, directory, diffs),
                           force=force, store_file=store_file)


# ------------------------------------------------------------------------------------- planning


def plan(r: Resolved, store: Store) -> list[TrialSpec]:
    """Every (arm, task, trial) of the experiment not yet stored as valid, interleaved: trial 0
    of every task and arm first, then trial 1 …, so a partial run is balanced across arms."""
    done = store.valid_keys()
    counts = Counter(row.key for row in store.verdict_rows())
    out: list[TrialSpec] = []
    for trial in range(r.exp.run.trials):
        for domain, task in r.tasks:
            seed = trial_seed(r.exp.run.seed, domain, task.id, trial)
            for arm in r.arms:
                k = (arm.name, domain, task.id, trial)
                if k in done:
                    continue
                out.append(TrialSpec(TrialKey(arm=arm.name, domain=domain, task_id=task.id, trial=trial),
                                     task, arm, seed, attempt=counts.get(k, 0)))
    return out


# ------------------------------------------------------------------------------------- summary


def _reliability(per_task: dict, trials: int) -> dict[str, Any]:
    counts = {key: (len(v), sum(v)) for key, v in per_task.items()}
    full = {key: nc for key, nc in counts.items() if nc[0] >= trials}
    pass_k, used = pass_hat_k(full, trials) if full else (None, 0)
    mean = mean_at_n(full)
    return {"k": trials, "pass_k": pass_k, "pass_k_tasks": used,
            "gap": (mean - pass_k) if pass_k is not None and mean is not None else None}


def summarize(r: Resolved, store: Store) -> dict[str, Any]:
    """Per arm, over this experiment's trial keys: counts, mean reward, pass^1, tokens, retries."""
    tasks = {(d, t.id) for d, t in r.tasks}
    trials = r.exp.run.trials
    by_arm: dict[str, dict[str, Any]] = {}
    rows = store.verdict_rows()
    for arm in r.arms:
        mine = [x for x in rows if x.arm == arm.name and (x.domain, x.task_id) in tasks and x.trial < trials]
        valid = [x for x in mine if x.valid]
        valid_keys = {x.key for x in valid}
        invalid_keys = {x.key for x in mine if not x.valid} - valid_keys
        per_task: dict[tuple[str, str], list[bool]] = {}
        for x in valid:
            per_task.setdefault((x.domain, x.task_id), []).append(is_success(x.reward))
        causes = Counter(x.invalid_cause or "unknown" for x in mine if not x.valid)
        by_arm[arm.name] = {
            "planned": len(tasks) * trials,
            "valid": len(valid_keys),
            "invalid": len(invalid_keys),
            "missing": len(tasks) * trials - len(valid_keys) - len(invalid_keys),
            "invalid_attempts": sum(1 for x in mine if not x.valid),
            "mean_reward": (sum(x.reward for x in valid) / len(valid)) if valid else None,
            "pass_1": (sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)) if per_task else None,
            # pass^k at k = trials over the tasks with every trial valid; gap = Mean@n - pass^n
            **_reliability(per_task, trials),
            "prompt_tokens": sum(x.prompt_tokens for x in mine),
            "completion_tokens": sum(x.completion_tokens for x in mine),
            "retries": sum(x.retries for x in mine),
            "invalid_causes": dict(causes.most_common()),
        }
    return by_arm


# ------------------------------------------------------------------------------------- session


@dataclass
class SessionResult:
    """How a session ended: the executor's ``Outcome`` (status "done", "fatal", "stalled",
    "interrupted" or "budget"; trials stored; the fatal error or the stall's cause; the outages),
    the summary per arm, the report, and the exit code."""

    outcome: Outcome
    summary: dict[str, Any]
    exit_code: int
    report: Path | None = None
    report_error: str | None = None  # why the report could not be written (the run is not failed by it)
    empty_arms: list[str] = field(default_factory=list)  # arms that planned trials and have no valid one

    @property
    def status(self) -> str:
        return self.outcome.status


class Session:
    """One session of a run: its experiment, its run directory (held until ``close``), its plan,
    its budget and replay cache; ``conduct`` plays the plan and returns a ``SessionResult``."""

    def __init__(self, r: Resolved, run: Run, specs: list[TrialSpec], budget: Budget | None,
                 cache: ReplayCache | None):
        self.r, self.run, self.specs, self.budget, self.cache = r, run, specs, budget, cache
        self.name = r.name
        self.total = len(r.arms) * len(r.tasks) * r.exp.run.trials  # the whole plan, stored or not
        # the run's budget spent already: nothing is played
        self.to_play: list[TrialSpec] = [] if budget is not None and budget.at_start else specs
        self.stats = Stats()  # this session's counts (the command's progress display reads them)
        self.executor: Executor | None = None
        self._closed = False

    @classmethod
    def open(cls, path: Path, *, run_dir: Path | None = None, force: bool = False) -> Session:
        """Load and check the experiment, open (or resume) its run directory, plan. Every setup
        error (a ``ConfigError``) comes before the run directory is touched."""
        r = experiment.load(path, run_dir)
        if r.exp.run.executor == "ray":  # before the run directory: a missing extra is a setup error
            from agentrig.run.ray.executor import require_ray

            require_ray(r.source)
        check_prices(r)
        ReplayCache.check(r)
        run = open_run(r, force=force)
        try:
            specs = plan(r, run.store)
            budget = Budget.of_run(r, run.store)  # None without [run] max_cost / max_tokens
            cache = ReplayCache.for_run(r, run.dir) if not (budget is not None and budget.at_start) else None
        except BaseException:
            run.close()
            raise
        return cls(r, run, specs, budget, cache)

    def conduct(self, progress: AbstractContextManager | None = None) -> SessionResult:
        """Play what is to play (``progress`` shown meanwhile), summarize, write the report, close."""
        try:
            try:
                # nothing to play (a resume of a finished run): no channel, no SDK, no event loop
                outcome = asyncio.run(self._execute(progress or nullcontext())) if self.to_play \
                    else Outcome("budget" if self.specs else "done")
            except KeyboardInterrupt:  # a second Ctrl-C
                outcome = Outcome("interrupted", stored=self.stats.valid + self.stats.invalid_attempts)
            summary = summarize(self.r, self.run.store)
            report, report_error = self._write_report() if outcome.stored or not self.specs else (None, None)
            empty = [name for name, s in summary.items() if s["planned"] and not s["valid"]]
            return SessionResult(outcome, summary, self._exit_code(outcome, empty), report, report_error, empty)
        finally:
            self.close()

    def close(self) -> None:
        """Release the replay cache and the run directory (its store, its owner lock); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.cache is not None:
                self.cache.close()
        finally:
            self.run.close()

    def request_stop(self) -> None:
        """Stop soon (Ctrl-C): the executor cancels the trials in flight; finished ones are kept."""
        if self.executor is not None:
            self.executor.request_stop()

    def _executor(self) -> Executor:
        """The executor ``run.executor`` names: the trials on a Ray cluster, or here."""
        r, run = self.r, self.run
        if r.exp.run.executor == "ray":  # the store and the rest as here
            from agentrig.run.ray.executor import RayExecutor

            return RayExecutor(r, run.store, run.run_id, {}, self.stats)
        # its own channels, one per arm ([channel] cache = "replay": the cache attached)
        return Executor(r, run.store, run.run_id, None, self.stats, cache=self.cache)

    async def _execute(self, progress: AbstractContextManager) -> Outcome:
        ex = self.executor = self._executor()
        if self.budget is not None:  # [run] max_cost / max_tokens: stop as Ctrl-C does once spent (budget.py)
            ex.on_record = self.budget.hook(ex, ex.on_record)
        # a Python-level handler, not the loop's: it runs before the next line of any trial, so a
        # trial that comes back after Ctrl-C (its sandbox got the signal too) is never stored
        installed, previous = False, None
        try:
            previous = signal.signal(signal.SIGINT, self._on_sigint)
            installed = True
        except ValueError:  # not the main thread: no signals here
            pass
        try:
            with progress:
                outcome = await ex.run(self.to_play)
            outcome.outages = ex.outages
            if self.budget is not None and self.budget.reached is not None and outcome.status == "interrupted":
                outcome.status = "budget"
            return outcome
        finally:
            if installed:
                signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)

    def _on_sigint(self, _signum: int, _frame: Any) -> None:
        self.request_stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C interrupts at once

    def _write_report(self) -> tuple[Path | None, str | None]:
        """The run's HTML report, written at the end of every session (a failure here never fails the run)."""
        from agentrig.report import write_report

        try:
            return write_report([self.run.dir]), None
        except Exception as exc:  # noqa: BLE001 - the trials are stored; the report can be rebuilt
            return None, f"{type(exc).__name__}: {exc}"

    def _exit_code(self, outcome: Outcome, empty: list[str]) -> int:
        if outcome.status in ("fatal", "stalled"):
            return 1
        if outcome.status == "interrupted":
            return EXIT_INTERRUPTED
        if outcome.status == "budget" and self.budget is not None:  # a clean stop: the summary says why
            return 0
        if empty:  # a script must not read a run in which an arm scored nothing as a success
            return EXIT_NO_VALID_TRIAL
        return 0
