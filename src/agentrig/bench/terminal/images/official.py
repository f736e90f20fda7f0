"""Recipes for the official images task Dockerfiles name most, built from a suite's packages.

``official_recipe(repo, tag, ref)`` covers ``buildpack-deps``, ``node``, ``golang``, ``rust``,
``openjdk``, ``eclipse-temurin`` and ``gcc`` (``recipes.resolve_base`` asks it for any repository
it does not know itself). What each image has is read from its public Dockerfile:

- ``buildpack-deps:<suite>-curl`` is ``debian:<suite>`` (or ``ubuntu:<suite>``) plus a few network
  tools, ``-scm`` adds version control, the bare tag the compilers and ``-dev`` libraries that
  building a language's extensions needs (``BUILDPACK_LAYERS``);
- ``node``, ``rust``, ``gcc`` and ``openjdk`` start from the full ``buildpack-deps`` of their suite
  (``-slim`` tags from the bare suite), ``golang`` from its ``-scm`` with a C toolchain;
  ``eclipse-temurin`` from Ubuntu with a few tools and the ``en_US.UTF-8`` locale.

The language itself is Debian's package (``nodejs``/``npm``, ``golang-1.X-go``, ``rustc``/
``cargo``, ``openjdk-N-jdk-headless``, ``gcc-N``) from the suite whose version is nearest the tag's
(``nearest``; a tie keeps the tag's suite, then the suite whose default it is, then the newer), laid
out where the real image has it (``links``: ``/usr/local/go``, ``$JAVA_HOME``, ``/usr/local/cargo/bin``,
``/usr/local/bin/gcc``), with its ``ENV``, ``WORKDIR``, ``CMD`` and user. A version or suite that
differs from the tag's is said in ``substituted``. Ubuntu-based tags (``buildpack-deps:jammy``,
``eclipse-temurin``) are Ubuntu's own packages when ``$AGENTRIG_UBUNTU_ARCHIVE`` is set, else a
Debian suite stands in, said so. Any other tag (alpine, windows, a suite no archive here serves)
has no recipe: None.
"""

from __future__ import annotations

import re

from .model import DEBIAN_ROLES, PATH, UBUNTU_NAMES, BaseRecipe, ubuntu_archive

SUITES = ("bullseye", "bookworm", "trixie")  # the Debian suites this machine's mirror serves, oldest first
LATEST = "trixie"  # the suite the official images' untagged and `latest` variants are built on now
UBUNTU_SUITES = ("focal", "jammy", "noble")
UBUNTU_VERSIONS = {name: version for version, name in UBUNTU_NAMES.items()}
# the Debian suite standing in for an Ubuntu release when Ubuntu's archive is not set: the one of its
# time (focal's Python 3.8 and GCC 9 are nearer bullseye's 3.9 and 10; jammy and noble as ubuntu:<version>)
UBUNTU_STAND_IN = {"focal": "bullseye", "jammy": "bookworm", "noble": "bookworm"}

# buildpack-deps' three layers, each over the one before (its Dockerfiles for each suite)
CURL = ["ca-certificates", "curl", "gnupg", "netbase", "wget"]
CURL_EXTRA = {"bookworm": ["sq"], "trixie": ["sq"], "focal": ["tzdata"], "jammy": ["tzdata"], "noble": ["sq", "tzdata"]}
SCM = ["git", "mercurial", "openssh-client", "subversion", "procps"]
SCM_EXTRA = {"focal": ["bzr"]}  # focal's last -scm Dockerfile still had Bazaar
FULL = ["autoconf", "automake", "bzip2", "default-libmysqlclient-dev", "dpkg-dev", "file", "g++", "gcc",
        "imagemagick", "libbz2-dev", "libc6-dev", "libcurl4-openssl-dev", "libdb-dev", "libevent-dev", "libffi-dev",
        "libgdbm-dev", "libglib2.0-dev", "libgmp-dev", "libjpeg-dev", "libkrb5-dev", "liblzma-dev",
        "libmagickcore-dev", "libmagickwand-dev", "libmaxminddb-dev", "libncurses5-dev", "libncursesw5-dev",
        "libpng-dev", "libpq-dev", "libreadline-dev", "libsqlite3-dev", "libssl-dev", "libtool", "libwebp-dev",
        "libxml2-dev", "libxslt-dev", "libyaml-dev", "make", "patch", "unzip", "xz-utils", "zlib1g-dev"]
# trixie's ncurses 5 names are virtual (libncurses-dev provides them): mmdebstrap is given the real one
RENAMED = {"trixie": {"libncurses5-dev": "libncurses-dev", "libncursesw5-dev": None}}

# each suite's versions of a language, its default last (checked against the suites' Packages indexes)
NODE = {"bullseye": ["12"], "bookworm": ["18"], "trixie": ["20"]}
GO = {"bullseye": ["1.15"], "bookworm": ["1.19"], "trixie": ["1.24"]}
RUST = {"bullseye": ["1.48"], "bookworm": ["1.63"], "trixie": ["1.85"]}
JDK = {"bullseye": ["17", "11"], "bookworm": ["17"], "trixie": ["25", "21"]}
GCC = {"bullseye": ["9", "10"], "bookworm": ["11", "12"], "trixie": ["12", "13", "14"]}
UBUNTU_JDK = {"focal": ["8", "13", "16", "17", "21", "11"], "jammy": ["8", "11", "18", "21", "25", "17"],
              "noble": ["8", "11", "17", "25", "21"]}
NODE_NAMES = {"argon": "4", "boron": "6", "carbon": "8", "dubnium": "10", "erbium": "12", "fermium": "14",
              "gallium": "16", "hydrogen": "18", "iron": "20", "jod": "22", "krypton": "24"}
# a version as the tags write it, to the point release (eclipse-temurin's build after `_`: 21.0.5_11)
VERSION = re.compile(r"\d+(?:\.\d+){0,2}(?:_\d+)?")


def buildpack_packages(suite: str, layer: str) -> list[str]:
    """buildpack-deps' packages for `suite` up to `layer` ("curl", "scm" or "full")."""
    names = CURL + CURL_EXTRA.get(suite, [])
    if layer in ("scm", "full"):
        names += SCM_EXTRA.get(suite, []) + SCM
    if layer == "full":
        renamed = RENAMED.get(suite, {})
        names += [renamed.get(name, name) for name in FULL if renamed.get(name, name)]
    return names


def _number(version: str) -> float:
    parts = [int(p) for p in version.split(".")[:2]] + [0]
    return parts[0] * 1000 + parts[1]


def nearest(table: dict[str, list[str]], wanted: str | None, suite: str | None) -> tuple[str, str]:
    """(suite, version) of `table` nearest the `wanted` version (None: the suite's default, the
    tag's suite or LATEST). A tie keeps the tag's suite, then the suite whose default it is, then the newer."""
    if wanted is None:
        chosen = suite if suite in table else LATEST
        return chosen, table[chosen][-1]
    target = _number(wanted)
    order = list(table)
    candidates = [(name, version) for name in table for version in table[name]]
    return min(candidates, key=lambda c: (abs(_number(c[1]) - target), c[0] != suite,
                                          c[1] != table[c[0]][-1], -order.index(c[0])))


def _parse(tag: str, keywords: tuple[str, ...], variants: tuple[str, ...], suites: tuple[str, ...] = SUITES
           ) -> tuple[str | None, str | None, set[str]] | None:
    """(version or keyword, suite, variants) of a tag like ``22.1-bookworm-slim``; None: a part we do not know."""
    version, suite, seen = None, None, set()
    for i, part in enumerate(tag.split("-") if tag and tag != "latest" else []):
        if i == 0 and (VERSION.fullmatch(part) or part in keywords):
            version = part
        elif DEBIAN_ROLES.get(part, part) in suites and suite is None:  # buildpack-deps' stable-curl
            suite = DEBIAN_ROLES.get(part, part)
        elif part in variants and part not in seen:
            seen.add(part)
        else:
            return None
    return version, suite, seen


def _says(name: str, have: str, wanted: str | None, where: str) -> str | None:
    if wanted is None or have == wanted or have.startswith(wanted + ".") or wanted.startswith(have + "."):
        return None
    return f"{name} {have} ({where}) stands in for {name} {wanted}"


def _on(suite: str, layer: str | None, ref: str, **fields) -> BaseRecipe:
    """A Debian or Ubuntu root for `suite` with buildpack-deps' `layer` (None: the bare suite); an
    Ubuntu suite from Ubuntu's archive when one is set, else the Debian suite of its time."""
    extra = fields.pop("packages", [])
    env = {"PATH": PATH, **fields.pop("env", {})}
    if suite in UBUNTU_SUITES:
        archive = ubuntu_archive()
        if archive is not None:
            packages = (buildpack_packages(suite, layer) if layer else []) + extra
            return BaseRecipe(ref=ref, suite=suite, distro="ubuntu", mirror=archive, packages=packages, env=env, **fields)
        debian = UBUNTU_STAND_IN[suite]
        packages = (buildpack_packages(debian, layer) if layer else []) + extra
        return BaseRecipe(ref=ref, suite=debian, packages=packages, env=env,
                          substituted=f"Debian {debian} stands in for Ubuntu {UBUNTU_VERSIONS[suite]}",
                          archive=f"Ubuntu {UBUNTU_VERSIONS[suite]}'s", **fields)
    packages = (buildpack_packages(suite, layer) if layer else []) + extra
    return BaseRecipe(ref=ref, suite=suite, packages=packages, env=env, **fields)


def _moved(chosen: str, tagged: str | None, why: str) -> str | None:
    return f"Debian {chosen} stands in for Debian {tagged} ({why})" if tagged and tagged != chosen else None


def _buildpack(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ("curl", "scm"), SUITES + UBUNTU_SUITES)
    if parsed is None or parsed[0] is not None:
        return None
    _, suite, variants = parsed
    layer = "curl" if "curl" in variants else "scm" if "scm" in variants else "full"
    if len(variants) > 1:
        return None
    return _on(suite or LATEST, layer, ref)


def _node(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, ("lts", "current", *NODE_NAMES), ("slim",))
    if parsed is None:
        return None
    wanted, suite, variants = parsed
    wanted = None if wanted in ("lts", "current") else NODE_NAMES.get(wanted or "", wanted)
    wanted = wanted.split(".")[0] if wanted else None
    chosen, version = nearest(NODE, wanted, suite)
    recipe = _on(chosen, None if "slim" in variants else "full", ref, packages=["nodejs", "npm", "ca-certificates"],
                 env={"NODE_VERSION": version}, cmd=["node"], user="node")
    return _noted(recipe, _says("Node.js", version, wanted, f"Debian {chosen}'s"), chosen, suite, "Node.js")


def _noted(recipe: BaseRecipe, says: str | None, chosen: str, suite: str | None, name: str) -> BaseRecipe:
    notes = [n for n in (recipe.substituted, says, _moved(chosen, suite, f"its {name} is nearer")) if n]
    recipe.substituted = "; ".join(notes) or None
    if suite and suite != chosen and suite not in UBUNTU_SUITES:
        recipe.archive = f"Debian {suite}'s"
    return recipe


def _golang(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ())
    if parsed is None:
        return None
    wanted, suite, _ = parsed
    wanted = ".".join(wanted.split(".")[:2]) if wanted and "." in wanted else (None if wanted in (None, "1") else wanted)
    chosen, version = nearest(GO, wanted, suite)
    # the image's Go at /usr/local/go, GOPATH /go (world-writable, its WORKDIR), `go` on its PATH
    recipe = _on(chosen, "scm", ref, packages=["g++", "gcc", "libc6-dev", "make", "pkg-config", f"golang-{version}-go"],
                 env={"GOLANG_VERSION": version, "GOTOOLCHAIN": "local", "GOPATH": "/go",
                      "PATH": f"/go/bin:/usr/local/go/bin:{PATH}"},
                 links={"/usr/local/go": f"/usr/lib/go-{version}"}, dirs={"/go/src": 0o1777, "/go/bin": 0o1777, "/go": 0o1777},
                 workdir="/go")
    return _noted(recipe, _says("Go", version, wanted, f"Debian {chosen}'s"), chosen, suite, "Go")


def _rust(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ("slim",))
    if parsed is None:
        return None
    wanted, suite, variants = parsed
    wanted = ".".join(wanted.split(".")[:2]) if wanted and "." in wanted else None  # `1`: the newest 1.x
    chosen, version = nearest(RUST, wanted, suite)
    slim = "slim" in variants
    tools = {f"/usr/local/cargo/bin/{name}": f"/usr/bin/{name}" for name in ("cargo", "rustc", "rustdoc")}
    recipe = _on(chosen, None if slim else "full", ref,
                 packages=(["ca-certificates", "gcc", "libc6-dev", "wget"] if slim else []) + ["rustc", "cargo"],
                 env={"RUSTUP_HOME": "/usr/local/rustup", "CARGO_HOME": "/usr/local/cargo",
                      "PATH": f"/usr/local/cargo/bin:{PATH}", "RUST_VERSION": version},
                 links=tools, dirs={"/usr/local/cargo": 0o777, "/usr/local/cargo/bin": 0o777, "/usr/local/rustup": 0o777})
    return _noted(recipe, _says("Rust", version, wanted, f"Debian {chosen}'s"), chosen, suite, "Rust")


def _java(version: str, kind: str) -> list[str]:
    return [f"openjdk-{version}-{'jre' if kind == 'jre' else 'jdk'}-headless"]


def _openjdk(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ("jdk", "jre", "slim"))
    if parsed is None or (parsed[0] is None and tag not in ("", "latest")):
        return None
    wanted, suite, variants = parsed
    wanted = wanted.split(".")[0] if wanted else None
    chosen, version = nearest(JDK, wanted, suite)
    kind = "jre" if "jre" in variants else "jdk"
    slim = "slim" in variants
    home = f"/usr/local/openjdk-{wanted or version}"  # the image's path, leading to the stand-in's JDK
    recipe = _on(chosen, None if slim else "scm", ref,
                 packages=(["ca-certificates", "p11-kit"] if slim else ["bzip2", "unzip", "xz-utils"]) + _java(version, kind),
                 env={"JAVA_HOME": home, "PATH": f"{home}/bin:{PATH}", "LANG": "C.UTF-8", "JAVA_VERSION": version},
                 links={home: f"/usr/lib/jvm/java-{version}-openjdk-*"}, cmd=["jshell"] if kind == "jdk" else ["bash"])
    return _noted(recipe, _says("OpenJDK", version, wanted, f"Debian {chosen}'s"), chosen, suite, "OpenJDK")


def _temurin(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ("jdk", "jre"), UBUNTU_SUITES)
    if parsed is None:
        return None
    wanted, ubuntu, variants = parsed
    wanted = wanted.split(".")[0] if wanted else None
    ubuntu = ubuntu or "noble"
    kind = "jre" if "jre" in variants else "jdk"
    if ubuntu_archive() is not None:  # Ubuntu's own OpenJDK of that release
        chosen, version = ubuntu, nearest({ubuntu: UBUNTU_JDK[ubuntu]}, wanted, ubuntu)[1]
        where = f"Ubuntu {UBUNTU_VERSIONS[ubuntu]}'s"
    else:  # the Debian suite whose OpenJDK is nearest stands in for Ubuntu
        chosen, version = nearest(JDK, wanted, UBUNTU_STAND_IN[ubuntu])
        where = f"Debian {chosen}'s"
    home = "/opt/java/openjdk"
    fields = {"packages": ["curl", "wget", "gnupg", "fontconfig", "ca-certificates", "p11-kit", "binutils", "tzdata",
                           "locales", *_java(version, kind)],
              "env": {"JAVA_HOME": home, "PATH": f"{home}/bin:{PATH}", "LANG": "en_US.UTF-8", "LANGUAGE": "en_US:en",
                      "LC_ALL": "en_US.UTF-8", "JAVA_VERSION": version},
              "links": {home: f"/usr/lib/jvm/java-{version}-openjdk-*"}, "locales": ["en_US.UTF-8"],
              "cmd": ["jshell"] if kind == "jdk" else ["bash"]}
    if ubuntu_archive() is not None:
        recipe = _on(ubuntu, None, ref, **fields)
    else:
        recipe = _on(chosen, None, ref, **fields)
        recipe.substituted = f"Debian {chosen} stands in for Ubuntu {UBUNTU_VERSIONS[ubuntu]}"
        recipe.archive = f"Ubuntu {UBUNTU_VERSIONS[ubuntu]}'s"
    return _noted(recipe, _says("OpenJDK", version, wanted, where), chosen, None, "OpenJDK")


def _gcc(tag: str, ref: str) -> BaseRecipe | None:
    parsed = _parse(tag, (), ())
    if parsed is None or parsed[1] is not None:
        return None
    wanted = parsed[0].split(".")[0] if parsed[0] else None
    chosen, version = nearest(GCC, wanted, None)
    links = {f"/usr/local/bin/{name}": f"/usr/bin/{name}-{version}" for name in ("gcc", "g++", "gfortran")}
    links["/usr/local/bin/cc"] = f"/usr/bin/gcc-{version}"  # the image points cc at its own gcc
    recipe = _on(chosen, "full", ref, packages=[f"gcc-{version}", f"g++-{version}", f"gfortran-{version}"],
                 env={"GCC_VERSION": version}, links=links)
    return _noted(recipe, _says("GCC", version, wanted, f"Debian {chosen}'s"), chosen, None, "GCC")


FAMILIES = {"buildpack-deps": _buildpack, "node": _node, "golang": _golang, "rust": _rust, "openjdk": _openjdk,
            "eclipse-temurin": _temurin, "gcc": _gcc}


def official_recipe(repo: str, tag: str, ref: str) -> BaseRecipe | None:
    """The recipe for ``repo:tag`` of one of ``FAMILIES``, or None (another repository, or a tag we cannot build)."""
    make = FAMILIES.get(repo)
    return make(tag if tag != "latest" else "", ref) if make else None
