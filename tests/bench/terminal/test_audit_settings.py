"""The audit never stops for one task, takes a run's sandbox settings, and tells this machine's TLS
settings from a task's need of the network (issue 33, item 4).

- a task folder with a broken ``task.yaml`` (bad YAML, a field of the wrong type, a key the task
  model refuses) and a broken ``task.toml`` among good tasks: every good task gets its verdict, each
  broken one ``invalid`` naming its file and field; exit code 0 (the audit completed);
- ``audit --config EXP.toml``: the experiment's ``[sandbox]`` table (and ``[benchmark]`` tasks) takes
  effect, a flag overrides it, a bad table is one clear message and exit code 1;
- ``build_network = "auto"``: "host-settings" with a pip configuration (or a CA bundle, an npm
  configuration) and True without — env and files made here, not the host's;
- a certificate failure against a package registry (pip's, npm's, curl's, apt's words) is this
  machine's TLS settings with the fix, in a real bwrap build and in the audit's verdict (``error``),
  never ``needs_network``; against a host beyond the registries it stays ``needs_network``.
"""

from __future__ import annotations

import json
import os

import pytest

from .run_support import agentrig, experiment, write_task
from .sandbox_support import needs_root_bwrap

# pip 26's own output when the sandbox lacks the certificate authority of this machine's TLS gateway
PIP_CERT_FAILURE = """Collecting pytest==8.4.1
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1006)'))': /simple/pytest/
Could not fetch URL https://pypi.org/simple/pytest/: There was a problem confirming the ssl certificate: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1006) - skipping
ERROR: Could not find a version that satisfies the requirement pytest==8.4.1 (from versions: none)
ERROR: No matching distribution found for pytest==8.4.1
"""
# Debian bookworm's pip 23 (python:3.11-slim's stand-in), as a real build printed it here: the line
# naming pypi.org carries the certificate's words past its 200th character
DEBIAN_PIP_CERT_FAILURE = """WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:992)'))': /simple/pytest/
Could not fetch URL https://pypi.org/simple/pytest/: There was a problem confirming the ssl certificate: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple/pytest/ (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:992)'))) - skipping
ERROR: Could not find a version that satisfies the requirement pytest==8.4.1 (from versions: none)
ERROR: No matching distribution found for pytest==8.4.1
"""
# npm 11's
NPM_CERT_FAILURE = """npm error code SELF_SIGNED_CERT_IN_CHAIN
npm error errno SELF_SIGNED_CERT_IN_CHAIN
npm error request to https://registry.npmjs.org/is-odd failed, reason: self-signed certificate in certificate chain
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T09_12_27_243Z-debug-0.log
"""
NPM_ISSUER = """npm ERR! code UNABLE_TO_GET_ISSUER_CERT_LOCALLY
npm ERR! errno UNABLE_TO_GET_ISSUER_CERT_LOCALLY
npm ERR! request to https://registry.npmjs.org/express failed, reason: unable to get local issuer certificate
"""
APT_CERT_FAILURE = """Err:1 https://deb.debian.org/debian bookworm InRelease
  Certificate verification failed: The certificate is NOT trusted. The certificate issuer is unknown.  Could not handshake: Error in the certificate verification. [IP: 151.101.2.132 443]
W: Failed to fetch https://deb.debian.org/debian/dists/bookworm/InRelease  Certificate verification failed: The certificate is NOT trusted. The certificate issuer is unknown.  Could not handshake: Error in the certificate verification. [IP: 151.101.2.132 443]
"""
CURL_CERT_FAILURE = "curl: (60) SSL certificate problem: self-signed certificate in certificate chain\nMore details here: https://curl.se/docs/sslcerts.html\n"
GIT_CERT_FAILURE = ("Cloning into 'y'...\nfatal: unable to access 'https://github.com/x/y.git/': SSL certificate problem: "
                    "self-signed certificate in certificate chain\n")


@needs_root_bwrap()
def test_a_task_that_cannot_be_read_is_its_verdict_and_the_audit_goes_on(tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks, "good")
    write_task(tasks, "lenient", test="def test_nothing():\n    assert True\n")
    (write_task(tasks, "bad-yaml") / "task.yaml").write_text("instruction: |-\n  hi\nparser_name: [pytest\n")
    (write_task(tasks, "wrong-type") / "task.yaml").write_text("instruction: hi\nmax_agent_timeout_sec: soon\n")
    (write_task(tasks, "odd-key") / "task.yaml").write_text("instruction: hi\n1: an integer key\n")  # the model refuses it
    harbor = tasks / "bad-toml"
    (harbor / "tests").mkdir(parents=True)
    (harbor / "task.toml").write_text("[agent]\ntimeout_sec = = 5\n")
    proc = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    rows = {t["task_id"]: t for t in doc["tasks"]}
    assert {k: v["status"] for k, v in rows.items()} == {
        "good": "ok", "lenient": "lenient", "bad-yaml": "invalid", "wrong-type": "invalid", "odd-key": "invalid",
        "bad-toml": "invalid"}
    assert list(rows) == sorted(rows)  # in id order, the unreadable among the others
    assert rows["bad-yaml"]["reason"].startswith(f"{tasks / 'bad-yaml' / 'task.yaml'}: (syntax): not valid YAML")
    assert "max_agent_timeout_sec: 'soon' is not a positive number of seconds" in rows["wrong-type"]["reason"]
    assert f"{tasks / 'odd-key' / 'task.yaml'}: extra.1" in rows["odd-key"]["reason"]
    assert "valid string" in rows["odd-key"]["reason"] and "(fix: " in rows["odd-key"]["reason"]
    assert rows["bad-toml"]["format"] == "harbor" and "not valid TOML" in rows["bad-toml"]["reason"]
    assert doc["summary"]["invalid"] == 4 and doc["summary"]["ok"] == 1 and doc["summary"]["lenient"] == 1
    assert sum(doc["summary"].values()) == 6
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == 6 and all("/6] " in ln for ln in lines)
    # `tasks list --skip-invalid` lists a task whose reading raised something else apart, too
    listed = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks, "--skip-invalid", "--json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {i["task_id"] for i in json.loads(listed.stdout)["invalid"]} == {"bad-yaml", "wrong-type", "odd-key", "bad-toml"}
    one = agentrig("tasks", "show", "--bench", "terminal", "odd-key", "--tasks", tasks)  # alone: one clear message
    assert one.returncode == 1 and "extra.1" in one.stderr and "Traceback" not in one.stderr


@needs_root_bwrap()
def test_audit_takes_the_experiments_sandbox_table_and_flags_override_it(tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks, "good")
    write_task(tasks, "other")
    arms = '[[arms]]\nname = "oracle"\nagent = { kind = "oracle" }\n'
    toml = experiment(tmp_path, "exp", arms, cache=tmp_path / "unused", tasks=tasks, benchmark='task_ids = ["good"]',
                      sandbox="memory_mb = 1024\nbuild_network = false\nroot = \"image\"\nshell = \"persistent\"")
    # the file's cache_dir, relative to the file as a run reads it
    toml.write_text(toml.read_text().replace(f'cache_dir = "{tmp_path / "unused"}"', 'cache_dir = "cache-of-exp"'))
    proc = agentrig("audit", "--bench", "terminal", "--config", toml, "--build-network", "host-settings", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert [(t["task_id"], t["status"]) for t in doc["tasks"]] == [("good", "ok")]  # [benchmark] task_ids
    assert doc["config"] == str(toml)
    got = doc["settings"]
    assert got["memory_mb"] == 1024 and got["shell"] == "persistent" and got["cache_dir"] == str(tmp_path / "cache-of-exp")
    assert got["build_network"] == "host-settings" == got["build_network_resolved"]  # the flag over the file
    assert list((tmp_path / "cache-of-exp" / "layers").glob("*/meta.json"))  # the layers were built there
    assert not (tmp_path / "unused").exists()
    # a bad [sandbox] table: the messages `agentrig run` gives, exit code 1, no traceback
    bad = experiment(tmp_path, "bad", arms, cache=tmp_path / "cache", sandbox='kind = "vm"\nmemory = 4')
    for args in ((), ("--json",)):
        proc = agentrig("audit", "--bench", "terminal", "--config", bad, *args)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        text = json.loads(proc.stdout)["error"] if args else proc.stderr
        assert f"{bad}: invalid experiment" in text and "sandbox.kind: Input should be 'bwrap'" in text
        assert "sandbox.memory: unknown setting; did you mean 'memory_mb'?" in text
    run = agentrig("run", bad, "--json")  # the same words from `agentrig run`
    assert run.returncode == 1 and "sandbox.memory: unknown setting; did you mean 'memory_mb'?" in run.stdout
    tau = tmp_path / "tau.toml"
    tau.write_text('[benchmark]\nkind = "tau2"\ndomains = ["airline"]\n' + arms.replace("oracle", "gold"))
    proc = agentrig("audit", "--bench", "terminal", "--config", tau)
    assert proc.returncode == 1 and "takes a terminal experiment's [sandbox]" in proc.stderr, proc.stderr
    proc = agentrig("audit", "--bench", "terminal", "--network", "maybe")
    assert proc.returncode == 1 and "--network 'maybe'" in proc.stderr and "true, false, task" in proc.stderr


def test_build_network_auto_is_the_hosts_settings_when_it_has_any(tmp_path):
    from agentrig.bench.terminal.core.hostsettings import host_index_settings, resolve_build_network
    from agentrig.bench.terminal.benchmark import compared_sandbox
    from agentrig.bench.terminal.core.base import SandboxSettings

    home = tmp_path / "home"
    home.mkdir()
    none: tuple[str, ...] = ()
    assert SandboxSettings().build_network == "auto"
    assert host_index_settings({}, home, none) == [] and resolve_build_network("auto", {}, home, none) is True
    for kept in (True, False, "host-settings"):
        assert resolve_build_network(kept, {}, home, none) == kept
    pip_conf = tmp_path / "pip.conf"
    pip_conf.write_text("[global]\nindex-url = https://token@mirror.example/simple\n")
    env = {"PIP_CONFIG_FILE": str(pip_conf)}
    assert host_index_settings(env, home, none) == [str(pip_conf)]  # names, never values
    assert resolve_build_network("auto", env, home, none) == "host-settings"
    assert resolve_build_network("auto", {"PIP_CONFIG_FILE": os.devnull}, home, none) is True  # pip: no file at all
    assert resolve_build_network("auto", {"PIP_INDEX_URL": "https://mirror.example/simple"}, home, none) == "host-settings"
    assert resolve_build_network("auto", {"SSL_CERT_FILE": str(pip_conf)}, home, none) == "host-settings"
    assert resolve_build_network("auto", {"SSL_CERT_FILE": str(tmp_path / "absent.pem")}, home, none) is True
    assert resolve_build_network("auto", {}, home, (str(pip_conf),)) == "host-settings"  # a site-wide pip.conf
    (home / ".npmrc").write_text("cafile=/etc/ssl/certs/ca-certificates.crt\n")
    assert host_index_settings({}, home, none) == [str(home / ".npmrc")]
    # a run stored before "auto" (build_network = true, the old default) compares equal to one at the new default
    assert compared_sandbox(SandboxSettings()) == compared_sandbox(SandboxSettings(build_network=True))
    assert compared_sandbox(SandboxSettings(build_network="host-settings"))["build_network"] == "host-settings"


def test_a_certificate_failure_against_a_registry_is_this_machines_settings():
    from agentrig.bench.terminal.core.netfail import TLS_SETTINGS, network_failure, settings_fault

    for output, command, registry in ((PIP_CERT_FAILURE, "/bin/sh -c pip install pytest==8.4.1", "pypi.org"),
                                      (DEBIAN_PIP_CERT_FAILURE, "/bin/sh -c python3 -m pip download pytest", "pypi.org"),
                                      (NPM_CERT_FAILURE, "/bin/sh -c npm install is-odd", "registry.npmjs.org"),
                                      (NPM_ISSUER, "/bin/sh -c npm ci", "registry.npmjs.org"),
                                      (APT_CERT_FAILURE, "/bin/sh -c apt-get update", "deb.debian.org"),
                                      (CURL_CERT_FAILURE, "/bin/sh -c curl -fsSL https://pypi.org/simple/", "pypi.org"),
                                      (CURL_CERT_FAILURE.splitlines()[0], "/bin/sh -c python3 -m pip install x", "pypi.org")):
        unreached = network_failure(output, command, 1)
        assert unreached is not None and unreached.startswith(f"could not reach {registry}: "), unreached
        fault = settings_fault(unreached, True)
        assert fault is not None and fault.startswith(f"{TLS_SETTINGS}, not the task's"), fault
        assert f"package registry {registry}" in fault
        assert 'fix: set [sandbox] build_network = "auto" (the default) or "host-settings"' in fault
        assert "CA bundle" in fault or "PIP_CERT" in fault
        assert "name the bundle" in settings_fault(unreached, "host-settings")  # had them: the bundle lacks the authority
    # a host beyond the registries: the task's need of the network, naming the host
    beyond = network_failure(GIT_CERT_FAILURE, "/bin/sh -c git clone https://github.com/x/y", 128)
    assert beyond.startswith("could not reach github.com: ") and settings_fault(beyond, True) is None
    assert settings_fault(network_failure(CURL_CERT_FAILURE, "curl https://example.com/x", 60), True) is None
    assert settings_fault("could not reach pypi.org: Could not resolve host: pypi.org", True) is None  # an outage, not TLS
    # a podman build's whole output: the host's fault (SandboxError, the trial invalid), not the task's
    from agentrig.bench.terminal.core.base import SandboxError, TaskBuildError
    from agentrig.bench.terminal.sandbox.container_images import build_error

    out = ("STEP 1/3: FROM python:3.13-slim\nSTEP 2/3: WORKDIR /app\nSTEP 3/3: RUN pip install pytest==8.4.1\n"
           + PIP_CERT_FAILURE + "Error: building at STEP \"RUN pip install pytest==8.4.1\": while running runtime: exit status 1\n")
    err = build_error("podman", out, True)
    assert isinstance(err, SandboxError) and TLS_SETTINGS in str(err), err
    beyond_out = out.replace(PIP_CERT_FAILURE, GIT_CERT_FAILURE)
    err = build_error("podman", beyond_out, True)
    assert isinstance(err, TaskBuildError) and err.exclusion == "needs_network" and "github.com" in str(err)


@needs_root_bwrap()
def test_the_audit_says_a_registrys_certificate_failure_is_this_machines_with_the_fix(tmp_path):
    # real bwrap builds whose RUN step prints what pip (and git) print when the sandbox lacks this
    # machine's certificate authority, and fails: the build had the network (build_network = true)
    tasks = tmp_path / "tasks"
    run = "FROM ubuntu:24.04\nWORKDIR /app\nCOPY fetch.log /tmp/fetch.log\nRUN cat /tmp/fetch.log >&2; exit 1\n"
    write_task(tasks, "pip-tls", dockerfile=run, files={"fetch.log": PIP_CERT_FAILURE})
    write_task(tasks, "git-tls", dockerfile=run, files={"fetch.log": GIT_CERT_FAILURE})
    write_task(tasks, "good")
    # and a real fetch from PyPI by the stand-in's own pip, without this machine's CA bundle: where the
    # registries are reached through a TLS-inspecting gateway (as here) it fails as the printed one does
    write_task(tasks, "pip-real", dockerfile="FROM python:3.11-slim\nWORKDIR /app\nRUN python3 -m pip download "
               "--no-deps --retries 1 --timeout 30 pytest==8.4.1 -d /tmp/wheels\n")
    proc = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache",
                    "--build-network", "true", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = {t["task_id"]: t for t in json.loads(proc.stdout)["tasks"]}
    real = rows.pop("pip-real")
    assert {k: v["status"] for k, v in rows.items()} == {"pip-tls": "error", "git-tls": "excluded", "good": "ok"}
    if real["status"] != "ok":  # "ok": this machine reaches PyPI with the image's own CA bundle (no gateway)
        assert real["status"] == "error" and "this machine's TLS settings" in real["reason"], real["reason"]
        assert "package registry pypi.org" in real["reason"] and 'build_network = "auto"' in real["reason"]
    pip = rows["pip-tls"]
    assert "this machine's TLS settings" in pip["reason"] and "package registry pypi.org" in pip["reason"], pip["reason"]
    assert 'build_network = "auto" (the default) or "host-settings"' in pip["reason"]
    assert "needs_network" not in pip["reason"] and pip["noop"] is None  # the noop's trial would say nothing more
    assert rows["git-tls"]["reason"].startswith("needs_network") and "github.com" in rows["git-tls"]["reason"]


@pytest.mark.parametrize("value", ["auto", "host-settings", True, False])
def test_an_experiment_takes_every_build_network_value(tmp_path, value):
    from agentrig.run.experiment import load_experiment

    shown = json.dumps(value)
    toml = experiment(tmp_path, "bn", '[[arms]]\nname = "o"\nagent = { kind = "oracle" }\n', cache=tmp_path / "c",
                      sandbox=f"build_network = {shown}")
    exp, _ = load_experiment(toml)
    assert exp.sandbox.build_network == value


@needs_root_bwrap()
def test_the_audit_plays_a_tb1_task_with_the_network_its_harness_gives_it(tmp_path):
    """Terminal-Bench 1's harness gives every task's container the network: by default the audit
    plays a TB1 task so (the oracle fetches from a server on this machine and passes); with
    ``--network task`` — `agentrig run`'s default, a TB1 task offline — the same oracle fails."""
    import http.server
    import threading

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the server's name for it
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok\n")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    tasks = tmp_path / "tasks"
    write_task(tasks, "fetches", solution=f"#!/bin/bash\nexec 3<>/dev/tcp/127.0.0.1/{port}\n"
                                          "printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3\ntail -n 1 <&3 > /app/out.txt\n")
    try:
        by_default = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache", "--json")
        offline = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache", "--json",
                           "--network", "task")
    finally:
        server.shutdown()
    assert by_default.returncode == 0 and offline.returncode == 0, by_default.stderr[-2000:] + offline.stderr[-2000:]
    default_doc, offline_doc = json.loads(by_default.stdout), json.loads(offline.stdout)
    assert default_doc["settings"]["network_as"] == "harness" and offline_doc["settings"]["network_as"] == "task"
    assert default_doc["tasks"][0]["status"] == "ok", default_doc["tasks"][0]["reason"]
    assert offline_doc["tasks"][0]["status"] == "broken", offline_doc["tasks"][0]["reason"]
    assert "network harness" in by_default.stderr.splitlines()[0]
