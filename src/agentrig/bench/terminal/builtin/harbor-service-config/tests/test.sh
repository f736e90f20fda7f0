#!/bin/bash
# Grades the configuration item by item (partial credit) into /logs/verifier/reward.json.
python3 /tests/check_config.py
