"""``agentrig run --smoke`` on AppWorld arms: what is shown of the arm's smoke trial (the first
selected task, played once), step by step:

    thought       the model's text before its code (its reasoning when that is all it sent)
    reply         a reply that held no code, as the model sent it
    code          each block of code it ran
    output        what came back (clipped here; the store keeps it whole)
    format error  a reply that could not be run, with why
    stop          how the agent phase ended when it did not complete the task
    tests         AppWorld's evaluation: tests passed, the failed ones by name
"""

from __future__ import annotations

import re
from typing import Any


def clip(text: str, lines: int = 8, chars: int = 600) -> str:
    """The head of ``text`` (at most ``lines`` lines, ``chars`` characters) and how much is left out."""
    text = (text or "").strip("\n")
    head = "\n".join(text.split("\n")[:lines])[:chars]
    left = len(text) - len(head)
    return head + (f" … ({left} more characters)" if left > 0 else "")

_CODE_BLOCK = re.compile(r"^ {0,3}(`{3,})[ \t]*(python|py)[ \t]*\n.*?^ {0,3}\1`*[ \t]*$", re.M | re.S)


def transcript(record: Any) -> list[tuple[str, str]]:
    traj = record.trajectory
    problems = {e.data.get("call"): e.data for e in traj.events if (e.plugin, e.kind) == ("agent", "format_error")}
    out: list[tuple[str, str]] = []
    seen_assistant = last_had_code = False
    for m in traj.messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            seen_assistant = True
            text = (m.content or "")
            if any(c.id.startswith("text-") for c in m.tool_calls):
                text = _CODE_BLOCK.sub("", text)
            text = text.strip() or (m.reasoning or "").strip()
            codes = [str((c.arguments or {}).get("code", c.arguments_raw)) for c in m.tool_calls]
            if text:
                out.append(("thought" if codes else "reply", clip(text, lines=4, chars=300)))
            out.extend(("code", clip(code, lines=8, chars=500)) for code in codes)
            last_had_code = bool(codes)
            if not codes and m.call in problems:
                out.append(("format error", str(problems[m.call].get("problem", "unusable reply"))))
            continue
        if seen_assistant and (m.role == "tool" or (m.role == "user" and last_had_code)):
            out.append(("output", clip(m.content or "")))
            last_had_code = last_had_code and m.role == "tool"
    for e in traj.events:
        if (e.plugin, e.kind) == ("agent", "stop"):
            out.append(("stop", f"{e.data.get('termination')}: {e.data.get('detail', '')}".rstrip(": ")))
    out.append(("tests", _tests(record)))
    return out


def _tests(record: Any) -> str:
    v = record.verdict
    if not v.valid:
        return f"not run: the trial is invalid ({v.invalid_cause})"
    ev = next((e.data for e in record.trajectory.events if (e.plugin, e.kind) == ("world", "evaluate")), None)
    if ev is None:
        return f"not run ({v.termination})"
    tests = ev.get("tests") or []
    failed = [t["test"] for t in tests if not t.get("passed")]
    line = f"{len(tests) - len(failed)}/{len(tests)} passed: " + ("task success" if ev.get("success") else "task failed")
    if failed:
        line += "\nfailed: " + "; ".join(failed[:6])
    return line


def problem(record: Any) -> str | None:
    """A valid smoke trial fails the check when the model's replies could not be run as code."""
    if record.verdict.termination != "format_errors":
        return None
    return ("the model's replies could not be run as code (format_errors); try the other tool_mode "
            "(\"native\" / \"text\") or another model")
