"""Terminal tasks: Terminal-Bench 1 and Harbor task formats, sandboxes, the verifier, built-in tasks."""
