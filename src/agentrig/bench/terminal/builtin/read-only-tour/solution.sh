#!/bin/bash
cat /app/README.md
ls -la /app
