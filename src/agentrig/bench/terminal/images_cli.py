"""``agentrig images build|list|rm``: the base roots built from packages (see images/__init__.py).

On the package's top floor, not in ``images/``: ``--import podman|docker`` and the listing of imported
images use the container sandbox's engine and images (``sandbox/engine.py``, ``sandbox/container_images.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

app = typer.Typer(help="Build, list and remove the base images (roots built from packages) terminal tasks run on.",
                  no_args_is_help=True)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@app.command("build")
def build(refs: list[str] = typer.Argument(..., help="image references, e.g. python:3.13-slim-bookworm"),
          host_settings: bool = typer.Option(False, "--host-settings", help="pass the host's apt proxy settings to the build (not stored)"),
          import_to: str = typer.Option(None, "--import", metavar="podman|docker",
                                        help="also import the root into this engine under the image's name, so a FROM resolves locally")) -> None:
    """Build (or find in the cache) the base root for each image reference."""
    from .core.base import SandboxError
    from .images import ensure_base_root, resolve_base

    if import_to is not None and import_to not in ("podman", "docker"):
        _fail(f"--import {import_to!r}: the engine is podman or docker")
    if import_to is not None:
        import asyncio

        from .sandbox.engine import engine_problem

        problem = asyncio.run(engine_problem(import_to))
        if problem:
            _fail(f"--import {import_to}: {problem}")
    for ref in refs:
        recipe = resolve_base(ref)
        if recipe is None:
            _fail(f"no recipe for the base image {ref!r}: supported are python:3.x[-slim][-suite], debian:<suite>[-slim], "
                  "ubuntu:<version> and Terminal-Bench's ghcr.io/laude-institute/t-bench/python-3-13 and ubuntu-24-04")
        try:
            root = ensure_base_root(recipe, progress=lambda m: typer.echo(m, err=True), host_settings=host_settings)
        except SandboxError as exc:
            _fail(str(exc))
        note = f"  (substituted: {recipe.substituted})" if recipe.substituted else ""
        if import_to is not None:
            from .sandbox.container_images import import_base

            try:
                name = import_base(ref, import_to, progress=lambda m: typer.echo(m, err=True), host_settings=host_settings)
            except SandboxError as exc:
                _fail(str(exc))
            note += f"  (imported into {import_to} as {name})"
        typer.echo(f"{ref}: {root}{note}")


@app.command("list")
def list_cmd() -> None:
    """The built base roots."""
    from .images import list_roots

    rows = list_roots()
    if not rows:
        typer.echo("no base images built yet (agentrig images build REF)")
        return
    imported = _imported()
    for meta in rows:
        recipe = meta["recipe"]
        distro = "Ubuntu" if recipe.get("distro") == "ubuntu" else "Debian"
        typer.echo(f"{meta['key']}  {recipe['ref']}  {distro} {recipe['suite']}  built in {meta.get('build_s', '?')} s  {meta['path']}")
        for engine, name in imported.get(meta["key"], []):
            typer.echo(f"    imported into {engine} as {name}")


@app.command("rm")
def rm(selector: str = typer.Argument(None, help="a ref, key or directory name; omit with --all"),
       all_: bool = typer.Option(False, "--all", help="remove every built base root")) -> None:
    """Remove built base roots."""
    from .images import list_roots, remove_roots

    if selector is None and not all_:
        _fail("name a base image (ref, key or directory) or pass --all")
    keys = {m["key"] for m in list_roots() if all_ or selector in (m["recipe"]["ref"], m["key"], Path(m["path"]).name)}
    removed = remove_roots(None if all_ else selector)
    imported = _remove_imported(keys)
    if not removed and selector is not None:
        _fail(f"no built base image matches {selector!r} (see `agentrig images list`)")
    for name in removed:
        typer.echo(f"removed {name}")
    for engine, name in imported:
        typer.echo(f"removed the {engine} image {name} imported from it")
    sys.stdout.flush()


def _imported() -> dict[str, list[tuple[str, str]]]:
    """Recipe key -> (engine, image name) of the images imported into podman/docker from roots."""
    import shutil

    from .sandbox.container_images import imported_images

    out: dict[str, list[tuple[str, str]]] = {}
    for engine in ("podman", "docker"):
        if shutil.which(engine):
            for key, name in imported_images(engine):
                out.setdefault(key, []).append((engine, name))
    return out


def _remove_imported(keys: set[str]) -> list[tuple[str, str]]:
    """The images imported into podman/docker from these roots (engines that do not answer are skipped)."""
    import shutil

    from .sandbox.container_images import remove_imported

    out = []
    for engine in ("podman", "docker"):
        if shutil.which(engine):
            out += [(engine, name) for key in sorted(keys) for name in remove_imported(engine, key)]
    return out
