"""τ²-bench behind the benchmark seam (``benchmark.py``): its domains (``domains/``), data and tasks,
the conversation of agent, user simulator and tools (``episode.py``), its judge, failure taxonomy,
exports and commands. See docs/tau2.md."""
