"""The files run in a Python agent's own interpreter (``runner.py``, by path) and imported by its
code (``agentrig_agent.py``): standard library only, never importing agentrig."""
