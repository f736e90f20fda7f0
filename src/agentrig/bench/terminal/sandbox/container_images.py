"""Images for the docker/podman sandbox: the task's base images and its own image.

**Base images** (a Dockerfile's ``FROM``): used when the engine has the image; else pulled; when
the pull fails (no registry reachable) and agentrig has a recipe for the reference, the root built
from packages (``images``) is imported under that very name (``import_base``, also
``agentrig images build --import podman|docker``), so ``FROM`` resolves locally. An imported base
carries the label ``agentrig.base=<recipe key>`` and is kept (cached by design, like the root);
``agentrig images rm`` removes it with the root. One whose recipe changed is imported anew.

**Task images**: built once per runner process and Dockerfile (podman ``--layers=false``: no
intermediate images; docker's classic builder ``--no-cache``: no other build stands on ours),
tagged ``agentrig-task-<id>:<hash>-<pid>`` and labelled ``agentrig.owner=<pid>@<boot>``; removed
when the process exits (``remove_task_images``, at exit), and by the next runner's first sandbox
start when the process was killed (``engine.reap_orphan_images``).

With ``build_network = "host-settings"`` a podman build gets the host's package-index settings
(``hostsettings.container_settings``) in a directory mounted read-only at ``/dev/.agentrig-host-settings``
(``/dev`` is the build's own tmpfs: no mount point is left in a layer), and the variables that name
them as build arguments declared after each ``FROM`` of a copy of the Dockerfile (arguments are not
in the image's ``ENV``; their values — paths only — are in its history). docker's classic builder
mounts nothing at build time: its builds copy them in a first layer and remove them in a last
(`docker_settings.py`), squashed where the daemon is experimental.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from ..core.base import DISK_FULL, SandboxError, TaskBuildError
from ..core.buildfail import command_fetch, earlier_fetch
from ..core.hostsettings import container_settings
from ..core.netfail import network_failure, registry_outage, settings_fault
from .base_roots import in_thread
from .containerfile import HEREDOC_CONTEXT, without_heredocs
from .docker_settings import SETTINGS_DIR, with_settings_layers
from .engine import OWNER_LABEL, _call, _owner, engine_cli, labelled

BASE_LABEL = "agentrig.base"
SETTINGS_MOUNT = "/dev/.agentrig-host-settings"
_FROM = re.compile(r"^[ \t]*FROM[ \t]+((?:--\S+[ \t]+)*)(\S+)(?:[ \t]+AS[ \t]+(\S+))?[ \t]*$", re.IGNORECASE | re.MULTILINE)

_built: dict[tuple, tuple[str, list[str]]] = {}  # (engine, dockerfile, context, mode) -> (tag, cli)
_failed: dict[tuple, TaskBuildError] = {}  # builds that failed in this process (the task's own fault)
_locks: dict[tuple, asyncio.Lock] = {}


def from_refs(dockerfile_text: str) -> list[str]:
    """The images a Dockerfile's FROM lines name (not earlier stages, ``scratch`` or ``$ARG`` refs)."""
    refs, stages = [], set()
    for match in _FROM.finditer(dockerfile_text):
        ref, stage = match.group(2), match.group(3)
        if ref.lower() not in stages and ref != "scratch" and "$" not in ref and ref not in refs:
            refs.append(ref)
        if stage:
            stages.add(stage.lower())
    return refs


_COPY_FROM = re.compile(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*?--from=(\S+)", re.IGNORECASE | re.MULTILINE)


def copy_from_images(dockerfile_text: str) -> list[str]:
    """The images a Dockerfile's ``COPY --from=`` lines name (not its own stages or their numbers)."""
    stages = {m.group(3).lower() for m in _FROM.finditer(dockerfile_text) if m.group(3)}
    refs: list[str] = []
    for match in _COPY_FROM.finditer(dockerfile_text):
        ref = match.group(1).strip("\"'")
        if ref.lower() not in stages and not ref.isdigit() and "$" not in ref and ref not in refs:
            refs.append(ref)
    return refs


def _label_of(cli: list[str], ref: str) -> str | None:
    """The image's agentrig.base label ('' when it has none); None when the engine has no such image."""
    proc = subprocess.run([*cli, "image", "inspect", "--format", f'{{{{index .Config.Labels "{BASE_LABEL}"}}}}', ref],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return None
    value = proc.stdout.strip()
    return "" if value in ("", "<no value>") else value


def qualified(ref: str) -> str:
    """The reference as a registry names it: ``ubuntu:24.04`` -> ``docker.io/library/ubuntu:24.04``
    (an image imported under that name is what both ``FROM ubuntu:24.04`` and the full name find).
    A digest is dropped (``name:tag@sha256:…`` -> ``name:tag``): an engine tags no image by digest,
    and a root built from packages has not the pinned image's digest anyway."""
    ref = ref.split("@", 1)[0]
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if rest else f"docker.io/library/{ref}"


def import_base(ref: str, engine: str, progress: Callable[[str], None] | None = None, *,
                host_settings: bool = False, cancel: threading.Event | None = None) -> str:
    """Import the root built from packages for `ref` into `engine` under the name `ref` (building
    the root first when needed); returns the image reference. Nothing is done when the engine already
    has it imported from the same recipe. A short name is imported under its full name (``qualified``).
    Raises SandboxError (no recipe, build or import failed); ``InterruptedError`` when ``cancel``
    is set while it waits for another import or builds the root (``base_roots.in_thread``)."""
    from ..images import ensure_base_root, images_dir, resolve_base
    from ..images.builder import lock_file

    recipe = resolve_base(ref)
    if recipe is None:
        raise SandboxError(f"no recipe builds the base image {ref} from packages")
    cli = engine_cli(engine)
    ref = qualified(ref)
    base = images_dir()
    base.mkdir(parents=True, exist_ok=True)
    fd = lock_file(base / f"{recipe.key()}.import-{engine}.lock", cancel)
    try:
        if _label_of(cli, ref) == recipe.key():
            return ref
        before = subprocess.run([*cli, "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True, text=True,
                                timeout=60).stdout.strip()
        root = ensure_base_root(recipe, progress, host_settings=host_settings, cancel=cancel)
        (progress or (lambda _m: None))(f"importing base image {ref} into {engine} from {root}")
        # import --change takes no SHELL (the recipes' shell is the default /bin/sh -c anyway)
        changes = [c for c in recipe.image_changes() if not c.startswith("SHELL ")]
        changes.append(f"LABEL {BASE_LABEL}={recipe.key()}")
        quiet = ["-q"] if engine == "podman" else []  # docker's import has no -q (it prints the id alone)
        argv = [*cli, "import", *quiet, *[a for c in changes for a in ("--change", c)], "-", ref]
        tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        try:
            done = subprocess.run(argv, stdin=tar.stdout, capture_output=True, text=True)
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar.wait()
        if done.returncode != 0 or tar.returncode != 0:
            raise SandboxError(f"importing {root} into {engine} as {ref} failed: "
                               f"{(done.stderr or tar.stderr.read().decode(errors='replace')).strip()[-500:]}")
        if before:  # the image the name stood for before (an older import): dropped unless in use
            subprocess.run([*cli, "rmi", before], capture_output=True, timeout=120)
        return ref
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def imported_images(engine: str) -> list[tuple[str, str]]:
    """(recipe key, image name) of every image imported into `engine` from a root (none when the
    engine does not answer)."""
    rows = labelled(engine_cli(engine), "images", BASE_LABEL)
    return sorted({(key, name) for _, name, key in rows if key and not name.startswith("<none>")})


def remove_imported(engine: str, key: str) -> list[str]:
    """Remove the images imported into `engine` from the root with recipe key `key`; their names."""
    cli = engine_cli(engine)
    return [name for k, name in imported_images(engine)
            if k == key and subprocess.run([*cli, "rmi", name], capture_output=True, timeout=120).returncode == 0]


async def ensure_bases(engine: str, dockerfile_text: str, *, host_settings: bool = False) -> dict[str, str]:
    """Every FROM image present in the engine: found, pulled, or imported from a root built from
    packages. Returns the FROM references to write otherwise ({``name:tag@sha256:…``: the name it
    was imported under}: a digest names only the pinned image itself). Raises TaskBuildError
    (needs_network) when one can be neither pulled nor built."""
    from ..images import resolve_base

    cli = engine_cli(engine)
    renamed: dict[str, str] = {}
    for ref in from_refs(dockerfile_text):
        recipe = resolve_base(ref)
        label = await asyncio.to_thread(_label_of, cli, ref)
        if label is not None and (not label or recipe is None or label == recipe.key()):
            continue  # present: pulled, the user's own, or imported from the current recipe
        if "@" in ref and recipe is not None and label is None and \
                await asyncio.to_thread(_label_of, cli, qualified(ref)) == recipe.key():
            renamed[ref] = qualified(ref)  # imported before (its pull failed then): not pulled again
            continue
        if label is None:
            code, out = await _call([*cli, "pull", "-q", ref], 600)
            if code == 0:
                continue
        if recipe is None:
            last = out.strip().splitlines()[-1] if out.strip() else f"exit {code}"
            raise TaskBuildError(f"the base image {ref} cannot be pulled ({last}) and agentrig has no recipe to build it "
                                 "from packages", exclusion="needs_network")

        def progress(message: str) -> None:
            print(f"agentrig: {message}", file=sys.stderr, flush=True)

        imported = await in_thread(import_base, ref, engine, progress, host_settings=host_settings)
        if "@" in ref:
            renamed[ref] = imported
    for ref in copy_from_images(dockerfile_text):  # podman's builder does not pull these itself
        if await asyncio.to_thread(_label_of, cli, ref) is not None:
            continue
        code, out = await _call([*cli, "pull", "-q", ref], 600)
        if code != 0:
            last = out.strip().splitlines()[-1] if out.strip() else f"exit {code}"
            raise TaskBuildError(f"the image {ref} that a COPY --from copies from cannot be pulled ({last}), and no "
                                 "recipe builds it from packages", exclusion="needs_network")
    return renamed


def _renamed_froms(text: str, renamed: dict[str, str]) -> str:
    """The Dockerfile with each FROM reference of `renamed` replaced by its new name."""
    def one(m: re.Match[str]) -> str:
        new = renamed.get(m.group(2))
        return m.group(0) if new is None else m.group(0)[:m.start(2) - m.start(0)] + new + m.group(0)[m.end(2) - m.start(0):]

    return _FROM.sub(one, text) if renamed else text


def _with_build_args(text: str, names: list[str]) -> str:
    """The Dockerfile with ``ARG NAME`` for each of `names` after every FROM line."""
    decl = "".join(f"ARG {n}\n" for n in names)
    return _FROM.sub(lambda m: m.group(0) + "\n" + decl.rstrip("\n"), text)


async def task_image(engine: str, task: Any, *, build_network: bool | str, timeout_s: float) -> str:
    """The task's image, built once per process (see the module's docstring); returns its tag."""
    dockerfile = Path(task.dockerfile)
    context = Path(getattr(task, "build_context", None) or dockerfile.parent)
    key = (engine, str(dockerfile), str(context), str(build_network))
    loop_key = (id(asyncio.get_running_loop()), key)
    lock = _locks.setdefault(loop_key, asyncio.Lock())
    async with lock:
        if key in _built:
            return _built[key][0]
        if key in _failed:  # the task's own build failed: its other trials end the same way, unbuilt
            raise TaskBuildError(str(_failed[key]), exclusion=_failed[key].exclusion)
        try:
            return await _build(engine, task, key, dockerfile, context, build_network, timeout_s)
        except TaskBuildError as exc:
            _failed[key] = exc
            raise


# podman: "STEP 3/9: RUN …" then "Error: building at STEP …: exit status N"; docker's classic
# builder: "Step 3/9 : RUN …" then "The command '/bin/sh -c …' returned a non-zero code: N"
_STEP = re.compile(r"^(?:STEP|Step) \d+/\d+ ?: ", re.MULTILINE)
_EXIT_STATUS = re.compile(r"^(?:Error: building at STEP .*exit status|The command .* returned a non-zero code:) (\d+)\s*$",
                          re.MULTILINE)


_STEP_RUN = re.compile(r"^\d+/\d+ ?: ?RUN\s+")  # a step's header without "STEP ": "3/9: RUN " (podman), "3/9 : RUN " (docker)


def _earlier_steps(out: str, starts: list[int]) -> list[tuple[str, str]]:
    """(step number, network_failure's finding) of each RUN step before the failing one whose
    output shows a fetch that could not reach its host (it went on: its status was another's)."""
    found: list[tuple[str, str]] = []
    for begin, end in zip(starts, starts[1:]):
        text = out[begin:end].split(" ", 1)[-1]  # "3/9: RUN …\n<its output>"
        header = text.split("\n", 1)[0]
        if _STEP_RUN.match(header) and (why := network_failure(text.split("\n", 1)[-1] if "\n" in text else "",
                                                                _STEP_RUN.sub("", header))):
            found.append((header.split(":", 1)[0].strip(), why))
    return found


def build_error(engine: str, out: str, build_network: bool | str) -> Exception:
    """What a failed ``ENGINE build`` (its whole output `out`) means: the host's fault (a full disk,
    an outage of a registry this machine is meant to reach: SandboxError, the trial invalid) or the
    task's (``TaskBuildError``: needs_network when its failing step could not reach a host)."""
    # the failing step: its header line ("STEP 14/28: RUN wget …" at a line's start; the closing
    # "Error: building at STEP …" line names it too), then its output
    starts = [m.start() for m in _STEP.finditer(out)]
    step = out[starts[-1] + len("STEP "):] if starts else out
    if DISK_FULL in step:  # the image's layers live on this machine's disk: the host's fault
        return SandboxError(f"{engine} build failed: this machine's disk is full (No space left on device); "
                           f"free space (`{engine} system prune`) and run again\n{out[-1000:]}")
    status = _EXIT_STATUS.findall(out)  # podman's closing line: a quiet fetch (wget -q) says only this
    unreached = network_failure(step, step.split("\n", 1)[0], int(status[-1]) if status else None)
    said = "it "
    run = bool(starts) and bool(_STEP_RUN.match(step))  # the failing step is a RUN
    if unreached is None and run:  # its command read for a fetch of a host this machine cannot resolve
        unreached = command_fetch(_STEP_RUN.sub("", step.split("\n", 1)[0]))
    if unreached is None and run and (earlier := earlier_fetch(_earlier_steps(out, starts))) is not None:
        said = f"STEP {earlier[0]} went on after a fetch that failed: it "  # its pipe's status was sh's (curl … | sh)
        unreached = earlier[1]
    if build_network is not False and (fault := settings_fault(unreached, build_network)):  # this machine's TLS settings
        return SandboxError(f"{engine} build failed: {fault}\n{out[-1000:]}")
    if build_network is not False and (registry := registry_outage(unreached)):  # the plumbing's, not the task's
        return SandboxError(f"{engine} build failed: the package registry {registry} could not be reached "
                           f"from this machine (an outage, or a proxy whose certificate authority the image lacks: set [sandbox] build_network = \"auto\" or \"host-settings\"); run again\n{out[-1000:]}")
    if unreached:  # a fetch that could not reach its host (or a build without network)
        return TaskBuildError(f"{engine} build failed: {said}{unreached}\n{out[-2000:]}", exclusion="needs_network")
    header = re.sub(r"^(\d+/\d+) : ", r"\1: ", step.split("\n", 1)[0][:200]) if starts else ""
    return TaskBuildError(f"{engine} build failed" + (f" at STEP {header}" if header else "") + f":\n{out[-2000:]}")


async def _build(engine: str, task: Any, key: tuple, dockerfile: Path, context: Path, build_network: bool | str,
                 timeout_s: float) -> str:
    cli = engine_cli(engine)
    original = dockerfile.read_text(errors="replace")
    renamed = await ensure_bases(engine, original, host_settings=build_network == "host-settings")
    text = _renamed_froms(original, renamed)
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
    task_id = re.sub(r"[^a-z0-9_.-]", "-", str(getattr(task, "id", "task")).lower())[:80] or "task"
    tag = f"localhost/agentrig-task-{task_id}:{digest}-{os.getpid()}"
    # no cache: another build never stands on our intermediate images, which go with our image (rmi)
    argv = [*cli, "build", *(["--layers=false"] if engine == "podman" else ["--no-cache"]), "--force-rm", "-t", tag,
            "--label", f"{OWNER_LABEL}={_owner()}"]
    if build_network is False:
        argv += ["--network", "none"]
    helper = None  # docker: the image of the heredocs' files (containerfile.py)
    helpers: list[str] = []  # docker: the image of the host's settings files (docker_settings.py)
    with tempfile.TemporaryDirectory(prefix="agentrig-build-") as tmp:
        try:
            built_text = text
            heredocs = Path(tmp) / "heredocs"
            if engine == "podman":  # podman 4.3's builder reads no heredocs (containerfile.py)
                rewritten = without_heredocs(text, heredocs)
                if rewritten is not None:
                    built_text = rewritten
                    argv += ["--build-context", f"{HEREDOC_CONTEXT}={heredocs}"]
            else:  # nor does docker's classic builder, which has no named contexts: an image of the files
                name = f"localhost/agentrig-heredocs-{task_id}:{digest}-{os.getpid()}"
                rewritten = without_heredocs(text, heredocs, source=name, modes_in_files=True)
                if rewritten is not None:
                    built_text = rewritten
                    if heredocs.is_dir():
                        helper = name
                        await _files_image(cli, name, heredocs, timeout_s, "the Dockerfile's heredoc files")
            if build_network == "host-settings" and engine == "podman":
                env = container_settings(Path(tmp) / "settings", SETTINGS_MOUNT)
                built_text = _with_build_args(built_text, sorted(env))
                argv += ["-v", f"{Path(tmp) / 'settings'}:{SETTINGS_MOUNT}:ro"]
                argv += [a for name, value in sorted(env.items()) for a in ("--build-arg", f"{name}={value}")]
            elif build_network == "host-settings":  # docker: copied in a first layer, removed in a last (docker_settings.py)
                env, before = container_settings(Path(tmp) / "settings", SETTINGS_DIR), built_text
                settings_image = f"localhost/agentrig-settings-{task_id}:{digest}-{os.getpid()}"
                users = {ref: await _user_of(cli, ref) for ref in from_refs(built_text)}
                built_text = with_settings_layers(built_text, settings_image, sorted(env), lambda ref: users.get(ref, ""))
                if built_text != before:
                    await _files_image(cli, settings_image, Path(tmp) / "settings", timeout_s, "the host's package-index settings")
                    helpers.append(settings_image)
                    argv += [a for name, value in sorted(env.items()) for a in ("--build-arg", f"{name}={value}")]
                    if await experimental(cli):
                        argv.append("--squash")  # the final image's one new layer: no copy of them at all
            if built_text != original:
                (Path(tmp) / "Dockerfile").write_text(built_text)
            argv += ["-f", str(Path(tmp) / "Dockerfile") if built_text != original else str(dockerfile)]
            code, out = await _call([*argv, str(context)], timeout_s)
        finally:  # the images of the heredocs' files and of the host's settings go with the build
            for name in ([helper] if helper else []) + helpers:
                await _call([*cli, "rmi", name], 60)
    if helpers:  # the settings were copied into layers: the build's images left untagged go too
        await _remove_step_images(cli, tag, out, code == 0 and "--squash" in argv)
    if code != 0:
        await _call([*cli, "rmi", tag], 60)
        raise build_error(engine, _ANSI.sub("", _LEGACY_NOTICE.sub("", out)), build_network)
    _built[key] = (tag, cli)
    return tag


async def _files_image(cli: list[str], name: str, directory: Path, timeout_s: float, what: str) -> None:
    """Build the image `name` (``FROM scratch``) of `directory`'s files, for a docker build to copy from."""
    dockerfile = directory.parent / f"{directory.name}.Dockerfile"
    dockerfile.write_text("FROM scratch\nCOPY . /\n")
    code, out = await _call([*cli, "build", "--no-cache", "--force-rm", "-t", name, "--label", f"{OWNER_LABEL}={_owner()}",
                             "-f", str(dockerfile), str(directory)], timeout_s)
    if code != 0:
        raise SandboxError(f"docker build of {what} failed: {out.strip()[-500:]}")


async def _remove_step_images(cli: list[str], tag: str, out: str, squashed: bool) -> None:
    """Remove the untagged images a docker build left (each step's image of another stage, of a
    failed build; with ``--squash`` the unsquashed image and its steps'): they hold the layer with
    the host's settings. Tagged ones (a base image) are never removed; the final image's own
    ancestors refuse (they have a child)."""
    ids = list(dict.fromkeys(reversed(re.findall(r"^ ---> ([0-9a-f]{12})\s*$", out, re.MULTILINE))))
    if squashed:
        code, comment = await _call([*cli, "history", "--no-trunc", "--format", "{{.Comment}}", tag], 60)
        merged = re.search(r"merge (sha256:[0-9a-f]+) to", comment) if code == 0 else None
        ids = ([merged.group(1)] if merged else []) + ids
    if not ids:
        return
    _, listed = await _call([*cli, "image", "inspect", "--format", "{{.Id}} {{len .RepoTags}}", *ids], 60)
    untagged = [line.split()[0] for line in listed.splitlines() if re.fullmatch(r"sha256:[0-9a-f]+ 0", line.strip())]
    if untagged:
        await _call([*cli, "rmi", *untagged], 300)


async def _user_of(cli: list[str], ref: str) -> str:
    """The user an image's commands run as (its ``USER``; '' for root or when unknown)."""
    code, out = await _call([*cli, "image", "inspect", "--format", "{{.Config.User}}", ref], 60)
    return out.strip() if code == 0 else ""


_EXPERIMENTAL: dict[tuple[str, ...], bool] = {}


async def experimental(cli: list[str]) -> bool:
    """Whether the docker daemon is experimental (so ``docker build --squash`` exists); asked once."""
    if tuple(cli) not in _EXPERIMENTAL:
        code, out = await _call([*cli, "info", "--format", "{{.ExperimentalBuild}}"], 60)
        _EXPERIMENTAL[tuple(cli)] = code == 0 and "true" in out.strip().splitlines()
    return _EXPERIMENTAL[tuple(cli)]


# a newer docker client's notice before a classic build (DOCKER_BUILDKIT=0): no part of the build's output
_LEGACY_NOTICE = re.compile(r"\ADEPRECATED: The legacy builder is deprecated.*?\n(?:[ \t]+.*\n)*\n?")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the classic builder colours a step's stderr


def _remove_built(keys: list[tuple]) -> list[str]:
    """Remove the images of `keys` this process built, and forget them; the tags removed."""
    removed = []
    for key in keys:
        tag, cli = _built.pop(key)
        if subprocess.run([*cli, "rmi", tag], capture_output=True, timeout=120).returncode == 0:
            removed.append(tag)
    return removed


def remove_task_images() -> list[str]:
    """Remove the task images this process built (at exit; tests call it too)."""
    return _remove_built(list(_built))


def release_task_images(task_dir: Path) -> list[str]:
    """Remove the images this process built from a task's own directory (its image, its services'),
    and forget them: the audit plays each task once, so it frees each task's images as its audit
    ends instead of holding all of them (tens of GB for Terminal-Bench's tasks) until exit."""
    root = Path(task_dir).resolve()
    return _remove_built([key for key in _built if Path(key[1]).resolve().is_relative_to(root)])


atexit.register(remove_task_images)
