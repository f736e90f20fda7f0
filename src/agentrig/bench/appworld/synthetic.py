"""Synthetic AppWorld tasks for tests and for trying the adapter without the real data.

``build(python, root)`` runs ``engine/synthetic.py`` in AppWorld's environment: it writes
``root/data`` — a small tree in the shape of AppWorld's real downloads, each part written by
AppWorld's own code (five tasks: two of one scenario creating a note, a question, a deletion, and a
two-app task texting a note's content by phone; each with ``assert answers match.`` and ``assert
model changes match …`` tests, a generator-form ``solution.py`` and a compiled solution with
helpers, test labels from ``TestTracker.prepare_test_data``) — and ``root/synthetic.json``: per task
its solution steps and two wrong plays (``wrong_answer``, ``collateral``), which the scripted
endpoint (``agentrig.bench.appworld.scripted.appworld_endpoint``) plays. ``ship_as_test_set``
re-saves a dataset's ground truth as AppWorld ships its test sets (no solutions).
Nothing of it is committed: it is built at test time (a few seconds) and cached by the tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agentrig.errors import AgentrigError

from .env import ENGINE_DIR

SCRIPT = ENGINE_DIR / "synthetic.py"
SOURCES = (SCRIPT, ENGINE_DIR / "synthetic_tasks.py")  # what the data is made from (the tests' cache key)
VARIANTS = ("solution", "wrong_answer", "collateral")


def build(python: Path, root: Path, timeout_s: float = 600.0) -> Path:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(python), str(SCRIPT), str(root)], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise AgentrigError(f"building the synthetic AppWorld data failed (exit {done.returncode}): "
                            f"{done.stderr.strip()[-2000:]}")
    return root


def ship_as_test_set(python: Path, root: Path, dataset: str, timeout_s: float = 300.0) -> list[str]:
    """Re-save ``dataset``'s ground truth under ``root`` as AppWorld ships its test sets (minimal
    mode: no solutions), with AppWorld's own ``GroundTruth.save``; returns the task ids."""
    done = subprocess.run([str(python), str(SCRIPT), "--ship-as-test-set", str(root), dataset], capture_output=True,
                          text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise AgentrigError(f"re-saving the {dataset!r} tasks as a test set failed (exit {done.returncode}): "
                            f"{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["tasks"]


def load(root: Path) -> dict:
    """``synthetic.json``: {"tasks": {id: {instruction, solution, wrong_answer, collateral, answer,
    steps, apps, tests}}, "datasets": {name: [ids]}}."""
    return json.loads((Path(root) / "synthetic.json").read_text(encoding="utf-8"))
