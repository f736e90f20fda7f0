"""Base images as directory trees built from packages (mmdebstrap: Debian, or Ubuntu from its archive), cached by recipe hash.

Public API (stable; the bwrap and docker/podman sandboxes use it):

- ``resolve_base(image_ref) -> BaseRecipe | None`` — the recipe a task's ``FROM`` stands for
  (TB's ``python-3-13``/``ubuntu-24-04``, ``python:3.x[-slim][-suite]``, ``debian:<suite>[-slim]``,
  ``ubuntu:<version>``; and in ``official.py`` ``buildpack-deps``, ``node``, ``golang``, ``rust``,
  ``openjdk``, ``eclipse-temurin``, ``gcc``), None when there is none. A recipe carries the image's metadata:
  ``workdir``, ``env``, ``cmd``, ``shell``, and ``substituted`` (what differs from the real image);
  ``recipe.image_changes()`` gives them as Dockerfile lines for ``podman/docker import --change``.
- ``ensure_base_root(recipe, progress=None, *, cache=None, host_settings=False) -> Path`` — the
  root directory, built once (into a temp dir, renamed when complete, under a lock) and cached in
  ``images_dir()`` (``$AGENTRIG_IMAGES_DIR`` or ``$XDG_CACHE_HOME/agentrig/images``).
- (above the sandboxes: ``sandbox/task_image.py``'s ``task_image(task)`` — the task's FROM, what stands for it, the substitution.)
- ``list_roots()``, ``remove_roots(selector)``, ``images_dir()`` — for ``agentrig images`` (``images_cli.py``).

Floor 1 of the package: it imports only ``core/`` (the sandbox errors, the host's package-index
settings); the Dockerfile reading (``tasks/``) and the sandboxes sit above it.
"""


from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import ensure_base_root, images_dir, list_roots, mmdebstrap_binary, remove_roots, root_path
    from .recipes import BaseRecipe, resolve_base

# imported on first use: `agentrig images` is mounted at every start of the CLI, the builder (and the
# sandbox and Dockerfile code under it) only when a command or a sandbox asks for it
_EXPORTS = {"ensure_base_root": "builder", "images_dir": "builder", "list_roots": "builder",
            "mmdebstrap_binary": "builder", "remove_roots": "builder", "root_path": "builder",
            "BaseRecipe": "recipes", "resolve_base": "recipes"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
