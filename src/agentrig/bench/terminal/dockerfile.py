"""Dockerfiles and compose files read for the sandboxes that have no container engine.

``parse_dockerfile`` turns a task's Dockerfile into a ``BuildPlan``: the steps ``sandbox.build``
replays once per task on top of the host's root (the host stands in for the base image). The
subset, documented in docs/terminal.md:

- ``FROM`` one accepted base (``ACCEPTED_BASES``), once (no multi-stage builds);
- ``RUN`` (shell or exec form), ``WORKDIR``, ``ENV``, ``ARG``, ``SHELL``, ``USER root``;
- ``COPY``/``ADD`` of files from the build context (``--chown``/``--chmod`` honoured; ``ADD``
  unpacks local tar archives); not ``--from``, not URLs;
- ``CMD``, ``ENTRYPOINT``, ``LABEL``, ``EXPOSE``, ``VOLUME``, ``STOPSIGNAL``, ``HEALTHCHECK``,
  ``MAINTAINER``, ``ONBUILD`` are accepted and have no effect (the sandbox is a shell).

Anything else gives ``BuildPlan(supported=False, reason="needs_container: ...")`` — the task is
skipped under bwrap and local, never approximated. ``check_compose`` accepts the Terminal-Bench
template (one service built from the Dockerfile, ``sleep infinity``) and names what else it sees.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

# Base images the host's root stands in for (listed in docs/terminal.md).
ACCEPTED_BASES: tuple[str, ...] = (
    "ghcr.io/laude-institute/t-bench/ubuntu-*, python-3-*, debian-* (any tag)",
    "ubuntu (any tag)", "debian (any tag)", "buildpack-deps (any tag)",
    "python:3, python:3.X[-slim][-bookworm|-bullseye|-trixie] (not alpine)",
)
_TBENCH_BASE = re.compile(r"ghcr\.io/laude-institute/t-bench/(ubuntu-\d\d-\d\d|python-3-\d+(-[\w-]+)?|debian-[\w-]+)")
_PYTHON_TAG = re.compile(r"3(\.\d+)*(-slim)?(-(bookworm|bullseye|trixie))?")
_REGISTRY_PREFIXES = ("docker.io/library/", "library/", "index.docker.io/library/")
_IGNORED = {"CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "VOLUME", "STOPSIGNAL", "HEALTHCHECK", "MAINTAINER", "ONBUILD"}
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

    def content_hash(self, context_dir: Path) -> str:
        """Hash of the plan and of every file COPY/ADD reads: equal hashes build equal layers."""
        digest = hashlib.sha256()
        digest.update(self.model_dump_json(exclude={"notes"}).encode())
        context = Path(context_dir)
        for step in self.steps:
            for source in step.sources:
                for path in sorted(_expand(context, source)):
                    _hash_tree(digest, context, path)
        return digest.hexdigest()


def unsupported(reason: str) -> BuildPlan:
    return BuildPlan(supported=False, reason=f"needs_container: {reason}")


def accepted_base(image: str) -> bool:
    name = image.split("@")[0]
    for prefix in _REGISTRY_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    repo, tag = name.rsplit(":", 1) if ":" in name.rsplit("/", 1)[-1] else (name, "")
    if "alpine" in tag or "windows" in tag:
        return False
    if _TBENCH_BASE.fullmatch(repo) or repo in ("ubuntu", "debian", "buildpack-deps"):
        return True
    return repo == "python" and (not tag or bool(_PYTHON_TAG.fullmatch(tag)))


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
    args: dict[str, str] = {}
    shell = ["/bin/sh", "-c"]
    steps: list[BuildStep] = []
    notes: list[str] = []
    lines = _logical_lines(text)
    refs = _stage_refs(lines)
    for number, line in lines:
        instruction, _, rest = line.partition(" ")
        op, rest = instruction.upper(), rest.strip()
        where = f"{path.name} line {number}"
        values = {**args, **env}
        if op == "FROM":
            if base is not None:  # an earlier stage nothing reads from: BuildKit builds only the last
                if refs:
                    return unsupported(f"{where}: a second FROM whose earlier stage is copied from "
                                       "(multi-stage builds need a container engine)")
                notes.append(f"{where}: the stage before this FROM is not used by the image: skipped, as BuildKit does")
                base, cwd, has_workdir, env, shell, steps = None, "/", False, {}, ["/bin/sh", "-c"], []
            flags, rest = _split_flags(rest)
            image = _substitute(rest.split()[0], values) if rest else ""
            if not accepted_base(image):
                return unsupported(f"{where}: FROM {image} is not a supported base (the host root stands in for Ubuntu/Debian/Python bases only)")
            base = image
            from .images import resolve_base  # noqa: PLC0415 - the base image's own WORKDIR and ENV

            recipe = resolve_base(image)
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
                env[key] = _substitute(value, {**args, **env})
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
        elif op in _IGNORED:
            continue
        else:
            return unsupported(f"{where}: the {op} instruction is not supported")
    if base is None:
        return unsupported(f"{path.name}: no FROM")
    if "t-bench" in base or base.startswith(("ubuntu", "python")):
        notes.append(f"{base} is stood in for by this host's root (its OS and Python versions apply)")
    return BuildPlan(supported=True, base=base, workdir=cwd, has_workdir=has_workdir,
                     env=env, steps=steps, notes=notes)


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


_COMPOSE_SERVICE_KEYS = {
    "build", "image", "container_name", "command", "environment", "volumes", "network_mode",
    "networks", "deploy", "working_dir", "tty", "stdin_open", "init", "entrypoint", "labels",
}


def _service_what(service: Any) -> str:
    """What a compose service runs: the image it pulls or what it builds."""
    service = service if isinstance(service, dict) else {}
    build = service.get("build")
    if isinstance(build, dict):
        name = build.get("dockerfile", "Dockerfile")
        return f"builds {build.get('context', '.')}/{name}".replace("./", "", 1) if name != "Dockerfile" \
            else f"builds {build.get('context', '.')}"
    if build is not None:
        return f"builds {build}"
    return f"image {service.get('image')}" if service.get("image") else "no image"


def agent_service(services: dict[str, Any]) -> str:
    """The service the agent works in: the one Terminal-Bench names its client container
    (``container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}``), else ``client``, else the first."""
    for name, service in services.items():
        if isinstance(service, dict) and "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME" in str(service.get("container_name", "")):
            return name
    return "client" if "client" in services else next(iter(services))


def services_reason(name: str, services: dict[str, Any]) -> str:
    """``needs_services: …``: the compose file runs services beside the agent's machine (a
    database, an API, a mock server), which no sandbox here starts; names each and what it runs."""
    agent = agent_service(services)
    others = [f"{n} ({_service_what(s)})" for n, s in services.items() if n != agent]
    return (f"needs_services: {name} runs {len(others)} service(s) beside the agent's '{agent}': "
            f"{', '.join(others)}; the sandbox is one machine (a container engine with compose runs them)")


def _read_services(path: Path) -> Any:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return (data or {}).get("services") if isinstance(data, dict) else None


def compose_services(path: Path) -> dict[str, Any]:
    """The compose file's services by name ({} when it cannot be read: ``check_compose`` says why)."""
    try:
        services = _read_services(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return services if isinstance(services, dict) else {}


_SIZE = re.compile(r"(\d+)([kmg]?)b?", re.IGNORECASE)


def compose_tmpfs(path: Path) -> list[tuple[str, int | None, int | None]]:
    """The agent service's ``tmpfs`` mounts as (path, size in bytes, mode): Docker's
    ``/root:size=100M,mode=755`` form. Raises ValueError for a form we cannot honour."""
    services = compose_services(path)
    if not services:
        return []
    service = services.get(agent_service(services)) or {}
    entries = service.get("tmpfs") or []
    out: list[tuple[str, int | None, int | None]] = []
    for entry in [entries] if isinstance(entries, str) else entries:
        target, _, options = str(entry).partition(":")
        if not target.startswith("/") or target == "/":
            raise ValueError(f"tmpfs {entry!r} is not an absolute path below /")
        size = mode = None
        for option in filter(None, options.split(",")):
            key, _, value = option.partition("=")
            if key == "size" and (m := _SIZE.fullmatch(value)):
                size = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
            elif key == "mode" and re.fullmatch(r"[0-7]{3,4}", value):
                mode = int(value, 8)
            else:
                raise ValueError(f"tmpfs option {option!r} of {entry!r} is not supported (size=, mode=)")
        out.append((os.path.normpath(target), size, mode))
    return out


def host_platform() -> str:
    """This machine as a container platform (``linux/amd64``, ``linux/arm64``): what ``platform:`` may name."""
    machine = os.uname().machine
    return "linux/" + {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm/v7"}.get(machine, machine)


def check_compose(path: Path) -> str | None:
    """None when the compose file is the single-service template (the Dockerfile alone decides);
    else ``needs_container: why``."""
    path = Path(path)
    try:
        services = _read_services(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return f"needs_container: cannot read {path.name}: {exc}"
    if not isinstance(services, dict) or not services:
        return f"needs_container: {path.name} defines no services"
    if len(services) > 1:
        return services_reason(path.name, services)
    name, service = next(iter(services.items()))
    service = service or {}
    extra = sorted(set(service) - _COMPOSE_SERVICE_KEYS - {"platform", "tmpfs"})
    if extra:
        return f"needs_container: service {name!r} in {path.name} uses {', '.join(extra)}"
    try:
        compose_tmpfs(path)
    except ValueError as exc:
        return f"needs_container: service {name!r} in {path.name}: {exc}"
    platform = service.get("platform")
    if platform is not None and str(platform) != host_platform():
        return f"needs_container: service {name!r} in {path.name} is built for {platform}; this machine is {host_platform()}"
    build = service.get("build")
    if build is None:
        return f"needs_container: service {name!r} in {path.name} runs a prebuilt image ({service.get('image')})"
    context = str(build.get("context", ".")) if isinstance(build, dict) else str(build)
    dockerfile = str(build.get("dockerfile", "Dockerfile")) if isinstance(build, dict) else "Dockerfile"
    inside = (path.parent / context).resolve()
    if not (inside == path.parent.resolve() or str(inside).startswith(str(path.parent.resolve()) + os.sep)) \
            or "/" in dockerfile.removeprefix("./"):
        return f"needs_container: service {name!r} builds {dockerfile} from {context} (not a Dockerfile of the task's own directories)"
    for volume in service.get("volumes") or []:
        text = volume if isinstance(volume, str) else str(volume.get("source", ""))
        if "T_BENCH_" not in text:
            return f"needs_container: service {name!r} mounts {text}"
    return None
