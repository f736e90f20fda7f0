"""A module that fails when imported (for the preflight's check)."""

import a_module_that_does_not_exist  # noqa: F401
