"""mini-swe-agent's tool root: a relocatable CPython with the package, run by its own loader.

The layout (``ROOT`` is wherever the root is mounted, read-only)::

    bin/mini                 #!/bin/sh launcher: finds ROOT from "$0", then execs
                             ROOT/lib/ld-linux-x86-64.so.2 --library-path ROOT/lib
                                 --argv0 ROOT/python/bin/python3.X ROOT/python/bin/.python3.X
                                 -I ROOT/launch.py "$@"
    launch.py                runs mini's console-script entry point
    python/bin/.python3.X    the host's interpreter (``sys.base_prefix`` of the Python running agentrig)
    python/bin/python3.X     the same kind of launcher for the interpreter alone: ``sys.executable``
                             (the name ``--argv0`` gives it), so mini's Python may start Python too
    python/lib/python3.X/    its standard library (tests, idlelib, tkinter, ensurepip, lib2to3 and the
                             static libpython pruned), ``site-packages/`` holding mini-swe-agent and
                             its dependencies (``pip install --target``, the host's pip settings)
    lib/                     the loader, libpython and every host library the interpreter and each
                             extension module need (their closure by ``ldd``), libgcc_s

The loader is invoked explicitly, so nothing of ours is in the environment: no ``PYTHONHOME``,
``PYTHONPATH`` or ``LD_LIBRARY_PATH`` reaches the commands mini runs (``bash -c`` in the image sees
the image's own python and libraries). Python finds its prefix from ``python/bin/python3.X``
(argv[0] as the loader passes it) and ``-I`` keeps the image's ``PYTHON*`` variables and user
site-packages out of the agent's own interpreter. The whole C library comes with the root, so the
image's glibc does not matter (nor whether it has a Python at all).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from agentrig.errors import ConfigError

from .common import Progress, ToolInstallError, installing_line, run_tool, tail
from .elf import LOADER, bundle_closure

PACKAGE = "mini-swe-agent"
SCRIPT = "mini"
PRUNE = {"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages"}

LAUNCHER = """#!/bin/sh
# agentrig tool root: {package} {version}, run by its own CPython {python} and C library.
self=$(readlink -f "$0" 2>/dev/null) || self=$0
case "$self" in */*) ;; *) self=$(command -v "$self") ;; esac
root=$(cd "${{self%/*}}/{up}" && pwd -P)
exec "$root/lib/{loader}" --library-path "$root/lib" {argv0}"$root/python/bin/.python{pyver}" {args}"$@"
"""

LAUNCH_PY = '''"""agentrig tool root: run {package}'s `{script}` command with this root's interpreter."""
import site
import sys
from importlib.metadata import entry_points

# site-packages by name: a Debian-built interpreter's site.py looks only in dist-packages
site.addsitedir(f"{{sys.prefix}}/lib/python{{sys.version_info[0]}}.{{sys.version_info[1]}}/site-packages")
# The launcher sets no environment variable (the loader is called explicitly, -I ignores PYTHON*):
# the commands mini runs see the image's environment as it is.
sys.argv[0] = "{script}"
(entry,) = [e for e in entry_points(group="console_scripts") if e.name == "{script}"]
sys.exit(entry.load()())
'''


def host_python() -> tuple[Path, str, Path]:
    """(the prefix, "3.X", the interpreter) of the Python running agentrig: the one bundled."""
    if sys.version_info < (3, 10):
        raise ToolInstallError("mini-swe-agent needs Python 3.10 or newer, and agentrig runs on "
                               f"{sys.version.split()[0]} (fix: run agentrig with Python ≥ 3.10)")
    prefix = Path(sys.base_prefix)
    pyver = f"{sys.version_info.major}.{sys.version_info.minor}"
    exe = prefix / "bin" / f"python{pyver}"
    if not exe.is_file() or not (prefix / "lib" / f"python{pyver}" / "os.py").is_file():
        raise ToolInstallError(f"cannot bundle the interpreter: {prefix} does not hold bin/python{pyver} and its "
                               "standard library (fix: run agentrig with a Python installed under one prefix, "
                               "e.g. pyenv's or python.org's)")
    return prefix, pyver, exe


def _ignore(_dir: str, names: list[str]) -> set[str]:
    # tests, the GUI and the static libpython; _tkinter would pull Tk and X11 into lib/
    return {n for n in names if n in PRUNE or n.endswith(".a") or n.startswith("_tkinter.")}


def copy_python(dest: Path) -> str:
    """Copy the host interpreter and its pruned standard library under ``dest`` (beside a
    ``site-packages`` already there); returns "3.X"."""
    prefix, pyver, exe = host_python()
    (dest / "python" / "bin").mkdir(parents=True)
    shutil.copy2(os.path.realpath(exe), dest / "python" / "bin" / f".python{pyver}")  # run by python{pyver}
    os.symlink(f"python{pyver}", dest / "python" / "bin" / "python3")
    stdlib = dest / "python" / "lib" / f"python{pyver}"
    shutil.copytree(prefix / "lib" / f"python{pyver}", stdlib, symlinks=True, ignore=_ignore, dirs_exist_ok=True)
    (stdlib / "site-packages").mkdir(exist_ok=True)
    (dest / "lib").mkdir()
    for shared in (prefix / "lib").glob(f"libpython{pyver}*.so.*"):  # a shared build's libpython, by its soname
        shutil.copy2(os.path.realpath(shared), dest / "lib" / shared.name)
    return pyver


def _pip(site: Path, spec: str) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--target", str(site), "--no-warn-script-location",
            "--disable-pip-version-check", "--no-input", "--progress-bar", "off", spec]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_TARGET", "PIP_PREFIX",
                                                            "PIP_USER", "PIP_REQUIRE_VIRTUALENV")}
    done = run_tool(argv, env=env)
    if done.returncode == 0:
        return
    out = done.stdout
    if "No module named pip" in out:
        raise ToolInstallError(f"cannot install {spec}: the Python running agentrig ({sys.executable}) has no pip "
                               "(fix: python -m ensurepip, or install agentrig with pip)")
    if "No matching distribution found" in out or "Could not find a version that satisfies" in out:
        m = re.search(r"\(from versions: ([^)]*)\)", out)
        known = m[1].strip() if m else ""
        if known and known != "none":
            recent = ", ".join(v.strip() for v in known.split(",")[-5:])
            version = spec.split("==", 1)[1]
            raise ConfigError(f"agent.version: {PACKAGE} has no version {version!r} on the package index "
                              f"(fix: use a released version, e.g. one of {recent}, or leave `version` out)")
    raise ToolInstallError(f"pip install {spec} failed: {tail(out)} (fix: check the network and pip's index "
                           "settings, then run `agentrig agents install mini-swe-agent` again)")


def _has_argv0(loader: Path) -> bool:
    done = run_tool([str(loader), "--help"], timeout_s=30)
    return "--argv0" in done.stdout


def install_mini(dest: Path, version: str, say: Progress, final: Path) -> dict:
    """Build mini-swe-agent ``version``'s tool root in ``dest`` (renamed to ``final`` afterwards)."""
    say(installing_line(PACKAGE, version, final, "pip"))
    _prefix, pyver, _exe = host_python()
    site = dest / "python" / "lib" / f"python{pyver}" / "site-packages"
    _pip(site, f"{PACKAGE}=={version}")  # first: an unknown version fails before anything is copied
    copy_python(dest)
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts with the host's shebang: launch.py replaces them
    (dest / "launch.py").write_text(LAUNCH_PY.format(package=PACKAGE, script=SCRIPT), encoding="utf-8")
    missing = bundle_closure(dest, dest / "lib")
    if missing:
        say(f"note: not bundled (not on this machine; the image's are used if present): {', '.join(missing)}")
    (dest / "bin").mkdir()
    # the loader runs the interpreter under the name of its wrapper (glibc ≥ 2.33's --argv0): that is
    # sys.executable, so a process mini's Python starts with it runs through the loader too
    argv0 = '--argv0 "$root/python/bin/python{pyver}" '.format(pyver=pyver) if _has_argv0(dest / "lib" / LOADER) else ""
    fill = {"package": PACKAGE, "version": version, "python": sys.version.split()[0], "loader": LOADER, "pyver": pyver,
            "argv0": argv0}
    for path, up, args in ((dest / "bin" / SCRIPT, "..", '-I "$root/launch.py" '),
                           (dest / "python" / "bin" / f"python{pyver}", "../..", "")):
        path.write_text(LAUNCHER.format(up=up, args=args, **fill), encoding="utf-8")
        path.chmod(0o755)
    return {"entry": f"bin/{SCRIPT}", "glibc_floor": None,
            "how": f"CPython {sys.version.split()[0]} with its own loader and C library (lib/)"}
