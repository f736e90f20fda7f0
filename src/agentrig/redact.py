"""Keeping keys out of everything we print, log, store or raise.

Keys are read from the environment at call time (``read_secret``), which also registers the value
here; ``redact`` removes every registered value, and masked echoes of keys that servers put in
their error messages (``sk-ab***wxyz``), from any text. A logging filter applies it to every
record of the ``agentrig`` loggers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[redacted]"
_secrets: set[str] = set()
_lock = threading.Lock()
_pattern: re.Pattern[str] | None = None
# a key echoed with asterisks in the middle, as OpenAI-style servers do in 401 messages
_MASKED = re.compile(r"[A-Za-z0-9_\-]{0,12}\*{3,}[A-Za-z0-9_\-]{0,12}")
# bearer tokens in echoed headers
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',]+")


def register_secret(value: str | None) -> None:
    global _pattern
    if not value or value in _secrets or len(value.strip()) < 4:  # known (its stripped form too)
        return
    with _lock:
        before = len(_secrets)
        _secrets.add(value)
        stripped = value.strip()
        if stripped:
            _secrets.add(stripped)
        if len(_secrets) != before:
            ordered = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(s) for s in ordered))


def read_secret(env_var: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value of ``env_var`` (None when unset), registered for redaction."""
    value = (os.environ if env is None else env).get(env_var)
    register_secret(value)
    return value


def redact(text: str) -> str:
    if not text:
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _MASKED.sub(REDACTED, text)


def redact_url(url: str) -> str:
    """A URL fit to print: no user:password, no query string (which may carry a key)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = REDACTED if parts.query else ""
    return redact(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not break logging
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        return True


def get_logger(name: str) -> logging.Logger:
    """A logger whose every record is redacted (filters of a parent logger do not apply to
    records propagated from children, so each module logger gets its own)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger
