"""Noisy mode of the scripted endpoints (gold and solution): known decision instability.

A ``Noise`` names decision steps of tasks where the scripted agent, when its request is SAMPLED
(``temperature`` > 0 in the request body), returns a wrong action with probability ``p``::

    Noise(p=0.5, seed=0, steps={"mock/create_task_1": [1, 2], "*": [0]})

- ``steps`` keys are ``"<domain>/<task id>"`` (TrialKey.domain — τ²: the domain; terminal: ``terminal``), a bare task
  id, or ``"*"`` (every task); values are 0-based indexes of the agent's decisions in the script
  (τ²: the gold step — one tool call or one text each; terminal: the solution command). The
  lists of every matching key are joined.
- The draw is deterministic: ``blake2b(seed | task | step | the request's "seed")`` — the
  channel sends each trial's seed (and ``agentrig instability`` a seed per sample), so a retried
  request gets the same answer, reruns and samples differ, and tests are repeatable.
- A request at temperature 0 (or without one) is never noisy.

**What is wrong** (``mode``): ``"all"`` (the default) changes every argument of the call (τ²) or
plays ``NOISE_COMMAND`` instead of the command (terminal); ``"one"`` corrupts ONE argument and
leaves the rest — the shape of a real model's slip in a call with many arguments (τ²: the
argument chosen by the seeded draw among the call's arguments; terminal: the command's last word,
e.g. a wrong path). A call without arguments gets one in both modes.

**Obeying a guideline.** When any ``system`` message of the request contains the marker
``<<do:LABEL>>`` and ``LABEL`` is the label of the noisy step's correct action, the step returns
the correct action whatever the draw. Labels: τ² — the tool name of a tool-call step, ``ask``
for a step asking the user to act, ``info`` for the closing information; terminal — the first
word of the solution command (e.g. ``mkdir``), ``submit`` for the submit step. Matching is exact
on the label (case-sensitive); several markers may appear.

Command line (both endpoints): ``--noise TASK=STEPS`` (repeatable; STEPS comma-separated, e.g.
``--noise mock/create_task_1=1,2``), ``--noise-p P`` (default 0.5), ``--noise-seed N``,
``--noise-mode all|one``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from typing import Literal

from pydantic import ConfigDict, Field

from ..types import Strict

__all__ = ["Noise", "OBEY", "obeys", "noise_of", "parse_noise_args", "add_noise_arguments", "wrong_arguments", "wrong_word"]

OBEY = re.compile(r"<<do:([^<>\s]+)>>")


class Noise(Strict):
    model_config = ConfigDict(frozen=True)

    p: float = Field(0.5, ge=0.0, le=1.0)
    seed: int = 0
    steps: dict[str, tuple[int, ...]] = {}
    mode: Literal["all", "one"] = "all"

    def steps_of(self, domain: str | None, task_id: str) -> set[int]:
        out: set[int] = set()
        for key in ("*", task_id, f"{domain}/{task_id}" if domain else None):
            if key is not None:
                out.update(self.steps.get(key, ()))
        return out

    def draw(self, *parts: Any) -> float:
        """A deterministic draw in [0, 1) from the seed and ``parts``."""
        key = "|".join([str(self.seed), *map(str, parts)]).encode("utf-8")
        return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2 ** 64

    def corrupt(self, arguments: Any, *parts: Any) -> dict:
        """The arguments of a wrong call in this mode (``parts`` seed the choice of argument)."""
        if self.mode == "all" or not isinstance(arguments, dict) or not arguments:
            return wrong_arguments(arguments)
        keys = sorted(arguments)
        chosen = keys[int(self.draw("argument", *parts) * len(keys))]
        return {**arguments, chosen: _wrong_value(arguments[chosen])}

    def wrong(self, body: dict, domain: str | None, task_id: str, step: int) -> bool:
        """Whether this request, at the agent's decision ``step``, gets a wrong action."""
        temperature = body.get("temperature")
        if not isinstance(temperature, (int, float)) or temperature <= 0 or self.p <= 0:
            return False
        if step not in self.steps_of(domain, task_id):
            return False
        key = f"{self.seed}|{domain}/{task_id}|{step}|{body.get('seed')}".encode("utf-8")
        draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2 ** 64
        return draw < self.p


def obeys(messages: list[dict], label: str) -> bool:
    """True when a system message of the request carries ``<<do:label>>``."""
    for m in messages:
        if m.get("role") != "system":
            continue
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if isinstance(content, str) and label in OBEY.findall(content):
            return True
    return False


def _wrong_value(v: Any) -> Any:
    return f"noise-{v}" if isinstance(v, str) else {"noise": v}


def wrong_arguments(arguments: Any) -> dict:
    """The arguments of a wrong call: every value changed (a call without arguments gets one)."""
    if not isinstance(arguments, dict) or not arguments:
        return {"noise": 1}
    return {k: _wrong_value(v) for k, v in arguments.items()}


def wrong_word(command: str) -> str:
    """A command with its last word corrupted (the ``"one"`` mode of terminal tasks)."""
    head, sep, last = command.rstrip().rpartition(" ")
    return f"{head}{sep}noise-{last}" if last else command + " noise"


def add_noise_arguments(ap: Any) -> None:
    ap.add_argument("--noise", action="append", default=[], metavar="TASK=STEPS",
                    help="noisy decision steps of a task (domain/task id, task id or *), e.g. mock/t1=1,2")
    ap.add_argument("--noise-p", type=float, default=0.5, help="probability of a wrong action at a noisy step")
    ap.add_argument("--noise-seed", type=int, default=0)
    ap.add_argument("--noise-mode", choices=("all", "one"), default="all",
                    help="what a wrong action changes: every argument (all) or one argument of many (one)")


def parse_noise_args(args: Any) -> Noise | None | str:
    """A Noise from the command line, None without --noise, or an error message."""
    if not args.noise:
        return None
    steps: dict[str, tuple[int, ...]] = {}
    for item in args.noise:
        task, eq, spec = item.rpartition("=")
        try:
            numbers = tuple(int(s) for s in spec.split(",") if s.strip())
        except ValueError:
            numbers = ()
        if not eq or not task or not numbers or min(numbers) < 0:
            return f"--noise {item!r}: write TASK=STEPS with 0-based step numbers, e.g. mock/t1=1,2"
        steps[task] = steps.get(task, ()) + numbers
    if not 0.0 <= args.noise_p <= 1.0:
        return f"--noise-p {args.noise_p}: give a probability between 0 and 1"
    return Noise(p=args.noise_p, seed=args.noise_seed, steps=steps, mode=getattr(args, "noise_mode", "all"))


def noise_of(args: Any) -> Noise | None:
    """``parse_noise_args`` for an endpoint's command line: a bad option raises ValueError (its message)."""
    noise = parse_noise_args(args)
    if isinstance(noise, str):
        raise ValueError(noise)
    return noise
