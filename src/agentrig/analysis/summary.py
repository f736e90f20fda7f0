"""The ``Analysis`` of a run: every figure ``agentrig analyze`` prints, as pydantic models.

Shape (``Analysis.model_dump()`` is what ``agentrig analyze --json`` prints)::

    Analysis
      run_dir, run_id, name: str
      n: int                          trials per task planned (the config's run.trials)
      arms_planned: list[str]         arm names in config order (``arms`` may hold fewer: --arm)
      tasks_planned: int; trials_planned: int   arms × tasks × trials of the config snapshot
      bootstrap: BootstrapInfo        resamples (B), seed, confidence (0.95), method
      sections: dict[str, str]        "consistency" / "failures": "ok" | "unavailable: <why>"
                                      (failures need the run's task files: data_root)
      arms: dict[str, ArmAnalysis]

    ArmAnalysis
      arm: str; n: int
      overall: Figures                task-weighted over all tasks; CIs clustered by domain
                                      (tasks resampled within each domain, domain sizes kept)
      macro: Macro                    the plain mean over domains of the domain figures
      domains: dict[str, Figures]     per domain (CIs: tasks resampled within the domain)
      figures: dict[str, result]      every registered figure (analysis/figure.py) with something
                                      for this arm: id → its typed result. In the JSON, the
                                      figures below are keys of the arm itself (as before the
                                      protocol); the others are under ``figures`` (e.g.
                                      ``durations``, ``instability``, AppWorld's ``goal_completion``)
      usage: UsageSummary             per role (RoleUsage) + total cost (None = unknown); over
                                      every model call of the arm's planned trials, invalid
                                      attempts included (they were paid for)
      reruns: Reruns                  rerun i = trial index i over all tasks
      retries: RetryEffect            do trials that needed retries fail more often?
      consistency: list[TaskConsistency]   one per task with valid trials, ranked most
                                      inconsistent first (analysis.consistency: pattern,
                                      distinct chains, diverge_at, similarity, fork …)
      failures: Taxonomy | None       failure classes of the arm's failed valid trials
                                      (analysis.failures; None when the tasks cannot be loaded)
      failures_by_domain: dict[str, Taxonomy]   the same, per domain (empty when unavailable)
      memory: MemoryFigures | None    arms with a memory plug-in only (the plug-in's figure,
                                      plugins/memory/figure.py): triggers,
                                      injection rate (per trigger, per agent step), decisions,
                                      edit tool calls, bank size, memory call failures, tokens and
                                      latency as Overhead {memory_per_trial, agent_per_trial, ratio,
                                      per_trigger}, and ``ab``: the compare.Comparison of the
                                      baseline arm (the first arm without a memory plug-in) → this arm

    Figures (one scope: a domain, or "overall")
      scope: str
      tasks_planned: int; tasks: int  (tasks with at least one valid trial)
      trials_planned, valid, invalid, missing: int   trial keys: valid = has a valid row,
                                      invalid = only invalid rows, missing = not stored
      invalid_attempts: int; invalid_causes: dict[str, int]   over invalid rows (attempts)
      mean_reward: float | None       over valid trials
      pass_1, pass_n: Estimate        Estimate = {value, low, high} (95% bootstrap CI)
      gap_pp: Estimate                Mean@n − pass^n in percentage points
      mean_at_n: float | None         average success over the tasks with n valid trials
      pass_n_tasks, pass_n_excluded: int   tasks with ≥ n valid trials / with fewer (left out)
      mixed_tasks: int; mixed_fraction: float | None   tasks with 0 < c < n_valid, over the
                                      tasks with at least 2 valid trials
      curve: list[PassK]              k = 1..n: {k, pass_hat: Estimate, pass_at, tasks, excluded}
      components: dict[str, ComponentRate]   DB, ENV_ASSERTION, ACTION, COMMUNICATE,
                                      NL_ASSERTION: {trials (computed: not None, not in
                                      RewardInfo.unchecked), passed, rate (None: "—"),
                                      in_basis (valid trials whose basis holds it)}
      terminations: dict[str, int]    over valid trials
      resources: Spread               per valid trial: tokens and duration mean, coefficient of
                                      variation across trials and mean within-task CV

    Macro: domains: int; pass_1, pass_n, gap_pp: Estimate; mean_at_n, mixed_fraction;
           curve: list[PassK] (tasks / excluded summed over domains, pass_at the domain mean)
    UsageSummary: roles: list[RoleUsage] (agentrig.channel.usage: requests, succeeded, failed,
           attempts, retries, retries_by_cause, prompt/completion/reasoning/cached tokens,
           latency_p50_s/p90_s/p99_s, cost_usd, models); cost_usd: float | None;
           priced: bool (the snapshot has [prices]); unpriced_models: list[str]. Latencies are
           of answered calls; a retry is an attempt followed by another one; no model calls at
           all (reference agents) = cost 0.0
    Reruns: reruns: list[RerunStat{trial, trials, successes, success_rate, tokens, retries,
           retried_trials}]; best, worst: int | None (trial index); spread_pp: float | None
    RetryEffect: retried, retried_failed, clean, clean_failed: int; rate_retried, rate_clean:
           float | None; p_value (Fisher exact, two-sided), p_greater (one-sided: retried fail
           more): float | None; enough_data: bool; note: str

Estimates are fractions in 0..1 except ``gap_pp`` (percentage points). ``None`` = not
computable (no task qualifies). Computed by ``analyze_run(store, config)`` (``build.py``); read a
``--json`` dump back with ``Analysis.model_validate_json``. Only trials the snapshot planned count
(its arms, tasks and trial indices < n); other stored rows are ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import (PrivateAttr, SerializationInfo, SerializerFunctionWrapHandler, ValidatorFunctionWrapHandler,
                      model_serializer, model_validator)

from agentrig.channel.usage import RoleUsage
from agentrig.types import Strict

from .instability_report import InstabilityReport


class Estimate(Strict):
    value: float | None = None
    low: float | None = None
    high: float | None = None


class PassK(Strict):
    k: int
    pass_hat: Estimate
    pass_at: float | None = None
    tasks: int = 0  # tasks with at least k valid trials
    excluded: int = 0  # tasks with fewer than k valid trials


class ComponentRate(Strict):
    trials: int = 0  # valid trials where the component was computed (``RewardInfo.computed``)
    passed: int = 0
    rate: float | None = None
    in_basis: int = 0  # valid trials whose reward basis holds the component


class Spread(Strict):
    trials: int = 0
    tokens_mean: float | None = None
    tokens_cv: float | None = None
    tokens_cv_within_task: float | None = None
    duration_mean_s: float | None = None
    duration_cv: float | None = None
    duration_cv_within_task: float | None = None


class Figures(Strict):
    scope: str
    tasks_planned: int = 0
    tasks: int = 0
    trials_planned: int = 0
    valid: int = 0
    invalid: int = 0
    missing: int = 0
    invalid_attempts: int = 0
    invalid_causes: dict[str, int] = {}
    mean_reward: float | None = None
    pass_1: Estimate = Estimate()
    pass_n: Estimate = Estimate()
    gap_pp: Estimate = Estimate()
    mean_at_n: float | None = None
    pass_n_tasks: int = 0
    pass_n_excluded: int = 0
    mixed_tasks: int = 0
    mixed_fraction: float | None = None
    curve: list[PassK] = []
    components: dict[str, ComponentRate] = {}
    terminations: dict[str, int] = {}
    resources: Spread = Spread()


class Macro(Strict):
    domains: int = 0
    pass_1: Estimate = Estimate()
    pass_n: Estimate = Estimate()
    gap_pp: Estimate = Estimate()
    mean_at_n: float | None = None
    mixed_fraction: float | None = None
    curve: list[PassK] = []


class UsageSummary(Strict):
    roles: list[RoleUsage] = []
    cost_usd: float | None = None
    priced: bool = False
    unpriced_models: list[str] = []


class RerunStat(Strict):
    trial: int
    trials: int = 0
    successes: int = 0
    success_rate: float | None = None
    tokens: int = 0
    retries: int = 0
    retried_trials: int = 0


class Reruns(Strict):
    reruns: list[RerunStat] = []
    best: int | None = None
    worst: int | None = None
    spread_pp: float | None = None


class RetryEffect(Strict):
    retried: int = 0
    retried_failed: int = 0
    clean: int = 0
    clean_failed: int = 0
    rate_retried: float | None = None
    rate_clean: float | None = None
    p_value: float | None = None
    p_greater: float | None = None
    enough_data: bool = False
    note: str = ""


class BootstrapInfo(Strict):
    resamples: int
    seed: int
    confidence: float = 0.95
    method: str = "percentile bootstrap over tasks; overall clustered by domain"


class ArmAnalysis(Strict):
    arm: str
    n: int
    overall: Figures
    macro: Macro
    domains: dict[str, Figures] = {}
    figures: dict[str, Any] = {}  # the registered figures (analysis/figure.py): figure id → its typed result
    # keys of a stored arm that no registered figure reads (a plug-in's figure when the plug-in is not
    # loaded): kept as they were, and written back where they were
    _unread: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _read(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        from .figure import read_arm

        if not isinstance(data, dict):
            return handler(data)
        data, unread = read_arm(data, set(cls.model_fields))
        out = handler(data)
        out._unread = unread
        return out

    @model_serializer(mode="wrap")
    def _write(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        from .figure import write_arm

        return write_arm(handler(self), self._unread)


class Analysis(Strict):
    run_dir: str
    run_id: str | None = None
    name: str | None = None
    n: int
    arms_planned: list[str] = []
    tasks_planned: int = 0
    trials_planned: int = 0
    bootstrap: BootstrapInfo
    sections: dict[str, str] = {}
    arms: dict[str, ArmAnalysis] = {}
    instability: list[InstabilityReport] = []  # per arm and temperature, when the run was resampled


COMPONENT_NAMES = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")

