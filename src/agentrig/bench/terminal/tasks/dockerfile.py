"""Dockerfiles and compose files read for the sandboxes that have no container engine.

``parse_dockerfile`` turns a task's Dockerfile into a ``BuildPlan``: the steps ``sandbox.build``
replays once per task on top of the host's root (the host stands in for the base image). The
subset, documented in docs/terminal.md:

- ``FROM`` one accepted base (``ACCEPTED_BASES``), once (no multi-stage builds);
- ``RUN`` (shell or exec form), ``WORKDIR``, ``ENV``, ``ARG``, ``SHELL``, ``USER root``;
- ``COPY``/``ADD`` of files from the build context (``--chown``/``--chmod`` honoured; ``ADD``
  unpacks local tar archives); not ``--from``, not URLs;
- ``CMD``, ``ENTRYPOINT``, ``EXPOSE`` are recorded (what a service beside the agent's runs and
  listens on; the agent's sandbox starts its image's ENTRYPOINT, ``BuildPlan.start_argv``); ``LABEL``, ``VOLUME``, ``STOPSIGNAL``, ``HEALTHCHECK``, ``MAINTAINER``, ``ONBUILD``
  are accepted and have no effect (the sandbox is a shell).

Anything else gives ``BuildPlan(supported=False, reason="needs_container: ...")`` — the task is
skipped under bwrap and local, never approximated. Compose files are read by ``compose.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

# Base images a bwrap or local trial runs on (listed in docs/terminal.md): those a recipe builds
# from packages (images.resolve_base decides; accepted_base asks it, so the two never disagree)
ACCEPTED_BASES: tuple[str, ...] = (
    "ghcr.io/laude-institute/t-bench/ubuntu-YY-MM, python-3-X (any tag)",
    "ubuntu:YY.MM / a codename (focal, jammy, noble …), point and dated tags",
    "debian:bullseye|bookworm|trixie, 11|12|13, point releases (13.0-slim), stable/oldstable, latest",
    "python:3[.X[.Y]][-slim][-bullseye|-bookworm|-trixie] (not alpine)",
    "buildpack-deps, node, golang, rust, openjdk, eclipse-temurin, gcc (images/official.py)",
)
_IGNORED = {"LABEL", "VOLUME", "STOPSIGNAL", "HEALTHCHECK", "MAINTAINER", "ONBUILD"}
_NETWORK_TOOLS = re.compile(r"\b(apt-get|apt|pip3?|uv|curl|wget|git\s+clone|npm|yarn|pnpm|cargo|go\s+(get|install)|conda|gem|apk)\b")


class BuildStep(BaseModel):
    op: Literal["RUN", "COPY", "ADD", "WORKDIR", "ENV", "USER"]
    line: int  # where it is in the Dockerfile
    argv: list[str] = Field(default_factory=list)  # RUN: the full argv (shell + command, or exec form)
    sources: list[str] = Field(default_factory=list)  # COPY/ADD: paths relative to the context (globs kept)
    dest: str = ""  # COPY/ADD: absolute destination; WORKDIR: the directory
    dest_is_dir: bool = False  # COPY/ADD: the destination ends with "/" (or several sources)
    chown: str | None = None
    chmod: str | None = None
    cwd: str = "/"  # the working directory the step runs in
    env: dict[str, str] = Field(default_factory=dict)  # ENV and ARG values visible to the step

    def uses_network(self) -> bool:
        return self.op == "RUN" and bool(_NETWORK_TOOLS.search(" ".join(self.argv)))


class BuildPlan(BaseModel):
    supported: bool
    reason: str | None = None  # "needs_container: ..." when not supported
    base: str | None = None
    workdir: str = "/"  # the last WORKDIR: where commands start
    has_workdir: bool = False  # the Dockerfile set a WORKDIR
    env: dict[str, str] = Field(default_factory=dict)  # ENV values of the final image
    steps: list[BuildStep] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    cmd: list[str] | None = None  # the image's CMD (shell form: [*SHELL, line]); not part of the layer
    entrypoint: list[str] | None = None  # the image's ENTRYPOINT
    expose: list[int] = Field(default_factory=list)  # EXPOSE ports

    def start_argv(self) -> list[str] | None:
        """What a container of the image runs as its first process when the agent's machine is
        started with ``sleep infinity`` (Terminal-Bench's compose command): the ENTRYPOINT with
        that as its arguments (a script ending in ``exec "$@"`` goes on sleeping), or None."""
        return [*self.entrypoint, "sleep", "infinity"] if self.entrypoint else None

    def content_hash(self, context_dir: Path) -> str:
        """Hash of the plan and of every file COPY/ADD reads: equal hashes build equal layers."""
        digest = hashlib.sha256()
        digest.update(self.model_dump_json(exclude={"notes", "cmd", "entrypoint", "expose"}).encode())
        context = Path(context_dir)
        for step in self.steps:
            for source in step.sources:
                for path in sorted(_expand(context, source)):
                    _hash_tree(digest, context, path)
        return digest.hexdigest()


def unsupported(reason: str) -> BuildPlan:
    return BuildPlan(supported=False, reason=f"needs_container: {reason}")


def accepted_base(image: str) -> bool:
    """Whether a recipe builds `image` from packages: ``images.resolve_base`` decides, so a base
    this check accepts is one the build later finds a recipe for."""
    from ..images import resolve_base  # noqa: PLC0415 - the recipes load on first use (images/__init__.py)

    return resolve_base(image) is not None


_HEREDOC = re.compile(r"<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; drop comments and blank lines; keep a heredoc's body (``RUN <<EOF``,
    ``COPY <<EOT /path``, ``cat <<EOF > f`` in a RUN) with its lines, up to its delimiter, joined to
    its instruction by newlines. (line number, text)."""
    out: list[tuple[int, str]] = []
    current, start = "", 0
    raw_lines = text.splitlines()
    i = 0
    while i < len(raw_lines):
        number, raw = i + 1, raw_lines[i]
        i += 1
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not current:
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        op = current.split(" ", 1)[0].upper()
        if op in ("RUN", "COPY", "ADD"):
            for dash, _, word in _HEREDOC.findall(current):
                body: list[str] = []
                while i < len(raw_lines):
                    line = raw_lines[i]
                    i += 1
                    if (line.lstrip("\t") if dash else line).strip() == word:
                        break
                    body.append(line.lstrip("\t") if dash else line)
                current += "\n" + "\n".join(body + [word])
        out.append((start, current))
        current = ""
    if current.strip():
        out.append((start, current))
    return out


def _heredoc_bodies(rest: str) -> tuple[str, dict[str, str]]:
    """(the instruction's own line, {delimiter: body}) for an instruction with heredocs."""
    head, *lines = rest.split("\n")
    bodies: dict[str, str] = {}
    for _, _, word in _HEREDOC.findall(head):
        end = lines.index(word) if word in lines else len(lines)
        bodies[word] = "\n".join(lines[:end]) + "\n"
        lines = lines[end + 1:]
    return head, bodies


def _stage_refs(lines: list[tuple[int, str]]) -> set[str]:
    """Stages later instructions read from (``COPY --from=NAME``, ``RUN --mount=…from=NAME``)."""
    refs: set[str] = set()
    for _, line in lines:
        for m in re.finditer(r"--(?:from|mount=[^ ]*from)=([^ ,]+)", line):
            refs.add(m.group(1).lower())
    return refs


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def _substitute(text: str, values: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        value = values.get(name, "")
        if match.group(2) == "-":
            return value or match.group(3)
        if match.group(2) == "+":
            return match.group(3) if value else ""
        return value

    return _VAR.sub(one, text)


def _split_flags(args: str) -> tuple[dict[str, str], str]:
    flags: dict[str, str] = {}
    rest = args
    while rest.startswith("--"):
        token, _, rest = rest.partition(" ")
        key, _, value = token[2:].partition("=")
        flags[key] = value
        rest = rest.lstrip()
    return flags, rest


def _json_or_words(args: str) -> list[str] | None:
    if args.startswith("["):
        try:
            value = json.loads(args)
        except json.JSONDecodeError:
            return None
        return [str(v) for v in value] if isinstance(value, list) else None
    return None


def _pairs(args: str) -> dict[str, str]:
    """ENV/ARG/LABEL: ``k=v k2="v 2"`` or the legacy ``k value with spaces``."""
    words = shlex.split(args, posix=True)
    if words and "=" not in words[0]:
        return {words[0]: args.split(None, 1)[1] if len(words) > 1 else ""}
    return dict(w.partition("=")[::2] for w in words)


def parse_dockerfile(path: Path, context_dir: Path | None = None) -> BuildPlan:
    """Read a Dockerfile into a plan (``supported=False`` with the reason when outside the subset)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return unsupported(f"cannot read {path}: {exc}")
    base: str | None = None
    cwd, has_workdir = "/", False
    env: dict[str, str] = {}
    base_env: dict[str, str] = {}  # the base image's own ENV (its recipe's PATH): what ${PATH} reads before an ENV sets it
    args: dict[str, str] = {}
    shell = ["/bin/sh", "-c"]
    steps: list[BuildStep] = []
    notes: list[str] = []
    cmd: list[str] | None = None
    entrypoint: list[str] | None = None
    expose: list[int] = []
    lines = _logical_lines(text)
    refs = _stage_refs(lines)
    for number, line in lines:
        instruction, _, rest = line.partition(" ")
        op, rest = instruction.upper(), rest.strip()
        where = f"{path.name} line {number}"
        values = {**base_env, **args, **env}
        if op == "FROM":
            if base is not None:  # an earlier stage nothing reads from: BuildKit builds only the last
                if refs:
                    return unsupported(f"{where}: a second FROM whose earlier stage is copied from "
                                       "(multi-stage builds need a container engine)")
                notes.append(f"{where}: the stage before this FROM is not used by the image: skipped, as BuildKit does")
                base, cwd, has_workdir, env, shell, steps = None, "/", False, {}, ["/bin/sh", "-c"], []
                cmd, entrypoint, expose = None, None, []
            flags, rest = _split_flags(rest)
            image = _substitute(rest.split()[0], values) if rest else ""
            if not accepted_base(image):
                return unsupported(f"{where}: FROM {image}: no recipe builds the image {image} from packages "
                                   "(a container engine pulls it: --sandbox podman or docker)")
            base = image
            from ..images import resolve_base  # noqa: PLC0415 - the base image's own WORKDIR and ENV

            recipe = resolve_base(image)
            base_env = dict(recipe.env) if recipe is not None else {}
            if recipe is not None and recipe.workdir != "/":
                cwd, has_workdir = recipe.workdir, True
            continue
        if base is None and op != "ARG":
            return unsupported(f"{where}: {op} before FROM")
        if op == "ARG":
            for key, value in _pairs(rest).items():
                args.setdefault(key, _substitute(value, values))
        elif op == "ENV":
            for key, value in _pairs(rest).items():
                env[key] = _substitute(value, {**base_env, **args, **env})
            steps.append(BuildStep(op="ENV", line=number, cwd=cwd, env=dict(env)))
        elif op == "WORKDIR":
            target = _substitute(rest, values).strip().strip('"')
            cwd = os.path.normpath(os.path.join(cwd, target))
            has_workdir = True
            steps.append(BuildStep(op="WORKDIR", line=number, dest=cwd, cwd=cwd))
        elif op == "USER":
            user = _substitute(rest, values).strip()
            if user not in ("root", "0", "root:root", "0:0"):
                return unsupported(f"{where}: USER {user} (only USER root is supported)")
            steps.append(BuildStep(op="USER", line=number, cwd=cwd))
        elif op == "SHELL":
            new_shell = _json_or_words(rest)
            if not new_shell:
                return unsupported(f"{where}: SHELL needs the JSON form")
            shell = new_shell
        elif op == "RUN":
            flags, rest = _split_flags(rest)
            if any(k == "mount" for k in flags):
                return unsupported(f"{where}: RUN --mount (BuildKit mounts) is not supported")
            head, bodies = _heredoc_bodies(rest)
            if bodies and re.fullmatch(r"<<-?([\"']?)\w+\1", head.strip()):  # RUN <<EOF: the body is the script
                argv = [*shell, next(iter(bodies.values()))]
            else:  # a shell heredoc inside the command (cat <<EOF > f): the shell reads it as written
                exec_form = None if bodies else _json_or_words(rest)
                argv = exec_form if exec_form is not None else [*shell, rest]
            steps.append(BuildStep(op="RUN", line=number, argv=argv, cwd=cwd, env={**args, **env}))
        elif op in ("COPY", "ADD"):
            flags, rest = _split_flags(rest)
            if "from" in flags:
                return unsupported(f"{where}: {op} --from (multi-stage builds need a container engine)")
            head, bodies = _heredoc_bodies(rest)
            if bodies:  # COPY <<EOT /path: the file's content is the heredoc's body
                words = [_substitute(w, values) for w in shlex.split(_HEREDOC.sub("", head))]
                if len(words) != 1 or len(bodies) != 1:
                    return unsupported(f"{where}: {op} with heredocs to several files")
                dest = os.path.normpath(os.path.join(cwd, words[0]))
                if words[0].endswith("/"):
                    dest = os.path.join(dest, next(iter(bodies)))
                script = (f"mkdir -p {shlex.quote(os.path.dirname(dest) or '/')} && printf %s "
                          f"{shlex.quote(next(iter(bodies.values())))} > {shlex.quote(dest)}")
                if flags.get("chmod"):
                    script += f" && chmod {shlex.quote(flags['chmod'])} {shlex.quote(dest)}"
                steps.append(BuildStep(op="RUN", line=number, argv=["/bin/sh", "-c", script], cwd=cwd))
                continue
            words = _json_or_words(rest) or shlex.split(rest)
            words = [_substitute(w, values) for w in words]
            if len(words) < 2:
                return unsupported(f"{where}: {op} needs a source and a destination")
            *sources, dest = words
            for source in sources:
                if re.match(r"^[a-z][a-z0-9+.-]*://", source) or source.startswith("git@"):
                    return unsupported(f"{where}: {op} of a URL ({source}) fetches at build time")
            absolute = os.path.normpath(os.path.join(cwd, dest))
            steps.append(BuildStep(
                op=op, line=number, sources=sources, dest=absolute,
                dest_is_dir=dest.endswith("/") or len(sources) > 1 or any(c in "".join(sources) for c in "*?["),
                chown=flags.get("chown"), chmod=flags.get("chmod"), cwd=cwd,
            ))
        elif op in ("CMD", "ENTRYPOINT"):
            form = _json_or_words(rest)
            argv = form if form is not None else [*shell, _substitute(rest, values)]
            if op == "CMD":
                cmd = argv
            else:
                entrypoint, cmd = argv, None  # a new ENTRYPOINT resets the CMD, as Docker does
        elif op == "EXPOSE":
            for word in _substitute(rest, values).split():
                if word.split("/")[0].isdigit() and int(word.split("/")[0]) not in expose:
                    expose.append(int(word.split("/")[0]))
        elif op in _IGNORED:
            continue
        else:
            return unsupported(f"{where}: the {op} instruction is not supported")
    if base is None:
        return unsupported(f"{path.name}: no FROM")
    if "t-bench" in base or base.startswith(("ubuntu", "python")):
        notes.append(f"{base} is stood in for by this host's root (its OS and Python versions apply)")
    return BuildPlan(supported=True, base=base, workdir=cwd, has_workdir=has_workdir,
                     env=env, steps=steps, notes=notes, cmd=cmd, entrypoint=entrypoint, expose=expose)


def missing_sources(path: Path, context_dir: Path) -> str | None:
    """The first COPY/ADD source of the Dockerfile at `path` that its build context lacks, as
    ``Dockerfile line N: COPY weights.pt: no such file in the build context``; None when every one is
    there. Read over every stage (not ``--from``, URLs or heredocs), with ARG/ENV values substituted,
    as Docker resolves them: a path must exist, a glob must match something (``COPY . .`` always does)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # parse_dockerfile says why it cannot be read
    context = Path(context_dir)
    values: dict[str, str] = {}
    for number, line in _logical_lines(text):
        instruction, _, rest = line.partition(" ")
        op, rest = instruction.upper(), rest.strip()
        try:
            if op in ("ARG", "ENV"):
                for key, value in _pairs(rest).items():
                    if op == "ENV" or key not in values:
                        values[key] = _substitute(value, values)
                continue
            if op not in ("COPY", "ADD"):
                continue
            flags, rest = _split_flags(rest)
            head, bodies = _heredoc_bodies(rest)
            if "from" in flags or bodies:
                continue
            words = [_substitute(w, values) for w in (_json_or_words(head) or shlex.split(head))]
        except ValueError:  # unbalanced quotes: parse_dockerfile reports the line
            continue
        for source in words[:-1]:
            if re.match(r"^[a-z][a-z0-9+.-]*://", source) or source.startswith("git@"):
                continue
            try:
                found = any(os.path.lexists(match) for match in _expand(context, source))
            except (ValueError, NotImplementedError, OSError):  # a pattern glob refuses: the build says
                continue
            if not found:
                return f"{Path(path).name} line {number}: {op} {source}: no such file in the build context"
    return None


def _expand(context: Path, source: str) -> list[Path]:
    if any(c in source for c in "*?["):
        return [p for p in context.glob(source.lstrip("/"))]
    return [context / source.lstrip("/")]


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _hash_tree(digest: "hashlib._Hash", context: Path, path: Path) -> None:
    try:
        entries = [path] + (sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [])
    except OSError:
        entries = [path]
    for entry in entries:
        rel = os.path.relpath(entry, context)
        try:
            info = entry.lstat()
        except OSError:
            digest.update(f"missing {rel}\n".encode())
            continue
        digest.update(f"{rel} {info.st_mode:o}\n".encode())
        if entry.is_symlink():
            digest.update(os.readlink(entry).encode())
        elif entry.is_file():
            key = (str(entry), info.st_mtime_ns, info.st_size)
            if key not in _FILE_DIGESTS:
                file_digest = hashlib.sha256()
                with open(entry, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        file_digest.update(block)
                _FILE_DIGESTS[key] = file_digest.hexdigest()
            digest.update(_FILE_DIGESTS[key].encode())
