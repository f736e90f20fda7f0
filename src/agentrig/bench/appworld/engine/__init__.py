"""Scripts that run INSIDE AppWorld's own environment (its venv: ``appworld`` and its old pins).

Nothing here is imported by agentrig: ``worker.py`` is started as a process by the pool
(``../pool.py``) and ``synthetic.py`` (with its tasks, ``synthetic_tasks.py``) by the test-data
builder (``../synthetic.py``). They use the standard library and ``appworld`` only.
"""
