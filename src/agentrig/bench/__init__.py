"""The benchmarks, one package each behind the benchmark seam (``agentrig/benchmark.py``, whose
registry names each by its import path): ``tau/`` (τ²-bench), ``terminal/`` (Terminal-Bench and
Harbor tasks), ``appworld/`` (AppWorld). docs/benchmarks.md walks through adding one."""
