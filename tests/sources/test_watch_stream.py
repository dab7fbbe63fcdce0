"""A watch stream closed from another thread while it reads (the liveness probe closing streams
on a partition): with urllib3 < 2.3, which has no `shutdown()`, the read in progress fails on
the dropped file object. That is a cut connection, resumed from its resourceVersion, not an
informer failure (which lists again)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
import urllib3

from kueuetop.sources.kube_http import Stream


class _Response:
    """What urllib3 < 2.3's response does when `release_conn()` runs under a chunked read: the
    next read finds `_fp` gone (http/client.py _safe_read: 'NoneType' object has no attribute 'read')."""

    def __init__(self) -> None:
        self.fp: io.BytesIO | None = io.BytesIO(b'{"type": "ADDED", "object": {}}\n')

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        while data := self.fp.read(amt):  # type: ignore[union-attr]
            yield data

    def release_conn(self) -> None:
        self.fp = None


def _stream(raw: _Response) -> Stream:
    s = Stream.__new__(Stream)  # the opened response is the part under test, not the request
    s._raw, s._closed = raw, False  # type: ignore[assignment]
    return s


def test_a_stream_closed_during_a_read_ends_as_a_cut_connection() -> None:
    s = _stream(_Response())
    events = iter(s)
    assert next(events) == {"type": "ADDED", "object": {}}
    s.close()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(events)


def test_the_same_error_on_a_stream_nobody_closed_is_not_hidden() -> None:
    raw = _Response()
    events = iter(_stream(raw))
    next(events)
    raw.fp = None  # dropped by something other than close(): a bug to report, not a cut
    with pytest.raises(AttributeError):
        next(events)
