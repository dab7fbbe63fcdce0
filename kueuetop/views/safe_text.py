"""Strings from the cluster made safe to print: no control characters, no escape sequences.

Cluster data (condition messages, labels, names) is untrusted: an ESC sequence in a message
could rewrite the operator's terminal. Everything drawn or printed passes through `clean`.
"""

from __future__ import annotations

import re

# CSI/OSC/other ESC sequences, then any remaining C0/C1 control character except tab.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def clean(value: object, limit: int = 4096) -> str:
    """Printable text: escape sequences removed, other controls shown as U+FFFD, tabs → space."""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable() and len(s) <= limit:  # the common case: nothing to remove (no regex pass)
        return s
    if len(s) > limit:
        s = s[:limit] + "…"
    s = _ESCAPES.sub("", s)
    s = _CONTROLS.sub("\ufffd", s)
    return s.replace("\t", " ")
