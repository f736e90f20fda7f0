"""Synthetic AppWorld tasks for tests and for trying the adapter without the real data.

``build(python, root)`` runs ``engine/synthetic.py`` in AppWorld's environment: it writes
``root/data`` — a small tree in AppWorld's own format, made with AppWorld's own models (five tasks
over Simple Note: two of one scenario, a question, a deletion, and one lenient task a no-op passes)
— and ``root/synthetic.json``: per task its solution code and two wrong plays (``wrong_answer``,
``collateral``), which the scripted endpoint (``agentrig.testing.appworld_endpoint``) plays.
Nothing of it is committed: it is built at test time (a few seconds) and cached by the tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agentrig.errors import AgentrigError

from .env import ENGINE_DIR

SCRIPT = ENGINE_DIR / "synthetic.py"
VARIANTS = ("solution", "wrong_answer", "collateral")


def build(python: Path, root: Path, timeout_s: float = 600.0) -> Path:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(python), str(SCRIPT), str(root)], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise AgentrigError(f"building the synthetic AppWorld data failed (exit {done.returncode}): "
                            f"{done.stderr.strip()[-2000:]}")
    return root


def load(root: Path) -> dict:
    """``synthetic.json``: {"tasks": {id: {instruction, solution, wrong_answer, collateral, answer,
    lenient, tests}}, "datasets": {name: [ids]}}."""
    return json.loads((Path(root) / "synthetic.json").read_text(encoding="utf-8"))
