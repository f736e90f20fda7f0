#!/bin/bash
ls -l /app/bin/make_report.sh /app/data/api_token.txt
chmod u+x /app/bin/make_report.sh
chmod 600 /app/data/api_token.txt
/app/bin/make_report.sh
cat /app/report.txt
