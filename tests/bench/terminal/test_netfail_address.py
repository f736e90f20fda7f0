"""A test that posts to an external judge given by its address (LiveCodeBench-Pro's
``http://38.80.122.117:8081``) and cannot reach it: the audit names that host from the tests' own
output — requests' ``HTTPConnectionPool(host='…'): Max retries exceeded with url: …`` — as it names
a host of a URL; a server on this machine's loopback stays the task's failure.

The output is pytest's own, from a real test run here (192.0.2.1 is a documentation address:
it answers nothing, refused or timed out, either way named)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentrig.bench.terminal.core.netfail import hosts_in, network_failure

JUDGE = """import requests

BASE = "http://{address}:8081"

def test_external_judge():
    r = requests.get(f"{{BASE.rstrip('/')}}/health", timeout=1)
    r.raise_for_status()
"""


def _pytest_output(tmp_path, address: str) -> str:
    pytest.importorskip("requests")
    (tmp_path / "test_judge.py").write_text(JUDGE.format(address=address))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_judge.py", "--tb=short", "-rA",
                           "--color=no"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout[-2000:]
    return done.stdout


def test_the_tests_output_names_a_judge_given_by_its_address(tmp_path):
    output = _pytest_output(tmp_path, "192.0.2.1")
    found = network_failure(output, remote_only=True)
    assert found is not None and found.startswith("could not reach 192.0.2.1: "), (found, output[-1500:])


def test_a_server_on_loopback_is_not_the_network(tmp_path):
    output = _pytest_output(tmp_path, "127.0.0.1")
    assert "Max retries exceeded" in output
    assert network_failure(output, remote_only=True) is None


def test_addresses_are_hosts_and_version_numbers_are_not():
    assert hosts_in("see http://38.80.122.117:8081/submit, HTTPConnectionPool(host='10.1.2.3', port=80) "
                    "and pip 23.0.1.2 from https://pypi.org/simple") == ["38.80.122.117", "pypi.org", "10.1.2.3"]


def test_apts_words_for_a_mirror_it_could_not_connect_to_name_the_registry():
    """apt inside a podman build that timed out connecting to Debian's mirror names it only as
    "Could not connect to deb.debian.org:80": the registry's outage (the plumbing's, replayed),
    never the task's needs_network."""
    from agentrig.bench.terminal.core.netfail import hosts_in, network_failure, registry_outage

    out = ("Err:1 http://deb.debian.org/debian bookworm InRelease\n"
           "  Could not connect to deb.debian.org:80 (203.0.113.80), connection timed out [IP: 203.0.113.80 80]\n"
           "W: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-amd64/Packages"
           "  Unable to connect to deb.debian.org:http: [IP: 203.0.113.80 80]\n")
    line = out.splitlines()[1]
    assert hosts_in(line) == ["deb.debian.org"]
    unreached = network_failure(line, "apt-get update", 100)
    assert unreached is not None and unreached.startswith("could not reach deb.debian.org")
    assert registry_outage(unreached) == "deb.debian.org"
    assert registry_outage(network_failure(out, "apt-get update", 100)) == "deb.debian.org"
    assert hosts_in("curl: (7) Failed to connect to example.org port 443 after 3 ms") == ["example.org"]
