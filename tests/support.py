"""Helpers shared by the tests: the test key, a channel over a local endpoint, the package's modules."""

from __future__ import annotations

from pathlib import Path

from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig

KEY = "sk-fake-test-0123456789abcdef"
KEY_ENV = "AGENTRIG_TEST_KEY"


def make_channel(base_url: str, roles: tuple[str, ...] = ("agent",), *, key: str = KEY, **settings) -> Channel:
    """A real Channel to ``base_url`` for ``roles``: model "fake-model", short timeouts and backoff."""
    channel = dict(base_url=base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=5, max_attempts=2,
                   backoff_base_s=0.01, backoff_max_s=0.02)
    channel.update(settings)
    cfg = ChannelConfig(channel=ChannelSettings(**channel), roles={r: RoleConfig() for r in roles})
    return Channel(cfg, env={KEY_ENV: key})


class EndpointProcess:
    """A local endpoint's command line (``python -m <module> …``, e.g. the dotted path of a benchmark's
    scripted endpoint) as its own process: it prints its base URL on the first line; ``stop`` ends it
    with SIGTERM (then KILL)."""

    def __init__(self, module: str, *args: str, env: dict[str, str]):
        import subprocess
        import sys

        self.proc = subprocess.Popen([sys.executable, "-m", module, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            self.stop()
            raise RuntimeError(f"{module} did not start: {self.proc.stderr.read()}")

    def stop(self) -> None:
        import signal
        import subprocess

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def package_modules() -> list[tuple[str, Path]]:
    """(dotted name, file) of every module of the agentrig package, read from ``src/agentrig``; a
    terminal task's own files under ``bench/terminal/builtin/`` are task data, not the package."""
    import agentrig

    pkg = Path(agentrig.__file__).resolve().parent
    out = []
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg).as_posix()
        if rel.startswith("bench/terminal/builtin/"):
            continue
        parts = ["agentrig", *Path(rel).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), f))
    return out
