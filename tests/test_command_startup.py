"""What the ``agentrig`` command loads and how. It pauses the cyclic GC while it loads its modules and freezes what it
loaded (``agentrig.loading``, ``command_started``/``command_ending``); a program that imports agentrig
as a library keeps its GC as it had it. Each case runs in a fresh interpreter: the GC's state is
process-wide. Modules a run does not need stay unloaded: markdown-it (one page of ``agentrig
guidelines``) at start-up, httpx in the channel (the run's server check asks on the channel's own
pool; only the doctor makes a client of its own). What this saves is measured in
docs/performance.md, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys


def _python(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_cli_leaves_the_gc_on_and_freezes_nothing() -> None:
    got = _python("import gc, json, agentrig.cli\n"
                  "print(json.dumps({'on': gc.isenabled(), 'frozen': gc.get_freeze_count()}))")
    assert got == {"on": True, "frozen": 0}


def test_a_gc_turned_off_before_stays_off() -> None:
    got = _python("import gc, json\ngc.disable()\nimport agentrig.cli\nfrom agentrig import loading\n"
                  "with loading():\n    import agentrig.run.executor\n"
                  "print(json.dumps({'on': gc.isenabled(), 'frozen': gc.get_freeze_count()}))")
    assert got == {"on": False, "frozen": 0}


def test_loading_pauses_the_gc_and_a_library_user_gets_it_back_unfrozen() -> None:
    got = _python("import gc, json\nfrom agentrig import loading\n"
                  "with loading():\n    inside = gc.isenabled()\n    import agentrig.run.executor\n"
                  "print(json.dumps({'inside': inside, 'on': gc.isenabled(), 'frozen': gc.get_freeze_count()}))")
    assert got == {"inside": False, "on": True, "frozen": 0}


def test_the_command_freezes_what_it_loaded_and_keeps_collecting_the_rest() -> None:
    got = _python("import gc, json, sys\nfrom agentrig.cli import main\nsys.argv = ['agentrig', 'version']\n"
                  "try:\n    main()\nexcept SystemExit:\n    pass\n"
                  "class Cycle:\n    pass\n"
                  "a, b = Cycle(), Cycle()\na.b, b.a = b, a\ndel a, b\n"
                  "print(json.dumps({'on': gc.isenabled(), 'frozen': gc.get_freeze_count() > 1000, "
                  "'collected': gc.collect() >= 2}))")
    assert got == {"on": True, "frozen": True, "collected": True}


def test_start_up_and_the_channel_load_neither_markdown_nor_httpx() -> None:
    got = _python("import json, sys, agentrig.cli, agentrig.commands.run, agentrig.channel.client\n"
                  "print(json.dumps(sorted(m for m in ('markdown_it', 'rich.markdown', 'httpx') if m in sys.modules)))")
    assert got == []
