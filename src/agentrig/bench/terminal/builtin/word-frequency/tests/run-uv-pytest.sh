#!/bin/bash

uv run pytest $TEST_DIR/test_outputs.py -rA
