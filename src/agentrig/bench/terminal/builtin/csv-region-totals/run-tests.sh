#!/bin/bash

# Set up a fresh pytest with uv, away from anything installed in the task's image.
apt-get update
apt-get install -y curl

curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh
source $HOME/.local/bin/env

if [ "$PWD" = "/" ]; then
    echo "Error: the working directory is /; the Dockerfile should set a WORKDIR."
    exit 1
fi

uv init
uv add pytest==8.4.1

uv run pytest $TEST_DIR/test_outputs.py -rA
