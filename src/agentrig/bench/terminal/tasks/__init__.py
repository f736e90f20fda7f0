"""A terminal task as agentrig reads it from disk (floor 2 of the package: below the sandboxes).

- ``taskfile.py`` reads Terminal-Bench 1 (``task.yaml``) and Harbor (``task.toml``) directories into
  ``taskmodel.py``'s ``TerminalTask`` (and ``support``: can a sandbox kind run it, and if not why);
- ``dockerfile.py``: the Dockerfile subset replayed without a container engine (``BuildPlan``);
- ``compose.py`` (the compose file, read once), ``compose_volumes.py`` (the agent service's binds of
  the task's folder), ``compose_check.py`` (whether a sandbox kind honours the file);
- the task's tests: ``testscripts.py`` (its scripts rewritten for the offline tool chain),
  ``staging.py`` (staged as ``/tests`` will hold them, the verifier's command and the warm
  verifier's plan), ``parsers.py`` / ``tb_parsers.py`` (reading the tests' output).

It imports ``core/`` and ``images/`` (a ``FROM``'s recipe), never a sandbox, a shell or the
package's own modules above.
"""
