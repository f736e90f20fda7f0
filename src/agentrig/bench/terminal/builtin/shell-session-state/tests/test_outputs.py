"""Hidden tests for shell-session-state: they run in the agent's shell session."""

import os


def test_current_directory():
    assert os.path.realpath(os.getcwd()) == "/app/deploy"


def test_target_exported():
    assert os.environ.get("DEPLOY_TARGET") == "staging-eu"


def test_retries_exported():
    assert os.environ.get("DEPLOY_RETRIES") == "3"
