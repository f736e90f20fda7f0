"""Recipes for base images: what a task's ``FROM`` line stands for, built from Debian packages.

``resolve_base(ref)`` maps an image reference (TB's ``ghcr.io/laude-institute/t-bench/python-3-13``
and ``ubuntu-24-04``, ``python:3.x[.y][-slim][-<suite>]``, ``debian:<suite|12|12.5|stable|latest>[-slim]``,
``ubuntu:<version>``, with the point, dated and role tags the official images publish) to a
``BaseRecipe`` or None. It alone decides which bases are accepted: ``dockerfile.accepted_base`` asks it. What the real images have and tasks rely on is
taken from their public Dockerfiles: TB's images are ``python:3.13-slim-bookworm`` /
``ubuntu:24.04`` plus ``tmux asciinema`` and ``WORKDIR /app``; the official python images have
``python``/``pip`` on PATH, ``LANG=C.UTF-8`` and ``CMD ["python3"]``, the non-slim ones the
buildpack-deps tools (git, curl, a C compiler). Where we substitute (Debian for Ubuntu, the
suite's Python for another version) the recipe says so in ``substituted``.

A python image keeps its own Debian suite (the tag's; bookworm by default) and that suite's
Python stands in for another version, said in ``substituted`` — unless the suite's Python is newer
than the image's: then the suite with the nearest Python (``python_suite``: 3.8 → bullseye's 3.9).
The image's Python is laid out as the official images have it (``python_layout``): a Python
environment at ``/usr/local`` (``python``/``pip`` in ``/usr/local/bin``, packages in
``/usr/local/lib/python3.X/site-packages``, pip installed by pip itself), which sees none of the
Python libraries Debian's own packages install (asciinema's) — in the real image those belong to
Debian's separate Python. Before 3.12 the official images have setuptools and wheel beside pip
(``python_packages``, from Debian's wheels), decided by the tag's Python, not the stand-in's. Where another Python stands in, the real image's version paths lead to it
(``python_alias``: ``/usr/local/lib/python3.13`` → the stand-in's).

Ubuntu bases are built from Ubuntu's own archive when ``$AGENTRIG_UBUNTU_ARCHIVE`` names it
(``distro = "ubuntu"``, nothing substituted; ``ubuntu.py``); otherwise Debian stands in, said so.
The other official images (``buildpack-deps``, ``node``, ``golang``, ``rust``, ``openjdk``,
``eclipse-temurin``, ``gcc``) have their recipes in ``official.py``; ``resolve_base`` asks it for
any repository this module does not know.
"""

from __future__ import annotations

import re

from .model import (DEBIAN_NUMBERS, DEBIAN_ROLES, LATER_FIELDS, PATH, RECIPE_FORMAT, UBUNTU_ARCHIVE_ENV, UBUNTU_NAMES,
                    BaseRecipe, ubuntu_archive)
from .official import official_recipe

__all__ = ["DEBIAN_NUMBERS", "DEBIAN_ROLES", "LATER_FIELDS", "PATH", "RECIPE_FORMAT", "UBUNTU_ARCHIVE_ENV", "UBUNTU_NAMES",
           "BaseRecipe", "debian_suite", "official_recipe", "python_suite", "resolve_base", "ubuntu_archive"]

PYTHON_LAYOUT = "official-3"  # what builder lays over Debian's Python (the hook, _python_layout); bump when it changes
SUITE_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
DEFAULT_SUITE = "bookworm"  # the suite this machine's Debian mirror serves; ubuntu and bare python tags map to it
# the official python images ship the interpreter's headers (Python.h): tests build C extensions with them
# no python3-pip: the image's Python is a virtual environment at /usr/local (builder.PYTHON_AT_LOCAL)
# with pip installed from the wheel python3-venv ships, as the official images have theirs
PYTHON_PACKAGES = ["python3", "python3-venv", "python3-dev", "python-is-python3", "ca-certificates", "netbase"]
BUILDPACK_PACKAGES = ["git", "curl", "wget", "build-essential", "procps", "openssh-client", "xz-utils", "unzip"]
TB_PACKAGES = ["tmux", "asciinema"]
TB_PREFIX = "ghcr.io/laude-institute/t-bench/"
# the official python images before 3.12 install setuptools and wheel beside pip (their Dockerfile
# template: `pip install setuptools==… 'wheel<0.46'` for 3.10 and 3.11, 3.9 and older had them too;
# 3.12+ have pip alone): here from the wheels of the stand-in suite (Debian's versions, not PyPI's)
SETUPTOOLS_BEFORE = 12  # the first 3.X minor without them
PYTHON_EXTRAS = ["setuptools", "wheel"]
# the packages carrying those wheels; bullseye's python-pip-whl (python3-venv's) carries both, its
# setuptools with pkg_resources split into a wheel of its own (setuptools imports it)
SPLIT_PKG_RESOURCES = {"bullseye"}
EXTRA_WHEELS = {"bookworm": ["python3-setuptools-whl", "python3-wheel-whl"],
                "trixie": ["python3-setuptools-whl", "python3-wheel-whl"]}


def python_suite(version: str, suite: str | None) -> str | None:
    """The Debian suite to build a ``python:<version>`` image on. The image's own suite (the tag's,
    default bookworm) keeps its tools (openssl, apt's packages) — unless its Python is newer than
    the image's: then the suite whose Python is nearest (a tie keeps the image's suite), since the
    pinned packages of an older Python have no wheels for a much newer one (TB's fix-pandas-version:
    pandas 1.3 for Python 3.8 builds on bullseye's 3.9, not on bookworm's 3.11). An older Python
    than the image's stays: a newer suite would change the tools' behaviour (TB's
    openssl-selfsigned-cert reads OpenSSL 3.0's output; trixie has 3.5) for a version few tasks
    need. A tag naming no suite (``python:3.13-slim``) gets the suite whose Python is the image's
    where one has it (trixie's 3.13, bookworm's 3.11, bullseye's 3.9), as the official images are
    built on a suite of their time. None: no such suite."""
    if suite is None:
        exact = [name for name, have in SUITE_PYTHON.items() if have == version]
        if exact:
            return exact[0]
    wanted = suite or DEFAULT_SUITE
    if wanted not in SUITE_PYTHON:
        return None

    def minor(name: str) -> int:
        return int(SUITE_PYTHON[name].split(".")[1])

    target = int(version.split(".")[1])
    if minor(wanted) <= target:
        return wanted
    # a tie keeps the image's suite, else the newer of the two (nearer the image's own)
    return min(SUITE_PYTHON, key=lambda name: (abs(minor(name) - target), name != wanted, -minor(name)))


def _python(version: str, variant: str, suite: str | None, ref: str) -> BaseRecipe | None:
    chosen = python_suite(version, suite)
    if chosen is None:
        return None
    python = SUITE_PYTHON[chosen]
    notes = []
    if python != version:
        notes.append(f"Python {python} (Debian {chosen}'s) stands in for Python {version}")
    if suite is not None and chosen != suite:  # a tag without a suite names none (the image's default moves)
        notes.append(f"Debian {chosen} stands in for Debian {suite}"
                     + (f" (its Python {python} is the image's)" if python == version else " (its Python is nearer)"))
    packages = list(PYTHON_PACKAGES)
    if variant != "slim":
        packages += BUILDPACK_PACKAGES
    # setuptools and wheel where the image's own Python (the tag's, not the stand-in's) has them
    extras = list(PYTHON_EXTRAS) if int(version.split(".")[1]) < SETUPTOOLS_BEFORE else []
    if extras:
        packages += EXTRA_WHEELS.get(chosen, [])
        if chosen in SPLIT_PKG_RESOURCES:
            extras.insert(1, "pkg_resources")
    if (int(python.split(".")[1]) < SETUPTOOLS_BEFORE) != bool(extras):  # the stand-in's own image would differ
        notes.append(f"{'setuptools and wheel' if extras else 'no setuptools or wheel'}, as in the Python {version} image")
    env = {"PATH": PATH, "LANG": "C.UTF-8", "PYTHON_VERSION": python}
    return BaseRecipe(ref=ref, suite=chosen, packages=packages, python=True, python_layout=PYTHON_LAYOUT, env=env,
                      python_packages=extras, cmd=["python3"], substituted="; ".join(notes) or None,
                      python_alias=version if python != version else None,
                      archive=f"Debian {suite}'s" if suite is not None and chosen != suite else None)


def _ubuntu(version: str, ref: str) -> BaseRecipe | None:
    """The real Ubuntu release `version` (``24.04`` or its codename) from Ubuntu's archive, when one
    is set; None otherwise (or for ``latest``, whose release moves): Debian then stands in."""
    archive = ubuntu_archive()
    codename = UBUNTU_NAMES.get(version, version if version in UBUNTU_NAMES.values() else None)
    if archive is None or codename is None:
        return None
    return BaseRecipe(ref=ref, suite=codename, distro="ubuntu", mirror=archive, env={"PATH": PATH})


def _python_tag(tag: str) -> tuple[str, bool, str | None] | None:
    """(Python version, slim, suite or None) of a python tag: ``3.11.9-slim-bookworm``, ``3-slim``,
    ``slim-trixie``, ``bookworm``, ``latest`` …; None: a tag we cannot build (alpine, windows, a suite
    no mirror here serves). A tag whose version moves (``3``, none) gets the newest Python a suite here has."""
    version, slim, suite = None, False, None
    parts = tag.split("-") if tag != "latest" else []
    for i, part in enumerate(parts):
        if i == 0 and re.fullmatch(r"3(?:\.\d+){0,2}", part):
            version = ".".join(part.split(".")[:2])
        elif part == "slim" and not slim:
            slim = True
        elif part in SUITE_PYTHON and suite is None:
            suite = part
        else:
            return None
    if version in (None, "3"):
        version = max(SUITE_PYTHON.values(), key=lambda v: int(v.split(".")[1]))
    return version, slim, suite


def debian_suite(tag: str) -> str | None:
    """The Debian suite a debian tag names: ``bookworm``, ``12``, ``12.5``, ``13.0-slim``,
    ``bookworm-20250811-slim``, ``stable-slim``, ``latest`` (the stable suite); None: another suite
    (``buster``, ``sid``, ``bookworm-backports``) or variant."""
    match = re.fullmatch(r"([a-z]+|\d+(?:\.\d+)?)(?:-\d{8})?(-slim)?(?:-\d{8})?", tag)
    if tag == "latest":
        return DEBIAN_ROLES["stable"]
    if not match:
        return None
    name = match.group(1)
    if name[0].isdigit():
        return DEBIAN_NUMBERS.get(name.split(".")[0])
    return DEBIAN_ROLES.get(name, name if name in SUITE_PYTHON else None)


def _ubuntu_release(tag: str) -> str | None:
    """The Ubuntu release (``24.04``, a codename, ``latest``) a tag names: ``24.04``, ``24.04.1``
    (the point tags older releases had), ``noble``, ``noble-20250404``; None: a release we do not know."""
    match = re.fullmatch(r"(\d\d\.\d\d)(?:\.\d+)?|([a-z]+)(?:-\d{8})?", tag)
    if not match:
        return None
    name = match.group(1) or match.group(2)
    return name if name in UBUNTU_NAMES or name in UBUNTU_NAMES.values() or name == "latest" else None


def resolve_base(image_ref: str) -> BaseRecipe | None:
    """The recipe for a FROM reference, or None when we have none (the caller decides what then)."""
    ref = image_ref.strip()
    name = ref.split("@", 1)[0]
    for prefix in ("index.docker.io/library/", "docker.io/library/", "docker.io/", "library/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.startswith(TB_PREFIX):
        kind = name[len(TB_PREFIX):].split(":", 1)[0]
        match = re.fullmatch(r"python-3-(\d+)", kind)
        recipe = _python(f"3.{match.group(1)}", "slim", "bookworm", ref) if match else None  # python:3.X-slim-bookworm
        if recipe is not None:
            recipe.packages += TB_PACKAGES
            recipe.workdir = "/app"
            return recipe
        match = re.fullmatch(r"ubuntu-(\d\d)-(\d\d)", kind)
        if match:
            version = f"{match.group(1)}.{match.group(2)}"
            exact = _ubuntu(version, ref)
            if exact is not None:  # TB's Dockerfile over the real ubuntu:<version>
                return exact.model_copy(update={"packages": list(TB_PACKAGES), "recommends": True, "workdir": "/app"})
            # TB's Dockerfile: FROM ubuntu:<version>, `apt-get install -y tmux asciinema` (with their
            # Recommends: python3's pull in ca-certificates and openssl), WORKDIR /app
            return BaseRecipe(ref=ref, suite=DEFAULT_SUITE, packages=TB_PACKAGES, recommends=True, workdir="/app",
                              env={"PATH": PATH}, substituted=f"Debian {DEFAULT_SUITE} stands in for Ubuntu {version}",
                              archive=f"Ubuntu {version}'s")
        return None
    repo, _, tag = name.partition(":")
    tag = tag or "latest"
    if repo == "python":
        parsed = _python_tag(tag)
        if parsed is None:
            return None
        version, slim, suite = parsed
        return _python(version, "slim" if slim else "", suite, ref)
    if repo == "debian":
        suite = debian_suite(tag)
        if suite is None:
            return None
        # a point release (13.0) or a dated snapshot (bookworm-20250811) is the suite as it was then:
        # the mirror serves it as it is today (its packages' versions moved on) — said, and the pins a
        # solution makes against that release's archive are the stand-in's to miss (audit: base_substituted)
        pinned = re.match(r"\d+\.\d+", tag) or re.search(r"(?<=-)\d{8}", tag)
        then = (f"Debian {pinned.group(0)}" if "." in pinned.group(0) else f"Debian {suite} as of {pinned.group(0)}") if pinned else None
        return BaseRecipe(ref=ref, suite=suite, env={"PATH": PATH},
                          substituted=f"Debian {suite} as this machine's mirror serves it today stands in for {then}" if then else None,
                          archive=f"{then}'s" if then else None)
    if repo == "ubuntu":
        version = _ubuntu_release(tag)
        if version is None:
            return None
        exact = _ubuntu(version, ref)
        if exact is not None:
            return exact
        return BaseRecipe(ref=ref, suite=DEFAULT_SUITE, env={"PATH": PATH},
                          substituted=f"Debian {DEFAULT_SUITE} stands in for Ubuntu {version}", archive=f"Ubuntu {version}'s")
    return official_recipe(repo, tag if tag != "latest" else "", ref)
