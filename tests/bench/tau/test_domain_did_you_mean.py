"""Issue 23.11: an unknown domain gets a "did you mean" when a known one is close."""

from __future__ import annotations

import pytest

from agentrig.bench.tau.domains import available_domains, get_domain
from agentrig.errors import ConfigError


def test_a_misspelt_domain_gets_did_you_mean():
    assert "airline" in available_domains()
    with pytest.raises(ConfigError) as err:
        get_domain("airlin")
    assert "did you mean 'airline'?" in str(err.value) and "available domains:" in str(err.value)


def test_a_far_name_gets_no_guess():
    with pytest.raises(ConfigError) as err:
        get_domain("spaceship")
    assert "did you mean" not in str(err.value)
