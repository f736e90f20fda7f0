# agentrig — the README's two commands are `make demo` and `make test`; both install first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup chromium containers docker appworld mmdebstrap test test-fast demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "agentrig needs Python >= 3.11; set PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,ray]'
	@# an editable install leaves agentrig's own modules uncompiled (a wheel's install compiles them):
	@# compiled once here, not in every `agentrig` process the demo and the tests start
	$(BIN)/python -m compileall -q src >/dev/null
	@touch $(STAMP)

# Debian's packages the tests need, each said before it is installed (scripts/install-debian.sh):
# under CI always (a failure fails); otherwise AGENTRIG_<WHAT>=install|skip (AGENTRIG_SYSTEM for all),
# or asked on a terminal. Declined, the tests that need them skip (CI requires them).
# - chromium, minimal (--no-install-recommends), for the report test in a real browser;
# - podman with runc and slirp4netns: the container sandbox's tests, the services' network.
chromium:
	@scripts/install-debian.sh browser "$${CHROMIUM_CMD:-chromium}" -- chromium

containers:
	@scripts/install-debian.sh --with-recommends containers podman runc slirp4netns -- podman runc slirp4netns

# - Debian's docker.io (dockerd 20.10 with containerd and runc), minimally: the docker sandbox's tests.
#   The tests start a daemon of their own when none answers (scripts/start-dockerd.sh, data under
#   ~/.cache/agentrig/dockerd) and stop it after them (tests/dockerd.py).
docker:
	@scripts/install-debian.sh docker dockerd -- docker.io

# AppWorld's own environment (it pins pydantic 1, SQLAlchemy 1.4 …: a venv of its own): the AppWorld
# tests use it (tests/bench/appworld/conftest.py); `agentrig appworld setup` runs `appworld install`.
APPWORLD_VENV := .venv-appworld
APPWORLD_STAMP := $(APPWORLD_VENV)/.installed

appworld: $(APPWORLD_STAMP)

# Outside CI a machine that cannot install it still runs the rest of the suite (the AppWorld tests
# skip); under CI (CI=true) a failure here fails the build.
$(APPWORLD_STAMP): $(STAMP)
	@$(BIN)/agentrig appworld setup --env $(APPWORLD_VENV) && touch $(APPWORLD_STAMP) || { \
	  case "$$CI" in 1|true|yes) echo "error: AppWorld's environment could not be made (required under CI)"; exit 1;; \
	  *) echo "note: AppWorld's environment could not be made; the AppWorld tests will skip";; esac; }

# The anchors' own code for the export tests: Terminal-Bench, mini-SWE-agent and Harbor (pinned, from
# PyPI; Python >= 3.12) in a venv of their own, made once per set of pins and kept in the user's cache
# (~/.cache/agentrig/anchors/…; AGENTRIG_ANCHORS_VENV overrides; tests/anchors.py). Outside CI
# a machine without Python >= 3.12 still runs the rest (those tests skip); under CI it fails the build.
.PHONY: anchors
anchors: setup
	@$(BIN)/python -m tests.anchors

# Debian's mmdebstrap: terminal tasks' base images are roots built from packages with it
# (bench/terminal/images); installed when missing unless AGENTRIG_MMDEBSTRAP=skip, else those tests
# skip locally (and the demo says the host's root stands in).
mmdebstrap:
	@AGENTRIG_MMDEBSTRAP="$${AGENTRIG_MMDEBSTRAP:-install}" scripts/install-debian.sh --with-recommends mmdebstrap mmdebstrap -- mmdebstrap

# pytest-xdist workers: most tests wait on subprocesses and local servers, so 3 workers pay on
# 2 cores; one test file stays in one worker (module fixtures: the Ray cluster, shared servers).
# PYTEST_WORKERS=0 runs serially. Figures: docs/performance.md ("The test suite").
PYTEST_WORKERS ?= 3
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The whole suite, slow scale tests included, with every system package its tests need (CI runs
# exactly this: .ci/run only sets CI's variables).
# --durations=25: the slowest tests are listed at the end (docs/performance.md, "The whole suite").
test: setup chromium containers docker appworld mmdebstrap anchors
	$(BIN)/python -m pytest -q $(XDIST) --durations=25

# Everything but the slow scale tests.
test-fast: setup appworld
	$(BIN)/python -m pytest -q $(XDIST) -m 'not slow'

# mmdebstrap: the terminal section's tasks run on their images, roots built from packages once
# (then cached); without it the host's root stands in for them, and the demo says so
demo: setup mmdebstrap
	$(BIN)/agentrig demo

bench: setup
	$(BIN)/python perf/channel_overhead.py

clean:
	rm -rf $(VENV) $(APPWORLD_VENV) .appworld-test-data .pytest_cache build *.egg-info src/*.egg-info
