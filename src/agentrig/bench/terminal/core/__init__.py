"""The terminal package's lowest floor: what every other part of it reads, importing nothing of it.

- ``base.py``: what every sandbox offers — ``SandboxSettings`` (the ``[sandbox]`` table),
  ``CommandResult``, the ``Sandbox`` protocol, ``SandboxError`` / ``TaskBuildError``, the limits;
- ``hostsettings.py``: this host's package-index settings for builds and trials (pip, npm, CA bundles);
- reading what commands print and what scripts run: ``netfail.py`` (a fetch that could not reach
  its host), ``shellread.py`` (a script line as the shell splits it), ``fetches.py`` (what a command
  fetches, from where), ``buildfail.py`` (why a build step failed when its output names no host).

Above it: ``shell.py`` and ``images/`` (floor 1), ``tasks/`` (2), ``sandbox/`` (3), the package's
own modules (4) — see the package's docstring.
"""
