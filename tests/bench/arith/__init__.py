"""A third benchmark as a package of its own, outside agentrig ("arith": each task is a sum, the
agent answers, equality judges): ``benchmark.py`` (its settings, tasks, trial body, taxonomy,
commands and its own exception), ``scripted.py`` (its scripted endpoint, on agentrig's scripted
base). ``tests/bench/test_seam.py`` registers it with one line and plays it through ``agentrig run``."""
