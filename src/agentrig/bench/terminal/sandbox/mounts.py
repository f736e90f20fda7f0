"""The bwrap sandbox's mounts: which directories of the root a trial sees, and how they stack.

Per top-level directory an overlay: the trial's own upper directory over the task's build layer
over the root's directory (a root built for the task's image, or the host's ``/usr /etc /var
/opt /srv`` when the host's root stands in); ``/`` itself is the trial's ``top``; the root's
top-level symlinks (``bin -> usr/bin``), the read-only binds, the compose file's tmpfs mounts, and
``/proc``, ``/dev`` and a private ``/dev/shm``. The build (``build.py``) and ``imagefiles.py``
read the same layout.
"""

from __future__ import annotations

import os
from pathlib import Path

HOST_DIRS = ("usr", "etc", "var", "opt", "srv")
SPECIAL = {"proc", "dev", "sys"}


def host_symlinks(base_root: Path | None = None) -> dict[str, str]:
    """Top-level symlinks of the root (bin -> usr/bin, ...) that point into the shown dirs."""
    links = {}
    for entry in Path(base_root or "/").iterdir():
        if entry.is_symlink():
            target = os.readlink(entry)
            if base_root is not None or target.lstrip("/").split("/")[0] in HOST_DIRS:
                links[entry.name] = target
    return links


def base_dirs(base_root: Path | None) -> list[str]:
    """The directories shown from the root under the trial: the host's HOST_DIRS, or every
    top-level directory of a built base root (then nothing of the host's root is shown)."""
    if base_root is None:
        return [n for n in HOST_DIRS if Path("/", n).is_dir() and not Path("/", n).is_symlink()]
    return sorted(e.name for e in Path(base_root).iterdir() if e.is_dir() and not e.is_symlink() and e.name not in SPECIAL)


def overlay_names(layer_dir: Path | None, base_root: Path | None = None) -> list[str]:
    names = base_dirs(base_root)
    if layer_dir is not None and (layer_dir / "top").is_dir():
        for entry in sorted((layer_dir / "top").iterdir()):
            if entry.is_dir() and not entry.is_symlink() and entry.name not in SPECIAL and entry.name not in names:
                names.append(entry.name)
    return names


def mount_args(trial_dir: Path, layer_dir: Path | None, base_root: Path | None, ro_binds: dict[str, str],
               tmpfs: list[tuple[str, int | None, int | None]]) -> list[str]:
    """bwrap's mount arguments for a trial (creating its upper and work directories)."""
    top = trial_dir / "top"
    args = ["--bind", str(top), "/"]
    shown = set(base_dirs(base_root))
    for name in overlay_names(layer_dir, base_root):
        lowers: list[Path] = []
        if layer_dir is not None:
            for candidate in (layer_dir / "upper" / name, layer_dir / "top" / name):
                if candidate.is_dir():
                    lowers.append(candidate)
        if name in shown:
            lowers.append(Path(base_root or "/", name))
        upper, work = trial_dir / "upper" / name, trial_dir / "work" / name
        upper.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        if lowers and base_root is not None:  # the mount's root takes the upper's mode (/tmp: 1777)
            os.chmod(upper, os.stat(lowers[0]).st_mode & 0o7777)
        for lower in reversed(lowers):  # bwrap stacks the first --overlay-src lowest
            args += ["--overlay-src", str(lower)]
        args += ["--overlay", str(upper), str(work), "/" + name]
    for name, target in host_symlinks(base_root).items():
        if not (top / name).is_symlink():
            args += ["--symlink", target, "/" + name]
    for host, inside in ro_binds.items():
        args += ["--ro-bind", host, inside]
    for target, size, mode in tmpfs:
        args += [*(["--perms", f"{mode:04o}"] if mode is not None else []),
                 *(["--size", str(size)] if size is not None else []), "--tmpfs", target]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]  # shm: 1777 as in containers
    return args
