"""One module per ``agentrig`` verb: parse nothing (cli.py does), open, call, print, exit code."""
