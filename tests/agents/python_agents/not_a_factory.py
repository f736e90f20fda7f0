"""A module whose entry names a value that is not a function (for the preflight's check)."""

make = 42
