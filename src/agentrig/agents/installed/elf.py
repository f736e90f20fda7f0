"""ELF files of a tool root: which are dynamically linked, the host libraries they need (their closure,
read with the host's ``ldd``), the oldest glibc a binary asks for, and the glibc an image root has."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .common import ToolInstallError

LOADER = "ld-linux-x86-64.so.2"
_LDD_LINE = re.compile(r"^\s*(?P<name>\S+)(?: => (?P<path>\S+|not found))?(?: \(0x[0-9a-f]+\))?\s*$")
_GLIBC_NEED = re.compile(r"\bGLIBC_(\d+)\.(\d+)(?:\.(\d+))?\b")
_GLIBC_RELEASE = re.compile(rb"GNU C Library [^\n]*?version (\d+)\.(\d+)")


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(root: Path) -> list[Path]:
    """Every regular ELF file under ``root`` (executables and shared objects), symlinks not followed."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink() and path.is_file() and is_elf(path):
                found.append(path)
    return found


def _ldd() -> str:
    ldd = shutil.which("ldd")
    if ldd is None:
        raise ToolInstallError("cannot bundle the shared libraries: `ldd` is missing on this machine "
                               "(fix: install glibc's tools, e.g. apt-get install libc-bin)")
    return ldd


def needed(path: Path) -> dict[str, str | None]:
    """soname → the host file ``ldd`` resolves it to (None: not found) for one ELF file; empty for
    a static binary."""
    out = subprocess.run([_ldd(), str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", env={"PATH": os.defpath, "LC_ALL": "C"})
    libs: dict[str, str | None] = {}
    if "not a dynamic executable" in out.stdout or "statically linked" in out.stdout:
        return libs
    for line in out.stdout.splitlines():
        m = _LDD_LINE.match(line)
        if m is None or m["name"].startswith("linux-vdso") or m["name"].startswith("linux-gate"):
            continue
        name, where = m["name"], m["path"]
        if where is None:  # the loader: "/lib64/ld-linux-x86-64.so.2 (0x…)"
            libs[os.path.basename(name)] = name
        else:
            libs[name] = None if where == "not found" else where
    return libs


def bundle_closure(root: Path, lib: Path, extra: tuple[str, ...] = ("libgcc_s.so.1",)) -> list[str]:
    """Copy into ``lib`` every host library the ELF files under ``root`` need (and the loader), each
    under the name the files ask for; the sonames ``ldd`` could not find (left to the image)."""
    lib.mkdir(parents=True, exist_ok=True)
    inside = str(root.resolve()) + os.sep
    missing: set[str] = set()
    copied: dict[str, str] = {}
    libc_dir: str | None = None
    todo = elf_files(root)
    while todo:
        path = todo.pop()
        for name, where in needed(path).items():
            if where is None:
                missing.add(name)
                continue
            if name in copied or os.path.realpath(where).startswith(inside) or (lib / name).exists():
                continue
            target = lib / name
            shutil.copy2(os.path.realpath(where), target)
            os.chmod(target, 0o755)
            copied[name] = where
            if name == "libc.so.6":
                libc_dir = os.path.dirname(where)
            todo.append(target)
    for name in extra:  # loaded with dlopen by the libc (pthread_cancel needs libgcc_s)
        if libc_dir and not (lib / name).exists() and os.path.exists(os.path.join(libc_dir, name)):
            shutil.copy2(os.path.realpath(os.path.join(libc_dir, name)), lib / name)
    if not (lib / LOADER).exists():
        raise ToolInstallError(f"no {LOADER} among the libraries of the tool root: this machine is not x86_64 glibc "
                               "Linux (fix: install tool roots on an x86_64 Debian or Ubuntu host)")
    return sorted(n for n in missing if not (lib / n).exists())


def glibc_floor(path: Path) -> str | None:
    """The newest ``GLIBC_x.y`` symbol version the binary needs (the oldest glibc it runs on), read
    with ``readelf``; None for a static binary or when readelf is missing."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return None
    out = subprocess.run([readelf, "-V", "-W", str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, errors="replace", env={"PATH": os.defpath, "LC_ALL": "C"}).stdout
    part = out.split(".gnu.version_r", 1)[1] if ".gnu.version_r" in out else ""
    versions = {(int(a), int(b), int(c or 0)) for a, b, c in _GLIBC_NEED.findall(part)}
    if not versions:
        return None
    a, b, c = max(versions)
    return f"{a}.{b}" + (f".{c}" if c else "")


def _within(image_root: Path, path: Path) -> Path:
    """``path`` (a file of the image root) with its symlinks followed inside the image root."""
    for _ in range(16):
        if not path.is_symlink():
            return path
        link = os.readlink(path)
        path = image_root / link.lstrip("/") if os.path.isabs(link) else path.parent / link
    return path


def image_glibc(image_root: Path) -> str | None:
    """The glibc version of an image root (read from its libc.so.6), None when it has none."""
    root = Path(image_root)
    for d in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib64", "lib64", "usr/lib", "lib"):
        try:
            data = _within(root, root / d / "libc.so.6").read_bytes()
        except OSError:
            continue
        m = _GLIBC_RELEASE.search(data)
        if m:
            return f"{int(m[1])}.{int(m[2])}"
    return None


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))
