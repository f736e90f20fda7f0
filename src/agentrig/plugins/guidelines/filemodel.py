"""The guidelines file: what ``agentrig guidelines derive`` writes, a person reviews (and may edit),
and the ``guidelines`` plug-in reads.

Human-readable JSON (indented, keys in a fixed order)::

    {"format": "agentrig.guidelines/1",
     "created": "2026-12-03T13:00:00Z",
     "provenance": {"run_id": str | null, "run_dir": str, "benchmark": "tau2" | "terminal" | …,
                    "arm": str, "split": str | null,
                    "source_tasks": ["<group>/<task id>", …],   # every task the inputs came from
                    "inputs": {"unstable_steps": int, "forks": int, "notes": [str, …]},
                    "analyst": {"model": str | null, "calls": int, "prompt_tokens": int,
                                "completion_tokens": int}},
     "guidelines": [{"id": "g1", "text": str, "rationale": str,
                     "category": "strategy" | "recovery" | "constraint",
                     "trigger": str,
                     "sources": [{"task": "<group>/<task id>", "trial": int, "step": int,
                                  "kind": "unstable_step" | "fork"}]}],
     "rejected": [{"guideline": {…}, "values": [str, …]}]}   # held back by the value-leak check

The file's own content hash (``file_sha``, of its bytes) is computed when it is used (the
comparability snapshot of a run that uses it records it), never stored inside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from agentrig.types import Strict

from agentrig.errors import ConfigError, format_validation_error

FORMAT = "agentrig.guidelines/1"
Category = Literal["strategy", "recovery", "constraint"]
CATEGORIES = ("strategy", "recovery", "constraint")


class Source(Strict):
    task: str  # "<group>/<task id>"
    trial: int = Field(ge=0)
    step: int = Field(ge=0)
    kind: Literal["unstable_step", "fork"] = "unstable_step"


class Guideline(Strict):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    rationale: str = ""
    category: Category
    trigger: str = ""
    sources: list[Source] = []

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()


class Inputs(Strict):
    unstable_steps: int = 0
    forks: int = 0
    notes: list[str] = []


class Analyst(Strict):
    model: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Provenance(Strict):
    run_id: str | None = None
    run_dir: str = ""
    benchmark: str = ""
    arm: str = ""
    split: str | None = None
    source_tasks: list[str] = []
    inputs: Inputs = Inputs()
    analyst: Analyst = Analyst()


class Rejected(Strict):
    guideline: dict
    values: list[str]


class GuidelinesFile(Strict):
    format: Literal["agentrig.guidelines/1"] = FORMAT
    created: str = ""
    provenance: Provenance = Provenance()
    guidelines: list[Guideline] = []
    rejected: list[Rejected] = []

    @field_validator("guidelines")
    @classmethod
    def _unique_ids(cls, v: list[Guideline]) -> list[Guideline]:
        seen: set[str] = set()
        for g in v:
            if g.id in seen:
                raise ValueError(f"guideline id {g.id!r} appears twice; give every guideline its own id")
            seen.add(g.id)
        return v


def file_sha(path: str | Path) -> str:
    """The content hash of a guidelines file (the same short hash comparability snapshots use)."""
    from agentrig.benchmark import sha

    return sha(Path(path).read_bytes())


def dumps(gf: GuidelinesFile) -> str:
    return json.dumps(gf.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def write(gf: GuidelinesFile, path: str | Path) -> Path:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps(gf), encoding="utf-8")
    return p


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def load(path: str | Path) -> GuidelinesFile:
    """Read and validate a guidelines file; a problem is ONE ConfigError naming the file and field."""
    p = Path(path).expanduser()
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such guidelines file; write one with `agentrig guidelines derive RUN --out {p}`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot be read as a UTF-8 text file ({exc})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                          "(fix the edit, or derive the file again)") from None
    try:
        return GuidelinesFile.model_validate(data)
    except ValidationError as exc:
        def line(err: dict) -> str:
            field = _where(tuple(err["loc"]))
            if err["type"] == "extra_forbidden":
                msg = "not a field of a guidelines file (check its spelling; see docs/consistency.md)"
            elif err["type"] == "literal_error" and field.endswith("category"):
                msg = f"{err['input']!r} is not a category (fix: use one of {', '.join(CATEGORIES)})"
            else:
                msg = err["msg"]
            return f"{field}: {msg}"
        raise ConfigError(format_validation_error(exc, f"{p}: invalid guidelines file:", line, limit=8)) from None


def markdown(gf: GuidelinesFile, *, sha: str | None = None) -> str:
    """The file as markdown, for review."""
    pv = gf.provenance
    out = ["# Consistency guidelines", ""]
    origin = f"derived from run `{pv.run_id or pv.run_dir or '?'}`"
    if pv.arm:
        origin += f", arm `{pv.arm}`"
    if pv.split:
        origin += f", split `{pv.split}`"
    out.append(f"{origin} ({pv.benchmark or 'benchmark unknown'}); {len(pv.source_tasks)} source task(s); "
               f"inputs: {pv.inputs.unstable_steps} unstable step(s), {pv.inputs.forks} fork(s)")
    if sha:
        out.append(f"file hash: `{sha}`")
    if gf.created:
        out.append(f"created: {gf.created}")
    for note in pv.inputs.notes:
        out.append(f"> note: {note}")
    out.append("")
    if not gf.guidelines:
        out.append("_no guidelines_")
    for g in gf.guidelines:
        out.append(f"## {g.id} · {g.category}")
        out.append("")
        out.append(g.text)
        out.append("")
        if g.trigger:
            out.append(f"- **when:** {g.trigger}")
        if g.rationale:
            out.append(f"- **why:** {g.rationale}")
        if g.sources:
            shown = ", ".join(f"{s.task} trial {s.trial} step {s.step} ({s.kind})" for s in g.sources[:6])
            if len(g.sources) > 6:
                shown += f", … {len(g.sources) - 6} more"
            out.append(f"- **from:** {shown}")
        out.append("")
    if gf.rejected:
        out.append(f"## Rejected by the value-leak check ({len(gf.rejected)})")
        out.append("")
        for r in gf.rejected:
            text = str(r.guideline.get("text", ""))[:200]
            out.append(f"- {text} — repeats task value(s): {', '.join(repr(v) for v in r.values[:5])}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
