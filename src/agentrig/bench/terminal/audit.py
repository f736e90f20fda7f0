"""The terminal audit: does each task's oracle pass, and does doing nothing fail?

Per task, one trial of the ``oracle`` and one of the ``noop`` agent, played exactly as
``agentrig run`` plays them (``episode.play_trial``: the sandbox, the agent phase, the verifier):

- ``ok``       — the oracle passes and the noop fails;
- ``broken``   — the oracle does not pass (the task's solution, tests or environment disagree);
- ``lenient``  — the noop passes: the tests accept an agent that did nothing;
- ``excluded`` — the sandbox cannot run the task (``needs_container``, ``needs_network``,
  ``needs_services``, ``missing_files``, a build that fails: ``broken_task``), with the reason;
- ``invalid``  — the task's files cannot be read (its ``task.yaml``/``task.toml`` is not valid YAML/
  TOML, a field has the wrong type, a file its format requires is missing, or reading it raised):
  the reason names the file, the field, the problem and the fix (``taskfile.InvalidTask``);
- ``error``    — this machine's fault, or the audit's: a trial stayed invalid after its replays (the
  sandbox failed; with the network, a package registry this machine is meant to reach could not be
  reached), a certificate of such a registry could not be verified (this machine's TLS settings:
  ``netfail.settings_fault``, with the fix — never ``needs_network``; not replayed), or one task's
  audit raised (the reason names the exception and the phase);
- ``timeout``  — the task's audit outgrew its time limit (``task_timeout_s``): its trials are
  cancelled (their sandboxes closed) and the reason says which phase was running;
- ``base_substituted`` — the build breaks on a base that stands in for the task's image (Debian
  for Ubuntu, another Python): the stand-in's fault until shown otherwise, never ``broken_task``
  (``sandbox/task_image.py``) — its reason naming the packages (or pinned versions) apt could not find
  when the stand-in's archive is not the real image's (``_archive_lacks``); so is an oracle whose solution pins package versions (``apt-get install
  g++=4:13.2.0-7ubuntu1``) that the stand-in's archive does not have, and — where the stand-in's
  package archive is not the real image's (Debian's for Ubuntu's) — one whose apt-get finds no
  package of a name it asks for (``Unable to locate package``, ``Depends: ubuntu-keyring but it is
  not installable`` for a .deb fetched from Ubuntu's archive). Another oracle that fails on such a
  base is ``broken``, its reason naming the substitution.

A broken oracle's reason also names what it could not reach — its build's, its solution's or its
tests' fetches of hosts off this machine (``netfail.py``), or, when the output hides it, a remote
host the tests' code fetches that this machine cannot resolve (``_tests_fetch``) — and the tests
that failed (TB1's parser's, or the short test summary a Harbor ``test.sh`` printed). A task with
no reference solution (``empty_solution``: no solution file, or one that holds no command) is
``broken`` with the reason ``no reference solution: …``, the oracle's outcome after it.

A trial spoiled by the sandbox (invalid) is played again, up to ``REPLAYS`` times; an oracle still
invalid after them ends the task's audit (``error``: the no-op's trial would say nothing).

The audit never stops for one task: a task that cannot be read is ``invalid`` and one whose audit
raises is ``error``; the others get their verdicts all the same. ``audit_tasks`` hands each task's
result to ``on_result`` as soon as it is known (the CLI prints one line per task as it goes), in the
order they finish. The CLI's exit code is 0 when the audit completed — every task has its verdict,
whatever it is — and 1 only for bad input to the audit itself (a flag, ``--config``, ``--tasks``).
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel

from agentrig.agents.base import AgentSettings
from agentrig.benchmark import Limits
from agentrig.types import TrialKey

from .core.base import SandboxSettings
from .core.netfail import network_failure
from .tasks.parsers import PASSING

REPLAYS = 2
AuditStatus = Literal["ok", "broken", "lenient", "excluded", "invalid", "error", "base_substituted", "timeout"]
AUDIT_STATUSES: tuple[str, ...] = ("ok", "broken", "lenient", "excluded", "invalid", "error", "base_substituted", "timeout")
DEFAULT_TASK_TIMEOUT_S = 1800.0


class AgentOutcome(BaseModel):
    reward: float | None = None
    valid: bool = True
    termination: str | None = None
    failure_mode: str | None = None
    detail: str | None = None
    duration_s: float = 0.0
    unreached: str | None = None  # a command of the agent's, the build ('build …') or the tests ('tests …') could not reach a host
    missing_versions: list[str] = []  # pinned packages its apt-get could not find ('g++=4:13.2.0-7ubuntu1')
    missing_packages: list[str] = []  # packages its apt-get or dpkg found in no archive it has ('ubuntu-keyring')
    failed_tests: list[str] = []  # the tests that did not pass (their names, as the verifier reported them)


class TaskAudit(BaseModel):
    task_id: str
    format: str
    status: AuditStatus
    reason: str
    oracle: AgentOutcome | None = None
    noop: AgentOutcome | None = None
    duration_s: float = 0.0  # the task's whole audit (builds included)


async def _play(task: Any, kind: str, settings: SandboxSettings, seed: int) -> AgentOutcome:
    """One trial of `kind`, played again (up to ``REPLAYS`` times) while the sandbox spoils it — or
    while, with the network, its commands could not reach a package registry this machine is meant
    to reach (an outage of the plumbing, not the task's need of the network: ``registry_outage``);
    still so after the replays, the outcome is invalid, naming the registry. A certificate of such a
    registry that could not be verified is this machine's TLS settings (``settings_fault``): invalid
    at once, with the fix, never replayed (it would fail the same way)."""
    from agentrig.trial.context import TrialContext

    from .core.base import effective_limits
    from .core.netfail import TLS_SETTINGS, registry_outage, settings_fault
    from .episode import play_trial

    networked = effective_limits(task, settings)[0]
    outcome = None
    for attempt in range(REPLAYS + 1):
        ctx = TrialContext(key=TrialKey(arm=f"audit-{kind}", domain="terminal", task_id=task.id, trial=0),
                           task=task, seed=seed)
        record = await play_trial(ctx, task, agent=AgentSettings(kind=kind), sandbox=settings, limits=Limits(),
                                  attempt=attempt)
        # the oracle's outcome may ask DNS about the hosts its tests fetch (no verdict reads the noop's)
        outcome = await asyncio.to_thread(_outcome, record, task if kind == "oracle" else None, networked)
        if not outcome.valid:
            if TLS_SETTINGS in (outcome.detail or ""):  # the build's certificate failure: the same every time
                return outcome
            continue
        where = (outcome.unreached or "").removeprefix("build ").removeprefix("tests ")
        failed = networked and (outcome.reward or 0.0) < 1.0
        fault = settings_fault(where, settings.build_mode()) if failed else None
        if fault is not None:
            return outcome.model_copy(update={"valid": False, "reward": None, "detail": f"{kind}'s trial: {fault}"})
        registry = registry_outage(where) if failed else None
        if registry is None:
            return outcome
        outcome = outcome.model_copy(update={
            "valid": False, "reward": None,
            "detail": f"the package registry {registry} could not be reached from this machine during the trial "
                      f"({attempt + 1} play(s)): an outage, not the task's: {outcome.unreached}"})
    assert outcome is not None
    return outcome


def _tests_fetch(task: Any, networked: bool, output: str = "") -> str | None:
    """'tests fetch HOST, which they could not reach …' when the task's test code (its ``*.py``
    under the tests directory) fetches from a remote host this trial could not reach: any, without
    the network; with it, one this machine cannot resolve (TB's `curl example.com` in a test whose
    own output a fake curl hid), or one beyond the package registries that answered the tests'
    requests with an HTTP error (`output`: LiveCodeBench-Pro's external judge at an address, whose
    requests this machine's network answers 404)."""
    from .core.netfail import REGISTRY_HOSTS, fetched_hosts, http_errors, unresolvable

    tests = getattr(task, "tests_dir", None)
    if tests is None or not Path(tests).is_dir():
        return None
    text = "\n".join(p.read_text(errors="replace") for p in sorted(Path(tests).rglob("*.py"))
                     if p.is_file() and p.stat().st_size < 1_000_000)
    hosts = fetched_hosts(text)
    far = unresolvable(hosts) if networked else hosts
    if far:
        why = "this machine cannot resolve it" if networked else "the trial had no network"
        return f"tests fetch {', '.join(far[:3])}, which they could not reach ({why})"
    answered = {h: line for h, line in http_errors(output).items() if h in hosts and h not in REGISTRY_HOSTS}
    if not answered:
        return None
    host, line = next(iter(answered.items()))
    return (f"tests fetch {host}, a host beyond the package registries, which they could not reach "
            f"(an HTTP error came back: {line})")


def _outcome(record: Any, task: Any = None, networked: bool = True) -> AgentOutcome:
    """What one played trial says: its reward and termination, and what the audit reads in it."""
    v = record.verdict
    notes = v.reward_info.notes if v.reward_info else {}
    commands = {c.id: str(c.arguments.get("command", "")) for m in record.trajectory.messages for c in m.tool_calls or []}
    unreached = next((why for m in record.trajectory.messages if m.role == "tool" and isinstance(m.content, str)
                      for why in [network_failure(m.content, commands.get(m.tool_call_id or "", ""))] if why), None)
    built = next((e.data.get("detail") for e in record.trajectory.events if e.kind == "build_unreached"), None)
    if built and not unreached:
        unreached = f"build {built}"
    tested = next((e.data for e in record.trajectory.events if e.plugin == "verifier" and e.kind == "result"), None)
    if tested and not unreached and float(tested.get("reward") or 0) < 1.0:  # the tests' own fetches (curl example.com)
        why = network_failure(str(tested.get("output") or ""), remote_only=True)  # not a server on localhost
        unreached = f"tests {why}" if why else (_tests_fetch(task, networked, str(tested.get("output") or ""))
                                                if task is not None else None)
    outputs = "\n".join(m.content for m in record.trajectory.messages if m.role == "tool" and isinstance(m.content, str))
    missing = list(dict.fromkeys(f"{pkg}={ver}" for ver, pkg in _MISSING_VERSION.findall(outputs)))
    absent = list(dict.fromkeys(name for found in _MISSING_PACKAGE.findall(outputs) for name in found if name))
    return AgentOutcome(reward=v.reward if v.valid else None, valid=v.valid, termination=v.termination,
                        failure_mode=notes.get("failure_mode"), detail=v.invalid_cause or notes.get("detail"),
                        duration_s=record.duration_s, unreached=unreached, missing_versions=missing,
                        missing_packages=absent,
                        failed_tests=[str(t.get("name")) for t in (tested or {}).get("tests") or []
                                      if t.get("outcome") not in PASSING])  # an xpass fails, as the verdict has it


# apt-get's words for a pinned version its archive does not have
_MISSING_VERSION = re.compile(r"^E: Version '([^']+)' for '([^']+)' was not found", re.MULTILINE)
# apt's words for a package no archive it knows has (by name, or a dependency of a .deb fetched elsewhere)
_MISSING_PACKAGE = re.compile(r"^E: Unable to locate package (\S+)|^E: Package '([^']+)' has no installation candidate"
                              r"|^ \S+ : Depends: ([^\s(]+)[^\n]* but it is not installable", re.MULTILINE)


def _archive_lacks(who: str, output: str, substituted: str, archive: str | None) -> str | None:
    """Why `who` ("the build") fails on a stand-in base whose apt (its `output`) has not the package
    versions, or — where the stand-in's archive is not the real image's — the packages it asks for:
    the archive's fault, named with the packages; else None."""
    missing = list(dict.fromkeys(f"{pkg}={ver}" for ver, pkg in _MISSING_VERSION.findall(output)))
    if missing:
        shown = ", ".join(missing[:4]) + (" …" if len(missing) > 4 else "")
        return f"{who} pins package versions the stand-in base's archive does not have ({shown}; {substituted})"
    absent = list(dict.fromkeys(name for found in _MISSING_PACKAGE.findall(output) for name in found if name))
    if archive and absent:
        shown = ", ".join(absent[:4]) + (" …" if len(absent) > 4 else "")
        return f"{who} needs packages the stand-in base's archive does not have ({shown}: {archive} archive has them; {substituted})"
    return None


NO_SOLUTION = "no reference solution"  # the words of both shapes (terminal_coverage's no_solution)


def empty_solution(task: Any) -> str | None:
    """Why the task has no reference solution to play (None: it has one): no solution file at all
    (TB1: neither solution.sh nor solution.yaml; Harbor: no solution/solve.sh), or one that holds
    no command (a script of only comments and blank lines, a solution.yaml of no step)."""
    script = getattr(task, "solution_script", None)
    steps = getattr(task, "solution", None)
    if script is None:
        if steps is None:
            files = "solution/solve.sh" if getattr(task, "format", "") == "harbor" else "solution.sh or solution.yaml"
            return f"{NO_SOLUTION}: the task has no {files}"
        if any(str(getattr(s, "command", "")).strip() for s in steps):
            return None
        return f"{NO_SOLUTION}: its solution.yaml has no command (the solution does nothing)"
    try:
        lines = Path(script).read_text(errors="replace").splitlines()
    except OSError:
        return None
    if any(ln.strip() and not ln.strip().startswith("#") for ln in lines):
        return None
    return f"{NO_SOLUTION}: its {Path(script).name} has no command (the solution does nothing)"


async def audit_task(task: Any, settings: SandboxSettings, seed: int = 0,
                     phase: dict[str, str] | None = None) -> TaskAudit:
    """One task's audit. ``phase`` (when given) is kept up to date with what is running
    (``"oracle"``, ``"noop"``): a caller that cuts the audit short names it."""
    from .availability import task_support
    from .verifier import EXCLUDED_MODES

    phase = phase if phase is not None else {}

    found = task_support(task, settings.kind, settings.network)
    base = dict(task_id=task.id, format=task.format)
    if not found.ok:
        return TaskAudit(**base, status="excluded", reason=found.reason or "cannot run in this sandbox")
    phase["now"] = "the oracle's trial (its build included)"
    oracle = await _play(task, "oracle", settings, seed)
    from .sandbox.task_image import task_image

    image = task_image(task)
    substituted, archive = image["substituted"], image["archive"]
    if substituted and oracle.termination == "broken_task":
        first = (oracle.detail or "").splitlines()[0] if oracle.detail else ""
        return TaskAudit(**base, status="base_substituted", oracle=oracle,
                         reason=_archive_lacks("the build", oracle.detail or "", substituted, archive)
                         or f"the build fails on the stand-in base ({substituted}): {first}".rstrip(": "))
    if oracle.termination == "broken_task" or oracle.termination in EXCLUDED_MODES:
        return TaskAudit(**base, status="excluded", reason=f"{oracle.termination}: {oracle.detail or ''}".strip(),
                         oracle=oracle)
    if not oracle.valid:  # still so after its replays: the noop's trial would say nothing more
        return TaskAudit(**base, status="error", reason=f"this machine spoiled the trials: {oracle.detail}", oracle=oracle)
    phase["now"] = "the noop's trial"
    noop = await _play(task, "noop", settings, seed)
    if not oracle.valid or not noop.valid:
        cause = oracle.detail if not oracle.valid else noop.detail
        return TaskAudit(**base, status="error", reason=f"this machine spoiled the trials: {cause}", oracle=oracle, noop=noop)
    if (oracle.reward or 0.0) < 1.0 and substituted and oracle.missing_versions:
        shown = ", ".join(oracle.missing_versions[:4]) + (" …" if len(oracle.missing_versions) > 4 else "")
        return TaskAudit(**base, status="base_substituted", oracle=oracle, noop=noop,
                         reason=f"the oracle's solution pins package versions the stand-in base's archive does not "
                                f"have ({shown}; {substituted})")
    if (oracle.reward or 0.0) < 1.0 and archive and oracle.missing_packages:
        shown = ", ".join(oracle.missing_packages[:4]) + (" …" if len(oracle.missing_packages) > 4 else "")
        return TaskAudit(**base, status="base_substituted", oracle=oracle, noop=noop,
                         reason=f"the oracle's solution needs packages the stand-in base's archive does not have "
                                f"({shown}: {archive} archive has them; {substituted})")
    if (oracle.reward or 0.0) < 1.0:
        unreached = (f"; its {oracle.unreached}" if oracle.unreached.startswith(("build ", "tests ")) else
                     f"; its solution {oracle.unreached}") if oracle.unreached else ""
        missing = empty_solution(task)
        if missing:  # the oracle had nothing to play: say that first
            return TaskAudit(**base, status="broken", reason=f"{missing} (the oracle does not pass: "
                             f"{oracle.failure_mode}{': ' + oracle.detail.splitlines()[0] if oracle.detail else ''})",
                             oracle=oracle, noop=noop)
        if oracle.failed_tests:
            shown = oracle.failed_tests[:3]
            unreached += f"; failed: {', '.join(shown)}" + (f" (+{len(oracle.failed_tests) - 3})" if len(oracle.failed_tests) > 3 else "")
        return TaskAudit(**base, status="broken", reason=f"the oracle does not pass ({oracle.failure_mode}"
                         f"{': ' + oracle.detail.splitlines()[0] if oracle.detail else ''})"
                         + (f" on a stand-in base: {substituted}" if substituted else "") + unreached,
                         oracle=oracle, noop=noop)
    if (noop.reward or 0.0) >= 1.0:
        # on a stand-in the build may have missed what it meant to break (a path of the real
        # image's Python version): the substitution is named, as for a broken oracle
        return TaskAudit(**base, status="lenient", reason="an agent that does nothing passes the tests"
                         + (f" on a stand-in base: {substituted}" if substituted else ""), oracle=oracle, noop=noop)
    return TaskAudit(**base, status="ok", reason="the oracle passes, doing nothing fails", oracle=oracle, noop=noop)


async def audit_one(task: Any, settings: SandboxSettings, task_timeout_s: float | None = None,
                    seed: int = 0) -> TaskAudit:
    """``audit_task`` within ``task_timeout_s`` (None: no limit). Past the limit the task's trials
    are cancelled — their sandboxes and builds closed as at any cancellation — and the result is
    ``timeout`` naming the phase that was running. A crash is an ``error`` naming it, never lost."""
    phase: dict[str, str] = {"now": "the support check"}
    started = time.monotonic()
    try:
        row = await asyncio.wait_for(audit_task(task, settings, seed, phase), task_timeout_s)
    except TimeoutError:
        row = TaskAudit(task_id=task.id, format=task.format, status="timeout",
                        reason=f"the audit's time limit ({task_timeout_s:g} s per task) was reached during {phase['now']}")
    except Exception as exc:  # noqa: BLE001 - one task's crash must not take the others' results with it
        row = TaskAudit(task_id=task.id, format=task.format, status="error",
                        reason=f"the audit failed during {phase['now']}: {type(exc).__name__}: {exc}")
    if settings.kind in ("docker", "podman") and getattr(task, "path", None) is not None:
        from .sandbox.container_images import release_task_images  # noqa: PLC0415 - container kinds only

        try:
            await asyncio.to_thread(release_task_images, task.path)  # audited once: its images are done with
        except Exception as exc:  # noqa: BLE001 - the verdict stands; the images' removal is said
            row.reason += f" (its images could not be removed: {type(exc).__name__}: {exc})"
    row.duration_s = round(time.monotonic() - started, 2)
    return row


def invalid_audit(bad: Any) -> TaskAudit:
    """The verdict of a task whose files cannot be read (a ``taskfile.InvalidTask``): ``invalid``,
    naming the file, the field, the problem and the fix."""
    from .tasks.taskfile import task_format

    return TaskAudit(task_id=bad.task_id, format=task_format(bad.path) or "unknown", status="invalid",
                     reason=f"{bad.file}: {bad.field}: {bad.problem} (fix: {bad.fix})")


def harness_network(task: Any) -> bool:
    """The network the task's own benchmark harness gives its container: Terminal-Bench 1's harness
    gives every task's container the network (a TB1 task cannot ask for none); Harbor's, what the
    task's ``allow_internet`` says."""
    return True if getattr(task, "format", None) == "tb1" else bool(getattr(task, "allow_internet", False))


def as_harness(task: Any, settings: SandboxSettings) -> SandboxSettings:
    """`settings` with the task's harness network (``harness_network``) where they leave the network
    to the task (``network`` unset): how the audit judges a task by default — as its authors'
    harness plays it (``agentrig run`` leaves a TB1 task offline unless ``[sandbox] network`` says)."""
    if settings.network is not None:
        return settings
    return settings.model_copy(update={"network": harness_network(task)})


async def audit_tasks(tasks: list[Any], settings: SandboxSettings, concurrency: int = 4,
                      task_timeout_s: float | None = DEFAULT_TASK_TIMEOUT_S,
                      on_result: Callable[[TaskAudit], None] | None = None,
                      invalid: list[Any] | None = None, harness: bool = False) -> list[TaskAudit]:
    """Audit every task, ``concurrency`` at a time, each within ``task_timeout_s``; results in the
    tasks' order, and each handed to ``on_result`` as soon as it is known. ``invalid``: the tasks
    that could not be read (``taskfile.InvalidTask``), each an ``invalid`` verdict, handed on first
    and listed first. ``harness``: a task whose network the settings leave to it gets its harness's
    (``as_harness``; the CLI's default)."""
    from .availability import warn_local_once

    unread = [invalid_audit(bad) for bad in invalid or []]
    for row in unread:
        if on_result is not None:
            on_result(row)
    if settings.kind == "local" and tasks:
        warn_local_once()
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(task: Any) -> TaskAudit:
        async with gate:
            row = await audit_one(task, as_harness(task, settings) if harness else settings, task_timeout_s)
        if on_result is not None:
            on_result(row)
        return row

    return unread + list(await asyncio.gather(*(one(t) for t in tasks)))
