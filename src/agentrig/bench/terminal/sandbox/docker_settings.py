"""The host's package-index settings for a docker build (``build_network = "host-settings"``).

Docker 20.10's classic builder mounts nothing at build time (podman's builds get the settings as a
read-only mount: ``container_images``). So a docker build gets them as close to "given to the
build, not kept in the image" as that builder allows: the files (``hostsettings.container_settings``)
are an image of their own (``FROM scratch``, removed after the build); each stage that has a ``RUN``
copies them into ``SETTINGS_DIR`` in its first layer, declares the variables naming them as build
arguments (values: paths only; not in the image's ``ENV``), and removes the directory in its last
layer (as root, then back to the stage's user). Where the daemon is experimental the build is
``--squash``ed: the final image's one new layer holds no copy of them at all; elsewhere the first
layer of the final stage still does (``docker save`` would show it; the image's filesystem does not).
"""

from __future__ import annotations

import re
from typing import Callable

from ..core.hostsettings import MOUNT
from ..tasks.dockerfile import _logical_lines

SETTINGS_DIR = MOUNT  # /.agentrig-host-settings (a docker RUN step mounts its own /dev over a layer's)
_FROM = re.compile(r"^FROM[ \t]+((?:--\S+[ \t]+)*)(\S+)(?:[ \t]+AS[ \t]+(\S+))?[ \t]*$", re.IGNORECASE)


def with_settings_layers(text: str, image: str, names: list[str], user_of: Callable[[str], str]) -> str:
    """The Dockerfile `text` with, in every stage that has a ``RUN``: after its ``FROM``, ``ARG`` for
    each of `names` and ``COPY --from=IMAGE / SETTINGS_DIR/``; at its end ``RUN rm -rf SETTINGS_DIR``
    (under ``USER root`` when the stage's user — its last ``USER``, else its base stage's, else
    ``user_of(base image)`` — is another, restored after)."""
    lines = text.splitlines()
    stages: list[dict] = []  # start: line index after FROM; end: line index of the next FROM (or EOF)
    logical = _logical_lines(text)
    for k, (number, instruction) in enumerate(logical):
        following = logical[k + 1][0] - 1 if k + 1 < len(logical) else len(lines)
        keyword = instruction.split(None, 1)[0].upper() if instruction.strip() else ""
        if keyword == "FROM":
            if stages:
                stages[-1]["end"] = number - 1
            match = _FROM.match(instruction.strip())
            stages.append({"start": following, "end": len(lines), "base": match.group(2) if match else "",
                           "name": (match.group(3) or "").lower() if match else "", "run": False, "user": None})
        elif stages and keyword == "RUN":
            stages[-1]["run"] = True
        elif stages and keyword == "USER":
            stages[-1]["user"] = instruction.split(None, 1)[1].strip() if len(instruction.split(None, 1)) > 1 else ""
    named = {stage["name"]: stage for stage in stages if stage["name"]}

    def user(stage: dict, depth: int = 0) -> str:
        if stage["user"] is not None:
            return stage["user"]
        base = named.get(stage["base"].lower())
        return user(base, depth + 1) if base is not None and base is not stage and depth < 50 else user_of(stage["base"])

    inserts: list[tuple[int, int, str]] = []  # (line index, order, text) inserted before that line
    for order, stage in enumerate(stages):
        if not stage["run"]:
            continue
        head = [f"ARG {name}" for name in names] + [f"COPY --from={image} / {SETTINGS_DIR}/"]
        who = user(stage)
        switch = who not in ("", "root", "0", "0:0", "root:root")
        tail = (["USER root"] if switch else []) + [f"RUN rm -rf {SETTINGS_DIR}"] + ([f"USER {who}"] if switch else [])
        inserts.append((stage["start"], 2 * order + 1, "\n".join(head)))
        inserts.append((stage["end"], 2 * order, "\n".join(tail)))
    if not inserts:
        return text
    for index, _, block in sorted(inserts, key=lambda item: (item[0], item[1]), reverse=True):
        lines[index:index] = block.splitlines()
    return "\n".join(lines) + "\n"
