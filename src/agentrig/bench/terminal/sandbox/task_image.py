"""What image a task runs on, for ``tasks show`` and the audit: its FROM, the root, substitutions.

Read from the plan the sandboxes build (``build_plan``) and the recipe its ``FROM`` stands for (``images``).
"""

from __future__ import annotations

from typing import Any

from ..images.recipes import resolve_base
from . import build_plan


def task_image(task: Any) -> dict[str, str | None]:
    """{"base": the FROM reference, "image": what stands for it, "substituted": what differs or None,
    "archive": the real image's package archive where the stand-in's differs, or None}."""
    plan = build_plan(task)
    if not plan.supported:  # a Dockerfile (or compose file, or prebuilt image) bwrap does not replay: its reason
        reason = (plan.reason or "").removeprefix("needs_container: ")
        return {"base": None, "image": f"not built from packages: {reason}", "substituted": None, "archive": None}
    if not plan.base:
        return {"base": None, "image": "no Dockerfile: the host's root stands in (bwrap, local)", "substituted": None, "archive": None}
    recipe = resolve_base(plan.base)
    if recipe is None:
        return {"base": plan.base, "image": "no recipe builds it from packages: a container engine pulls it", "substituted": None,
                "archive": None}
    made = (f"an Ubuntu {recipe.suite} root built from Ubuntu's archive ({recipe.mirror})" if recipe.distro == "ubuntu"
            else f"a Debian {recipe.suite} root built from packages")
    return {"base": plan.base, "image": f"{made} (agentrig images)",
            "substituted": recipe.substituted, "archive": recipe.archive}
