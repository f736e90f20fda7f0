#!/bin/bash
echo agentrig-ok > /app/marker.txt
ls -la /app
