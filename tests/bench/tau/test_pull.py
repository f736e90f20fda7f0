"""`agentrig data pull tau2` against a real local HTTP server serving a fake upstream tree."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentrig.bench.tau import pull
from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.pull import Manifest, ManifestFile, load_manifest, pull_tau2
from agentrig.errors import DataError

PINNED = load_manifest().ref


class Upstream:
    """Serves ``tree/<ref>/data/tau2/...`` like raw.githubusercontent.com, with Range support.

    ``drop_after[path] = n``: the next full (non-range) GET of that path sends n bytes of the body,
    then the connection is cut. ``requests`` records (path, Range header).
    """

    def __init__(self, tree: Path):
        self.tree = tree
        self.drop_after: dict[str, int] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.ignore_range = False
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                upstream.requests.append((self.path, rng))
                file = upstream.tree / self.path.lstrip("/")
                if not file.is_file():
                    self.send_error(404)
                    return
                body = file.read_bytes()
                start = 0
                if rng and not upstream.ignore_range:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                chunk = body[start:]
                self.send_header("Content-Length", str(len(chunk)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                cut = upstream.drop_after.pop(self.path, None) if not rng else None
                if cut is not None:
                    self.wfile.write(chunk[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _fake_tree(tau2_root: Path, tmp_path: Path, ref: str = PINNED, only: list[str] | None = None) -> Path:
    """Upstream at ``ref``: the manifest files the shared copy has (solo files are absent)."""
    tree = tmp_path / "upstream"
    for entry in load_manifest().files:
        if only is not None and entry.path not in only:
            continue
        src = tau2_root / entry.path
        if src.is_file():
            dst = tree / ref / "data" / "tau2" / entry.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
    return tree


def _small_manifest(tree: Path, ref: str, names: list[str], with_hashes: bool = True) -> Manifest:
    files = []
    for name in names:
        blob = (tree / ref / "data" / "tau2" / name).read_bytes()
        files.append(ManifestFile(path=name, sha256=hashlib.sha256(blob).hexdigest() if with_hashes else None,
                                  size=len(blob) if with_hashes else None))
    return Manifest(repo="sierra-research/tau2-bench", ref=ref, base_url="unused", files=files)


def test_packaged_manifest_is_sane():
    man = load_manifest()
    assert len(man.ref) == 40 and man.base_url == "https://raw.githubusercontent.com/sierra-research/tau2-bench"
    paths = [f.path for f in man.files]
    assert len(paths) == len(set(paths))
    for needed in ("domains/airline/db.json", "domains/telecom/db.toml", "domains/telecom/user_db.toml",
                   "domains/telecom/tech_support_workflow.md", "domains/mock/tasks.json",
                   "user_simulator/simulation_guidelines_tools.md"):
        assert needed in paths
    assert all(f.sha256 is None or (len(f.sha256) == 64 and f.size) for f in man.files)
    assert pull.file_url(man.base_url, man.ref, man.prefix, "domains/airline/db.json") == (
        f"https://raw.githubusercontent.com/sierra-research/tau2-bench/{man.ref}/data/tau2/domains/airline/db.json")
    assert pull.file_url("http://h/{ref}/x/{path}", "abc", "data/tau2", "a/b.json") == "http://h/abc/x/a/b.json"


def test_pull_whole_manifest_gives_a_usable_data_root(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path)
    dest = tmp_path / "dest"
    with Upstream(tree) as up:
        result = pull_tau2(dest, base_url=up.base)
        by = {f.path: f for f in result.files}
        assert result.pinned and result.verified
        assert by["domains/airline/db.json"].checked and by["domains/airline/db.json"].status == "downloaded"
        assert not by["domains/telecom/tasks.json"].checked  # hash unknown: fetched unchecked
        assert by["domains/telecom/tasks_solo.json"].status == "absent"  # optional, 404
        assert not (dest / "domains/telecom/tasks_solo.json").exists()
        assert len(load_tasks(dest, "telecom")) == 114
        sums = (dest / "MANIFEST.sha256").read_text().splitlines()
        want = hashlib.sha256((tau2_root / "domains/telecom/tasks.json").read_bytes()).hexdigest()
        assert f"{want}  domains/telecom/tasks.json" in sums
        assert not list(dest.rglob("*.part"))
        # second run: nothing fetched again, the unchecked files recognised from PULL.json
        n = len(up.requests)
        again = pull_tau2(dest, base_url=up.base)
        assert {f.status for f in again.files} == {"present", "absent"}
        assert len(up.requests) - n == sum(f.status == "absent" for f in again.files)


def test_resume_after_dropped_connection(tau2_root, tmp_path):
    ref = PINNED
    names = ["domains/airline/db.json", "domains/airline/policy.md"]
    tree = _fake_tree(tau2_root, tmp_path, only=names)
    man = _small_manifest(tree, ref, names)
    url_path = f"/{ref}/data/tau2/domains/airline/db.json"
    dest = tmp_path / "dest"
    with Upstream(tree) as up:
        up.drop_after[url_path] = 1_000_000
        with pytest.raises(DataError) as exc:
            pull_tau2(dest, base_url=up.base, manifest=man, attempts=1)
        assert "run the same command again to resume" in str(exc.value)
        part = dest / "domains/airline/db.json.part"
        kept = part.stat().st_size
        assert 0 < kept <= 1_000_000 and not (dest / "domains/airline/db.json").exists()
        result = pull_tau2(dest, base_url=up.base, manifest=man, attempts=1)
        db = next(f for f in result.files if f.path == "domains/airline/db.json")
        assert db.status == "resumed" and db.resumed_from == kept and db.checked
        assert (url_path, f"bytes={kept}-") in up.requests
    assert (dest / "domains/airline/db.json").read_bytes() == (tau2_root / "domains/airline/db.json").read_bytes()
    assert not part.exists()


def test_in_run_retry_resumes_too(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path, only=["domains/retail/db.json"])
    man = _small_manifest(tree, PINNED, ["domains/retail/db.json"])
    with Upstream(tree) as up:
        up.drop_after[f"/{PINNED}/data/tau2/domains/retail/db.json"] = 300_000
        result = pull_tau2(tmp_path / "dest", base_url=up.base, manifest=man, attempts=3)
        assert result.files[0].status == "resumed" and result.files[0].checked
        assert [r for _, r in up.requests] == [None, f"bytes={result.files[0].resumed_from}-"]


def test_server_without_range_support_restarts_cleanly(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path, only=["domains/retail/db.json"])
    man = _small_manifest(tree, PINNED, ["domains/retail/db.json"])
    with Upstream(tree) as up:
        up.ignore_range = True
        up.drop_after[f"/{PINNED}/data/tau2/domains/retail/db.json"] = 300_000
        result = pull_tau2(tmp_path / "dest", base_url=up.base, manifest=man, attempts=2)
        assert result.files[0].status == "downloaded" and result.files[0].checked


def test_hash_mismatch_is_a_clear_error_and_leaves_nothing(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path, only=["domains/mock/db.json", "domains/airline/policy.md"])
    man = _small_manifest(tree, PINNED, ["domains/mock/db.json", "domains/airline/policy.md"])
    served = tree / PINNED / "data/tau2/domains/airline/policy.md"
    served.write_text(served.read_text() + "\nA rule added upstream.\n")  # upstream "changed"
    dest = tmp_path / "dest"
    with Upstream(tree) as up:
        with pytest.raises(DataError) as exc:
            pull_tau2(dest, base_url=up.base, manifest=man)
        msg = str(exc.value)
        assert "domains/airline/policy.md: sha256 mismatch" in msg and man.files[1].sha256 in msg
        assert "--no-verify" in msg
        assert not (dest / "domains/airline/policy.md").exists()
        assert not (dest / "domains/airline/policy.md.part").exists()
        assert (dest / "domains/mock/db.json").is_file()  # the good one before it stays
        # accepted on request, with the hash seen recorded
        result = pull_tau2(dest, base_url=up.base, manifest=man, verify=False)
        assert not result.verified and all(not f.checked for f in result.files)
    seen = hashlib.sha256(served.read_bytes()).hexdigest()
    assert f"{seen}  domains/airline/policy.md" in (dest / "MANIFEST.sha256").read_text()


def test_a_corrupt_local_file_is_replaced(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path, only=["domains/mock/db.json"])
    man = _small_manifest(tree, PINNED, ["domains/mock/db.json"])
    dest = tmp_path / "dest"
    (dest / "domains/mock").mkdir(parents=True)
    (dest / "domains/mock/db.json").write_text("{}")
    with Upstream(tree) as up:
        result = pull_tau2(dest, base_url=up.base, manifest=man)
    assert result.files[0].status == "downloaded"
    assert (dest / "domains/mock/db.json").read_bytes() == (tau2_root / "domains/mock/db.json").read_bytes()


def test_other_ref_downloads_unchecked_and_records_hashes(tau2_root, tmp_path):
    other = "0123456789abcdef0123456789abcdef01234567"
    tree = _fake_tree(tau2_root, tmp_path, ref=other)
    # a file whose pinned hash would not match: at another ref that is no error
    served = tree / other / "data/tau2/domains/mock/policy.md"
    served.write_text(served.read_text() + "\nchanged at this ref\n")
    dest = tmp_path / "dest"
    with Upstream(tree) as up:
        result = pull_tau2(dest, ref=other, base_url=up.base)
        assert not result.pinned and not result.verified
        assert all(not f.checked for f in result.files)
        assert all(path.startswith(f"/{other}/") for path, _ in up.requests)
    record = json.loads((dest / "PULL.json").read_text())
    assert record["ref"] == other and record["pinned"] is False
    sums = dict(line.split("  ")[::-1] for line in (dest / "MANIFEST.sha256").read_text().splitlines())
    assert sums["domains/mock/policy.md"] == hashlib.sha256(served.read_bytes()).hexdigest()
    assert len(sums) == sum(f.status != "absent" for f in result.files)


def test_required_file_missing_upstream(tau2_root, tmp_path):
    tree = _fake_tree(tau2_root, tmp_path, only=["domains/mock/db.json"])
    man = _small_manifest(tree, PINNED, ["domains/mock/db.json"])
    man.files.append(ManifestFile(path="domains/mock/nothere.json"))
    with Upstream(tree) as up:
        with pytest.raises(DataError, match=r"domains/mock/nothere\.json: not found upstream \(HTTP 404"):
            pull_tau2(tmp_path / "dest", base_url=up.base, manifest=man)


def test_unreachable_server(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    man = Manifest(repo="r", ref=PINNED, base_url="unused", files=[ManifestFile(path="domains/x/a.json")])
    with pytest.raises(DataError, match="failed after 2 attempt"):
        pull_tau2(tmp_path / "d", base_url=f"http://127.0.0.1:{port}", manifest=man, attempts=2, timeout=2)


def test_manifest_from_dir(tau2_root, tmp_path):
    man = pull.manifest_from_dir(tau2_root, "feedface" * 5)
    by = {f.path: f for f in man.files}
    assert man.ref == "feedface" * 5
    assert by["domains/telecom/tasks.json"].size == (tau2_root / "domains/telecom/tasks.json").stat().st_size
    assert by["domains/telecom/tasks_solo.json"].sha256 is None
    # the packaged hashes are those of the reference copy
    pinned = {f.path: f.sha256 for f in load_manifest().files if f.sha256}
    assert pinned and all(by[p].sha256 == h for p, h in pinned.items())


def test_part_file_longer_than_upstream_copy_restarts(tau2_root, tmp_path):
    names = ["domains/mock/policy.md"]
    tree = _fake_tree(tau2_root, tmp_path, only=names)
    man = _small_manifest(tree, PINNED, names)
    part = tmp_path / "dest" / "domains/mock/policy.md.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 5000)  # longer than the file: the server answers 416
    with Upstream(tree) as up:
        result = pull_tau2(tmp_path / "dest", base_url=up.base, manifest=man)
        assert [r for _, r in up.requests] == ["bytes=5000-", None]
    assert result.files[0].status == "downloaded" and result.files[0].checked
    assert (tmp_path / "dest/domains/mock/policy.md").read_bytes() == (tau2_root / names[0]).read_bytes()
