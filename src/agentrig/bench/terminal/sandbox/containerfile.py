"""A task's Dockerfile as an engine's older builder reads it: heredocs rewritten.

Debian's podman 4.3 (buildah 1.28) predates Dockerfile heredocs (BuildKit's ``RUN <<EOF``,
``COPY <<EOT /path``, ``cat <<EOF > f`` inside a ``RUN``): it reads ``<<EOT`` as a file to copy, or
a body's lines as instructions, and the build fails where Docker's and bwrap's succeed (TB's
``intrusion-detection``). ``without_heredocs`` rewrites them into what it reads, with the meaning
bwrap's replay gives them (``dockerfile.py``):

- a ``RUN`` with heredocs: the exec form of the stage's shell (``SHELL``, else ``/bin/sh -c``) with
  the script as bwrap runs it — for ``RUN <<EOF`` the body, for a heredoc inside the command the
  command with its body, for the shell to read;
- a ``COPY``/``ADD`` of heredocs: each body a file of a build context of its own
  (``--build-context agentrig-heredocs=DIR``), copied from it with ``--from`` (the other flags kept).
  Docker's classic builder (Debian's docker.io 20.10 without BuildKit) reads no heredocs either and
  has no named build contexts nor ``COPY --chmod``: there the files are an image of their own
  (``source``: its name, built ``FROM scratch`` from DIR) and a ``--chmod`` is the file's own mode
  (``modes_in_files``).

A Dockerfile without heredocs is left as it is (``None``).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ..tasks.dockerfile import _HEREDOC, _heredoc_bodies, _json_or_words, _logical_lines, _split_flags

HEREDOC_CONTEXT = "agentrig-heredocs"
_DEFAULT_SHELL = ["/bin/sh", "-c"]
_ONLY_HEREDOC = re.compile(r"<<-?([\"']?)\w+\1")


def without_heredocs(text: str, into: Path, *, source: str = HEREDOC_CONTEXT, modes_in_files: bool = False) -> str | None:
    """The Dockerfile `text` with its heredocs rewritten (see the module's docstring); the bodies of
    COPY/ADD heredocs are written under `into`, which `source` names (a build context, or an image
    made from it: ``COPY --from=SOURCE``). With `modes_in_files` a ``--chmod`` sets the files' own
    mode instead of staying a flag. None when it has no heredoc."""
    lines = _logical_lines(text)
    if not any("\n" in line for _, line in lines):  # _logical_lines joins a heredoc's body by newlines
        return None
    out: list[str] = []
    shell = list(_DEFAULT_SHELL)
    for _, line in lines:
        instruction, _, rest = line.partition(" ")
        op, rest = instruction.upper(), rest.strip()
        if op == "FROM":
            shell = list(_DEFAULT_SHELL)
        elif op == "SHELL":
            shell = _json_or_words(rest) or shell
        rewritten = _rewrite(op, rest, shell, into, len(out), source, modes_in_files) if "\n" in line else None
        out.append(rewritten or line)
    return "\n".join(out) + "\n"


def _rewrite(op: str, rest: str, shell: list[str], into: Path, index: int, source: str = HEREDOC_CONTEXT,
             modes_in_files: bool = False) -> str | None:
    flags, rest = _split_flags(rest)
    head, bodies = _heredoc_bodies(rest)
    if not bodies:
        return None
    if op == "RUN":
        script = next(iter(bodies.values())) if _ONLY_HEREDOC.fullmatch(head.strip()) else rest
        return f"RUN {_flags(flags)}{json.dumps([*shell, script], ensure_ascii=False)}"
    if op not in ("COPY", "ADD") or "from" in flags:
        return None
    words = shlex.split(_HEREDOC.sub("", head))
    if len(words) != 1:  # heredocs mixed with files of the context: left for the builder to refuse
        return None
    mode = 0o644
    if modes_in_files and re.fullmatch(r"[0-7]{3,4}", flags.get("chmod", "")):
        mode = int(flags.pop("chmod"), 8)
    folder = into / f"h{index}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in bodies.items():
        (folder / name).write_text(body, encoding="utf-8")
        (folder / name).chmod(mode)
    sources = [f"h{index}/{name}" for name in bodies]
    flags["from"] = source
    return f"{op} {_flags(flags)}{json.dumps([*sources, words[0]], ensure_ascii=False)}"


def _flags(flags: dict[str, str]) -> str:
    return "".join(f"--{key}={value} " if value else f"--{key} " for key, value in flags.items())
