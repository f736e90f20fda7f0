"""Terminal tasks: Terminal-Bench 1 and Harbor task formats, sandboxes, the verifier, built-in tasks.

The floors inside this package (imports go down, never up, never sideways between two folders on
one level; ``tests/test_import_layers.py``'s ``PACKAGE_FLOORS`` enforces it, lazy imports included;
docs/terminal.md, "The floors inside bench/terminal", draws it)::

    4  this package's own modules   the benchmark, the episode, the verifier, agents (installed, reference),
                                    audit, availability, commands, images_cli, smoke, settings, exports
    3  sandbox/                     the sandbox kinds (bwrap, docker/podman, local), services, the warm verifier
    2  tasks/                       a task as read from disk: task files and model, Dockerfile, compose
                                    file, test scripts (staged, rewritten offline), result parsers
    1  shell.py      images/        running commands (stateless, persistent) · base roots built from packages
    0  core/                        sandbox settings, results and errors; the host's package-index settings;
                                    reading command output and scripts (network failures, fetches)
"""
