#!/bin/bash
tr -cs 'A-Za-z' '\n' < /app/notes.txt | tr 'A-Z' 'a-z' | grep -v '^$' \
  | sort | uniq -c | sort -k1,1nr -k2,2 | head -5 | awk '{print $1, $2}' > /app/top_words.txt
cat /app/top_words.txt
