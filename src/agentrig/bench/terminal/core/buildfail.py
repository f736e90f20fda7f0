"""Why a build step failed when its own output names no host: the general rules after ``netfail``.

``netfail.network_failure`` reads a failing step's output for the tools' words ("Could not resolve
host: …"). Two failures of a build that could not reach a host say nothing of the kind:

- **an earlier step's fetch** (``earlier_fetch``): ``RUN curl -sSf https://sh.rustup.rs | sh -s --
  -y`` prints curl's "Could not resolve host" but exits 0 (a pipe's status is its last command's),
  and the next step, ``RUN rustc --version``, fails with 127. The failure is that earlier step's
  fetch: ``needs_network`` naming its host — unless the host is a package registry this machine
  reaches (then ``netfail.registry_outage``/``settings_fault``: the plumbing's, as for the failing
  step's own fetch);
- **the failing step's own fetch, read from its command** (``command_fetch``): ``add-apt-repository
  ppa:deadsnakes/ppa`` dies with a Python traceback that names no host. The step's command is read
  as the shell splits it (``shellread``) and each command for what it fetches (``fetches.fetch_of``);
  a fetch from a host beyond the package registries that this machine cannot resolve
  (``netfail.unresolvable``) is named. A host that resolves is not blamed: a reachable fetch followed
  by an unrelated failure stays the task's. Commands that fetch only maybe (``cargo build``: only
  what is not there yet) are not read as fetches.

Both return ``netfail.network_failure``'s form, ``"could not reach HOST: <what>"``, so that the
callers (``sandbox/build.py`` for bwrap, ``sandbox/container_images.build_error`` for podman and
docker) treat them as they treat a failing step's own words: the same verdict on every engine.
"""

from __future__ import annotations

import re
from typing import Any

from .fetches import fetch_of
from .netfail import registry_outage, unresolvable
from .shellread import units

_SHELL_C = re.compile(r"^(?:/bin/)?(?:ba|da)?sh$")


def step_command(argv: list[str]) -> str:
    """A RUN step's shell command: the ``-c`` string of its shell form, else its words joined."""
    if len(argv) >= 3 and _SHELL_C.match(argv[0]) and "-c" in argv[1:-1]:
        return argv[argv.index("-c") + 1]
    return " ".join(argv)


def command_fetch(command: str) -> str | None:
    """'could not reach HOST: WHAT fetches from HOST, which this machine cannot reach (it cannot
    resolve HOST)' for the first command of `command` (a failing step's shell text) that fetches
    from a host beyond the package registries that this machine cannot resolve; else None."""
    candidates: list[tuple[str, str]] = []
    for unit in units(command):
        for words in unit.commands:
            found = fetch_of(words)
            if found is None or found.maybe or found.registry or not found.host:
                continue
            if registry_outage(f"could not reach {found.host}: ") is not None:
                continue  # a registry this machine reaches (a pip/npm index of the host's settings)
            if (found.what, found.host) not in candidates:
                candidates.append((found.what, found.host))
    if not candidates:
        return None
    far = set(unresolvable(sorted({host for _, host in candidates})))
    for what, host in candidates:
        if host in far:
            return (f"could not reach {host}: {what} fetches from {host}, which this machine cannot reach "
                    f"(it cannot resolve {host})")
    return None


def earlier_fetch(unreached: list[tuple[Any, str]]) -> tuple[Any, str] | None:
    """Of the fetch failures of earlier steps that went on (``(where, network_failure's finding)``:
    the Dockerfile line on bwrap, the step's number on podman/docker): one against a package registry this machine reaches first (the plumbing's: the
    caller says so), else the first; None when there is none."""
    if not unreached:
        return None
    return next((pair for pair in unreached if registry_outage(pair[1])), unreached[0])
