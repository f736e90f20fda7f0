"""agentrig: a test rig for LLM agents — runs agents on benchmark tasks through any OpenAI-compatible
endpoint, many times over, and tells whether they succeed every time.

The package's folders, the floors their imports follow and the flow of a run: docs/architecture.md.
"""

__version__ = "0.1.0"

import gc as _gc
from contextlib import contextmanager as _contextmanager

_COMMAND = False  # set by ``command_started``: this process is the ``agentrig`` command, not a library user


def command_started() -> None:
    """Called by ``cli`` when it runs as the command (imported by the console script, and first in
    ``main``): what is loaded so far lives until the process exits, so the cyclic GC stops walking
    it (``gc.freeze``)."""
    global _COMMAND
    _COMMAND = True
    _gc.freeze()


def in_command() -> bool:
    """Whether this process is the ``agentrig`` command (what it froze may stay frozen to its exit)."""
    return _COMMAND


def command_ending() -> None:
    """``cli.main``'s last step: the heap is about to go, so the exit does not walk it again."""
    _gc.freeze()


@_contextmanager
def loading():
    """Import heavy modules (the SDK, the code that plays trials) with the cyclic GC paused: an
    import makes long-lived objects, not garbage, and a collection in the middle of one walks them
    all for nothing. In the command they are then frozen out of later collections."""
    was = _gc.isenabled()
    _gc.disable()
    try:
        yield
    finally:
        if _COMMAND:
            _gc.freeze()
        if was:
            _gc.enable()
