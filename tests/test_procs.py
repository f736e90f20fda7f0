"""Teardowns and child processes under a stop that cancels again and again (as run/executor.py does
after Ctrl-C): the cleanup finishes, the cancellation still arrives, and nothing reports from a
closed event loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# One run of asyncio.run in a fresh interpreter: the task under test is cancelled every 50 ms
# (the executor's re-cancel, quickened) until it ends; stderr shows what __del__ reports after the
# loop has closed.
_HARNESS = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path

    from agentrig.procs import finish_despite_cancel
    from agentrig.bench.terminal.sandbox.engine import _call

    marker = Path(sys.argv[2])

    async def cleanup():
        # a removal that takes a while: it must finish though its caller is cancelled
        await _call(["sh", "-c", f"sleep 0.6; echo done > {marker}"], 30)

    async def trial(kind):
        if kind == "teardown":
            try:
                await asyncio.sleep(30)
            finally:
                await finish_despite_cancel(cleanup(), 10)
        else:  # the engine command itself is what the stop cancels
            await cleanup()

    async def main():
        task = asyncio.ensure_future(trial(sys.argv[1]))
        await asyncio.sleep(0.1)
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.05)
        print("cancelled" if task.cancelled() else f"ended: {task.exception()!r}")

    asyncio.run(main())
""")


def _play(kind: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    marker = tmp_path / f"{kind}.done"
    done = subprocess.run([sys.executable, "-c", _HARNESS, kind, str(marker)], capture_output=True, text=True,
                          timeout=120)
    return done, marker


def test_a_teardown_finishes_though_its_trial_is_cancelled_again_and_again(tmp_path):
    done, marker = _play("teardown", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cancelled", done.stdout  # the cancellation still reaches the trial
    assert marker.read_text().strip() == "done"  # the cleanup ran to its end
    assert "Traceback" not in done.stderr and "is closed" not in done.stderr, done.stderr


def test_a_cancelled_engine_command_is_let_finish_and_reaped_before_the_loop_closes(tmp_path):
    """The failure CI saw: `podman rm` cancelled by the stop went on past asyncio.run, and its
    transport's __del__ printed "Event loop is closed" with a traceback."""
    done, marker = _play("engine", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cancelled", done.stdout
    assert marker.read_text().strip() == "done"
    assert "Traceback" not in done.stderr and "is closed" not in done.stderr, done.stderr


def test_a_command_past_its_grace_is_killed_and_reaped(tmp_path):
    """A cancelled command that would run on is killed after its grace, still before the loop closes."""
    code = textwrap.dedent("""
        import asyncio
        from agentrig.procs import settle_process

        async def main():
            proc = await asyncio.create_subprocess_exec("sleep", "30", stdout=asyncio.subprocess.PIPE)
            task = asyncio.ensure_future(settle_process(proc, 0.3))
            await asyncio.sleep(0.05)  # started: a task cancelled before its first step never runs
            while not task.done():
                task.cancel()  # absorbed: settling goes on
                await asyncio.wait({task}, timeout=0.05)
            print(proc.returncode)

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "-9", done.stdout  # SIGKILLed, not waited out
    assert "Traceback" not in done.stderr and "is closed" not in done.stderr, done.stderr
