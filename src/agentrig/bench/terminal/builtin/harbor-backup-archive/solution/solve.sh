#!/bin/bash
set -e
find /app/site | sort
mkdir -p /app/backup
tar -C /app -czf /app/backup/site.tar.gz --exclude='*.log' --exclude='site/cache' site
tar -tzf /app/backup/site.tar.gz
