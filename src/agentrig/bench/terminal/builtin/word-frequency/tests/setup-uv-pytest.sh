#!/bin/bash

# curl, then uv, then a project with pytest in the working directory
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
