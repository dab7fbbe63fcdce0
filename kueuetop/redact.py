"""Credentials out of text bound for people or disk: `https://user:pass@host` and `?token=…`.

One helper, used wherever a message leaves kueuetop (errors on stderr, log lines, the audit
log), so a server URL or an echoed request carrying a secret is never shown or stored as is.
"""

from __future__ import annotations

import contextlib
import logging
import re

MASK = "***"

# scheme://userinfo@ — userinfo is everything up to the last "@" before the host part ends.
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@?#]*)@")
# Query or fragment parameters whose value is a credential (token=, access_token=, password=…).
_SECRET_PARAM = re.compile(
    r"(?P<key>[?&#;](?:[a-z0-9_.-]*(?:token|password|passwd|pwd|secret|signature|sig|key|auth|"
    r"credential)s?[a-z0-9_.-]*)=)(?P<value>[^&#\s\"'<>]*)", re.IGNORECASE)
# An Authorization header or bearer token echoed into a message.
# ("basic" alone is an ordinary word: only after "Authorization:".)
_BEARER = re.compile(r"(?P<key>(?:\bauthorization:\s*(?:basic|bearer)|\bbearer)\s+)(?P<value>[A-Za-z0-9._~+/=-]{4,})",
                     re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with URL user-info, credential query parameters and bearer tokens masked."""
    if not text:
        return text
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _SECRET_PARAM.sub(lambda m: f"{m['key']}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m['key']}{MASK}", text)


def one_line(text: str, limit: int = 300) -> str:
    """Redacted, whitespace collapsed to single spaces, control characters dropped, truncated."""
    text = "".join(ch if ch.isprintable() else " " for ch in redact(str(text)))
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


class RedactingFilter(logging.Filter):
    """A logging filter that masks credentials in the formatted message (and its traceback text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        with contextlib.suppress(Exception):  # a log line must never fail because of its filter
            record.msg, record.args = redact(record.getMessage()), ()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
        return True


def install_log_redaction() -> None:
    """Mask credentials in every log line kueuetop's process prints (root handlers and the
    last-resort handler that prints warnings when none is configured)."""
    handlers = [*logging.getLogger().handlers, logging.lastResort]
    for h in handlers:
        if h is not None and not any(isinstance(f, RedactingFilter) for f in h.filters):
            h.addFilter(RedactingFilter())
