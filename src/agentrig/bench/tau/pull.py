"""Fetch tau2-bench's data files (``data/tau2/...`` of sierra-research/tau2-bench) into a data root.

The file list, the pinned commit and the sha256/size of the files whose upstream bytes we know
ship in ``tau2_manifest.json``. At the pinned ref a known hash is checked and a mismatching file
is never left in place; at any other ref (or with ``verify=False``) files are fetched unchecked.
Either way the hashes seen are written to ``DEST/MANIFEST.sha256`` (``sha256sum -c`` format) and
``DEST/PULL.json`` (ref, source, per-file hash and whether it was checked).

Downloads go to ``<file>.part`` and resume with an HTTP Range request when interrupted, within one
run (``attempts``) and across runs. The URL of a file is ``{base}/{ref}/{prefix}/{path}``, or
``base`` formatted with ``{ref}``, ``{prefix}`` and ``{path}`` when it contains ``{path}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Literal

import httpx
from pydantic import BaseModel, Field, ValidationError

from ...errors import DataError

MANIFEST_RESOURCE = "tau2_manifest.json"
SUMS_FILE = "MANIFEST.sha256"
RECORD_FILE = "PULL.json"
_CHUNK = 1 << 16


class ManifestFile(BaseModel):
    path: str  # relative to the data root (and to ``prefix`` upstream)
    sha256: str | None = None
    size: int | None = None
    optional: bool = False  # absent upstream at some refs: a 404 skips it


class Manifest(BaseModel):
    repo: str
    ref: str
    base_url: str
    prefix: str = "data/tau2"
    hash_source: str | None = None
    files: list[ManifestFile]

    def is_pinned(self, ref: str) -> bool:
        return ref == self.ref or (len(ref) >= 7 and self.ref.startswith(ref))


class FileOutcome(BaseModel):
    path: str
    status: Literal["downloaded", "resumed", "present", "absent"]
    sha256: str | None = None
    size: int | None = None
    checked: bool = False  # the sha256 was compared with the manifest's
    resumed_from: int = 0


class PullRecord(BaseModel):
    repo: str
    ref: str
    url_template: str
    pinned: bool
    files: dict[str, FileOutcome] = Field(default_factory=dict)


class PullResult(BaseModel):
    dest: str
    ref: str
    pinned: bool
    verified: bool
    files: list[FileOutcome]


def load_manifest() -> Manifest:
    text = resources.files(__package__).joinpath(MANIFEST_RESOURCE).read_text(encoding="utf-8")
    return Manifest.model_validate_json(text)


def file_url(base: str, ref: str, prefix: str, path: str) -> str:
    if "{path}" in base:
        return base.format(ref=ref, prefix=prefix, path=path)
    rel = f"{prefix.strip('/')}/{path}" if prefix.strip("/") else path
    return f"{base.rstrip('/')}/{ref}/{rel}"


def pull_tau2(
    dest: str | Path,
    *,
    ref: str | None = None,
    base_url: str | None = None,
    verify: bool = True,
    attempts: int = 3,
    timeout: float = 60.0,
    manifest: Manifest | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
) -> PullResult:
    """Fetch every manifest file into ``dest`` (a data root); raises DataError on a failure."""
    man = manifest or load_manifest()
    ref = ref or man.ref
    base = base_url or man.base_url
    pinned = man.is_pinned(ref)
    check = pinned and verify
    dest = Path(dest).expanduser()
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create {dest}: {exc}.\n  fix: choose a writable --dest") from None
    previous = _read_record(dest)
    record = PullRecord(repo=man.repo, ref=ref, url_template=file_url(base, "{ref}", man.prefix, "{path}"),
                        pinned=pinned)
    if previous is not None and previous.ref == ref:
        record.files.update(previous.files)
    outcomes: list[FileOutcome] = []
    with httpx.Client(timeout=timeout, follow_redirects=True,
                      headers={"Accept-Encoding": "identity", "User-Agent": "agentrig-data-pull"}) as client:
        for entry in man.files:
            expected = entry.sha256 if check else None
            outcome = _fetch_one(client, dest, entry, file_url(base, ref, man.prefix, entry.path),
                                 expected, record.files.get(entry.path), attempts)
            outcomes.append(outcome)
            if outcome.status == "absent":
                record.files.pop(entry.path, None)
            else:
                record.files[entry.path] = outcome
            _write_record(dest, record)
            if on_file is not None:
                on_file(outcome)
    return PullResult(dest=str(dest), ref=ref, pinned=pinned, verified=check, files=outcomes)


def _fetch_one(client: httpx.Client, dest: Path, entry: ManifestFile, url: str, expected: str | None,
               seen: FileOutcome | None, attempts: int) -> FileOutcome:
    target = dest / entry.path
    if target.is_file():
        digest = sha256_file(target)
        if (expected is not None and digest == expected) or (
                expected is None and seen is not None and seen.sha256 == digest):
            return FileOutcome(path=entry.path, status="present", sha256=digest, size=target.stat().st_size,
                               checked=expected is not None)
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    resumed_from = _download(client, url, part, entry, max(1, attempts))
    if resumed_from is None:
        return FileOutcome(path=entry.path, status="absent")
    digest = sha256_file(part)
    size = part.stat().st_size
    if expected is not None and (digest != expected or (entry.size is not None and size != entry.size)):
        part.unlink(missing_ok=True)
        target.unlink(missing_ok=True)  # whatever was there did not match either
        raise DataError(
            f"{entry.path}: sha256 mismatch for {url}\n"
            f"  expected {expected} ({entry.size} bytes), got {digest} ({size} bytes); "
            f"the download was discarded.\n"
            "  fix: run again (a corrupted transfer); if it persists the upstream file changed at this "
            "ref or --base-url serves other bytes: check the source, or pass --no-verify to accept it"
        )
    os.replace(part, target)
    return FileOutcome(path=entry.path, status="resumed" if resumed_from else "downloaded", sha256=digest,
                       size=size, checked=expected is not None, resumed_from=resumed_from)


def _download(client: httpx.Client, url: str, part: Path, entry: ManifestFile, attempts: int) -> int | None:
    """Bring ``part`` to the full file; returns the byte it last resumed at (0: whole body), or None
    when an optional file is absent upstream."""
    resumed = 0
    last_error = ""
    restarts = 0
    attempt = 0
    while attempt < attempts:
        attempt += 1
        offset = part.stat().st_size if part.is_file() else 0
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            with client.stream("GET", url, headers=headers) as resp:
                code = resp.status_code
                if code == 416 and offset and restarts < 2:
                    part.unlink(missing_ok=True)  # the partial file does not fit the server's copy
                    restarts += 1
                    attempt -= 1
                    continue
                if code == 404:
                    if entry.optional:
                        part.unlink(missing_ok=True)
                        return None
                    raise DataError(
                        f"{entry.path}: not found upstream (HTTP 404 for {url}).\n"
                        "  fix: check --ref (a commit of sierra-research/tau2-bench that has this file) "
                        "and --base-url"
                    )
                if code == 429 or code >= 500:
                    last_error = f"HTTP {code}"
                    _backoff(attempt, attempts)
                    continue
                if code == 206 and offset:
                    start = _range_start(resp.headers.get("content-range", ""))
                    if start != offset:
                        part.unlink(missing_ok=True)
                        last_error = f"server answered the range request from byte {start}, not {offset}"
                        continue
                    mode, resumed = "ab", offset
                elif code == 200:
                    mode, resumed = "wb", 0  # no range support (or a fresh start): take the whole body
                else:
                    raise DataError(
                        f"{entry.path}: HTTP {code} for {url}.\n  fix: check --base-url and --ref"
                    )
                with open(part, mode) as fh:
                    for chunk in resp.iter_raw(_CHUNK):
                        fh.write(chunk)
                return resumed
        except httpx.HTTPError as exc:
            last_error = f"{type(exc).__name__}: {exc}"
            _backoff(attempt, attempts)
    have = part.stat().st_size if part.is_file() else 0
    raise DataError(
        f"{entry.path}: download from {url} failed after {attempts} attempt(s) ({last_error}); "
        f"{have} bytes kept in {part}.\n"
        "  fix: run the same command again to resume, or check the network / --base-url"
    )


def _range_start(content_range: str) -> int | None:
    # "bytes 100-199/200"
    try:
        unit, rest = content_range.split(" ", 1)
        return int(rest.split("-", 1)[0]) if unit == "bytes" else None
    except ValueError:
        return None


def _backoff(attempt: int, attempts: int) -> None:
    if attempt < attempts:
        time.sleep(min(0.2 * 2 ** (attempt - 1), 5.0))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_record(dest: Path) -> PullRecord | None:
    path = dest / RECORD_FILE
    if not path.is_file():
        return None
    try:
        return PullRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, OSError):
        return None  # an unreadable record only costs re-checking the files


def _write_record(dest: Path, record: PullRecord) -> None:
    tmp = dest / (RECORD_FILE + ".tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, dest / RECORD_FILE)
    sums = "".join(f"{o.sha256}  {p}\n" for p, o in sorted(record.files.items()) if o.sha256)
    tmp = dest / (SUMS_FILE + ".tmp")
    tmp.write_text(sums, encoding="utf-8")
    os.replace(tmp, dest / SUMS_FILE)


def manifest_from_dir(root: str | Path, ref: str, base: Manifest | None = None) -> Manifest:
    """A manifest for ``ref`` with the hashes and sizes of the files under ``root`` (for maintainers:
    pull a new ref, check it, then save ``manifest_from_dir(dest, ref).model_dump_json(indent=2)``
    as ``tau2_manifest.json``)."""
    man = base or load_manifest()
    root = Path(root)
    files = []
    for entry in man.files:
        path = root / entry.path
        if path.is_file():
            files.append(entry.model_copy(update={"sha256": sha256_file(path), "size": path.stat().st_size}))
        else:
            files.append(entry.model_copy(update={"sha256": None, "size": None}))
    return man.model_copy(update={"ref": ref, "files": files})


def describe(result: PullResult) -> dict:
    """A JSON-ready summary of a pull."""
    return json.loads(result.model_dump_json())
