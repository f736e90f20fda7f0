"""A finished trial's directory leaves the trials folder at once and is deleted in the background
(``sandbox/bwrap.discard_tree``); what a runner killed hard left in ``trash/`` goes with the next
runner's first discard, and a live runner's entries are never touched."""

from __future__ import annotations

import subprocess
import sys

from agentrig.bench.terminal.sandbox import bwrap


def _trial_like(path):
    (path / "upper" / "usr").mkdir(parents=True)
    (path / "upper" / "usr" / "file").write_text("x")
    work = path / "work" / "usr" / "work"
    work.mkdir(parents=True)
    work.chmod(0)  # as overlayfs leaves its work directory
    return path


def _drain() -> None:
    bwrap._TRASH_POOL.submit(lambda: None).result(timeout=60)


def test_a_trial_directory_leaves_at_once_and_is_deleted_in_the_background(tmp_path, monkeypatch):
    monkeypatch.setattr(bwrap, "_TRASH_POOL", None)
    trials = tmp_path / "cache" / "trials"
    trial = _trial_like(trials / "bash-hello-0-abcd1234")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # a pid that has ended
    stale = _trial_like(tmp_path / "cache" / "trash" / f"bash-old-0-ffff0000-{dead}")
    live = _trial_like(tmp_path / "cache" / "trash" / "bash-other-0-eeee0000-1")  # pid 1 is alive

    assert bwrap.discard_tree(trial)
    assert not trial.exists() and not list(trials.iterdir())
    _drain()
    left = sorted(p.name for p in (tmp_path / "cache" / "trash").iterdir())
    assert left == [live.name]  # ours and the dead runner's are gone; a live one's entry stays
    assert not stale.exists()
    bwrap.remove_tree(live)


def test_a_rename_that_fails_says_so(tmp_path):
    (tmp_path / "cache" / "trials").mkdir(parents=True)
    missing = tmp_path / "cache" / "trials" / "gone"
    assert bwrap.discard_tree(missing) is False  # the caller deletes what there is itself
    assert not list((tmp_path / "cache" / "trash").iterdir())
