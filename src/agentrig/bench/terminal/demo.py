"""The terminal benchmark's part of ``agentrig demo`` (``TerminalBenchmark.demo_setup``): which
sandbox and which root its section plays with on this machine.

bwrap when it works here (its probe also starts the warm verifier, so pytest's import overlaps
the sections before); else the ``local`` sandbox as root (with its warning that nothing is
isolated); else the section is skipped, with a sentence saying why. Under bwrap, the tasks' own
images when mmdebstrap can build them, else the host's root stands in, and the demo says so.
The command (``commands/demo_terminal.py``) prints and plays; this module only decides.
"""

from __future__ import annotations

import asyncio
import os
import shutil

from agentrig.benchmark import DemoSetup


def choose_sandbox() -> tuple[str | None, str]:
    """("bwrap" | "local" | None, why): bwrap when it works here, else local as root, else nothing."""
    from .sandbox import sandbox_check

    try:
        findings = asyncio.run(sandbox_check("bwrap"))
    except Exception as exc:  # a probe that cannot even run: treat as "bwrap does not work"
        findings, why = [], f"{type(exc).__name__}: {exc}"
    else:
        bad = [f for f in findings if not f.ok and f.check != "cgroups"]
        why = "; ".join(f"{f.check}: {f.detail}" for f in bad)
        if findings and not bad:
            return "bwrap", ""
    if os.geteuid() == 0:
        return "local", why
    return None, why


def choose_root() -> tuple[str, str]:
    """("image" | "host", note): the tasks' own images (roots built from packages, once, then
    cached) when mmdebstrap can build them; else the host's root stands in, and the demo says so."""
    if shutil.which("mmdebstrap"):
        return "image", ""
    return "host", ("mmdebstrap is not installed, so the host's root stands in for the tasks' images "
                    "(apt-get install mmdebstrap, or `make demo`, for the real ones)")


def demo_setup() -> DemoSetup:
    """The sandbox (``values["sandbox"]``) and root (``values["root"]``) of the demo's terminal runs."""
    kind, why = choose_sandbox()
    if kind is None:
        return DemoSetup(skip=f"the bwrap sandbox does not work here and the local fallback needs root ({why}).\n"
                              "   Run `agentrig doctor --sandbox bwrap` for the fix, then `agentrig demo` again.")
    warnings: list[str] = []
    if kind == "bwrap":
        from .sandbox import warm

        warm.prestart()  # pytest's import in the warm verifier overlaps the sections before this one
        root, note = choose_root()
        if note:
            warnings.append(f"{note}.")
    else:
        warnings.append(f"bwrap does not work here ({why}); using the local sandbox, which isolates nothing.")
        root = "host"
    return DemoSetup(values={"sandbox": kind, "root": root}, warnings=tuple(warnings))
