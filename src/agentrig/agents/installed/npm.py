"""Codex CLI's and Claude Code's tool roots: the npm package installed into the root, its native
binary run directly (no Node.js in the image needed).

- **codex** (``@openai/codex``): the platform package holds a static-pie musl binary (and a static
  ``rg`` in ``codex-path/``, which codex finds beside itself): it runs in any x86_64 Linux image.
  ``bin/codex`` is a relative symlink to it.
- **claude-code** (``@anthropic-ai/claude-code``): the platform package holds a Bun-compiled binary
  linked against glibc. It must be run as itself: it reads its own executable for its embedded code
  and re-executes ``process.execPath`` for its embedded ripgrep, so calling it through a bundled
  ``ld.so`` (whose path would be ``/proc/self/exe``) would break its Grep tool. It therefore uses the
  image's C library, and the root records the oldest glibc it needs (``glibc_floor``, read from the
  binary's symbol versions; ``toolroot.image_problem`` checks an image against it). ``bin/claude``
  is a relative symlink to it.

npm runs with the host's registry settings (``.npmrc``) and ``--ignore-scripts`` (the packages'
postinstall only copies the same binary elsewhere).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from agentrig.errors import ConfigError

from .common import Progress, ToolInstallError, installing_line, run_tool, tail
from .elf import glibc_floor, is_elf, needed

CODEX = "@openai/codex"
CLAUDE = "@anthropic-ai/claude-code"


def npm_install(dest: Path, kind: str, package: str, version: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ToolInstallError(f"cannot install {kind}: npm is not installed on this machine "
                               "(fix: install Node.js and npm, e.g. apt-get install npm)")
    argv = [npm, "install", "--prefix", str(dest), "--ignore-scripts", "--no-save", "--no-package-lock",
            "--no-audit", "--no-fund", "--omit=dev", "--loglevel=error", f"{package}@{version}"]
    done = run_tool(argv, cwd=dest)
    if done.returncode == 0:
        return
    out = done.stdout
    if "ETARGET" in out or "No matching version found" in out:
        raise ConfigError(f"agent.version: {kind} has no version {version!r} on the npm registry ({package}) "
                          f"(fix: use a released version — `npm view {package} versions` lists them — or leave "
                          "`version` out)")
    raise ToolInstallError(f"npm install {package}@{version} failed: {tail(out)} (fix: check the network and npm's "
                           f"registry settings, then run `agentrig agents install {kind}` again)")


def _binary(dest: Path, pattern: str, kind: str) -> Path:
    found = sorted(p for p in dest.glob(pattern) if p.is_file() and is_elf(p))
    if not found:
        raise ToolInstallError(f"the {kind} package holds no Linux x86_64 binary ({pattern} is missing): this "
                               "version may not ship one (fix: choose another `version`)")
    return found[0]


def _link(dest: Path, binary: Path, name: str) -> str:
    (dest / "bin").mkdir(exist_ok=True)
    os.symlink(os.path.relpath(binary, dest / "bin"), dest / "bin" / name)
    shutil.rmtree(dest / "node_modules" / ".bin", ignore_errors=True)  # npm's links to the packages' Node wrappers
    return f"bin/{name}"


def install_codex(dest: Path, version: str, say: Progress, final: Path) -> dict:
    say(installing_line("codex", version, final, "npm"))
    npm_install(dest, "codex", CODEX, version)
    binary = _binary(dest, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-*/bin/codex", "codex")
    programs = [p for d in ("bin", "codex-path") for p in (binary.parent.parent / d).glob("*") if p.is_file() and is_elf(p)]
    dynamic = [p for p in programs if needed(p)]  # codex's programs are static musl (its voice resources' libraries
    if dynamic:                                   # are loaded by a feature a headless run does not use)
        raise ToolInstallError(f"codex {version}: {dynamic[0].name} is dynamically linked, which this installer "
                               "does not bundle (fix: use a version whose programs are static, e.g. 0.169.0)")
    return {"entry": _link(dest, binary, "codex"), "glibc_floor": None,
            "how": "static musl binaries (codex, rg): run in any x86_64 Linux image"}


def install_claude(dest: Path, version: str, say: Progress, final: Path) -> dict:
    say(installing_line("claude-code", version, final, "npm"))
    npm_install(dest, "claude-code", CLAUDE, version)
    binary = _binary(dest, "node_modules/@anthropic-ai/claude-code-linux-x64/claude", "claude-code")
    libs = needed(binary)
    floor = glibc_floor(binary) if libs else None
    unusual = sorted(n for n in libs if not re.match(r"(ld-linux|lib(c|m|dl|rt|pthread)\.so)", n))
    if unusual:
        raise ToolInstallError(f"claude-code {version} needs {', '.join(unusual)} beyond the C library, which a task "
                               "image may lack (fix: use a version that needs only glibc, e.g. 2.1.328)")
    how = (f"a glibc binary run directly by the image's C library (glibc ≥ {floor})" if floor
           else "a static binary: runs in any x86_64 Linux image")
    return {"entry": _link(dest, binary, "claude"), "glibc_floor": floor, "how": how}
