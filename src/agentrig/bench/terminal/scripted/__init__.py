"""The terminal benchmark's scripted parts, on the generic scripted-responder base of ``agentrig.testing``:

- ``solution_endpoint``: a local OpenAI-compatible endpoint that plays each task's solution as the
  agent asking (``python -m agentrig.bench.terminal.scripted.solution_endpoint``); ``agent_protocols``:
  how each agent (the bash agent, mini-swe-agent, Codex, Claude Code, a user's own) asks and is
  answered; ``memory``: the memory plug-in's replies for a terminal trial.
- ``killed_run`` and ``installed_run``: acceptance protocols played from the outside (a runner
  SIGKILLed and resumed; installed agents through faults and an outage), for tests and ``perf/``.

``TerminalBenchmark.scripted_endpoint`` hands the solution endpoint out through the seam (the demo)."""
