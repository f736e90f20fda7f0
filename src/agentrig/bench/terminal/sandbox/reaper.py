"""Reaping forked children in a serving loop: one implementation for ``zygote.py`` and ``pytest_server.py``.

Both are run by path with the standard library only (``python -I -S zygote.py``, ``python -s -P
pytest_server.py``: their own directory is not on ``sys.path``), so each loads this file by its path
(``importlib.util.spec_from_file_location``) when it starts — before the zygote's spawner enters a
sandbox, whose files it must never import from. Standard library only, here too.

- ``readable(sock, on_exit)``: the serving loop's wait. A child's ``SIGCHLD`` wakes ``select``
  through a pipe (``signal.set_wakeup_fd``); every child that ended is reaped (``waitpid`` with
  ``WNOHANG``) and handed to ``on_exit(pid, status)``; each time ``sock`` is readable the loop
  body runs (the generator yields).
- ``reap_all``: reap every child that ended, keeping nothing — the zygote factory's ``SIGCHLD``
  handler for its spawners.
"""

import os
import select
import signal


def reaped():
    """Every (pid, status) of a child that has ended, without waiting for one that has not."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def reap_all(*_):
    """Reap the children that ended and keep nothing (usable as a signal handler)."""
    for _ in reaped():
        pass


def readable(sock, on_exit):
    """Yield each time `sock` is readable; meanwhile reap every child that ends, ``on_exit(pid, status)``."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            for pid, status in reaped():
                on_exit(pid, status)
        if sock in ready:
            yield
