"""The recording file: a magic line, then independently compressed, checksummed frames.

    file   = MAGIC frame*
    frame  = FRAME_HEAD payload
    FRAME_HEAD (29 bytes, big-endian): sync b"KTFR", type (1 byte: H header, D data, K keyframe),
             payload length (u32), CRC-32 of the payload (u32), first and last record time
             (2 × float64, epoch seconds)
    payload = zlib(JSON): H an object (the header), D a list of records, K an object (full state)

Every frame is complete on its own: appending one never rewrites an earlier byte, a reader may
read the file while it is written (a frame not yet fully written reads as a torn tail), and a
crash loses at most the frame being written. A frame whose length runs past the end of the file,
or whose checksum fails with nothing after it, is a torn tail: skipped with a warning. A bad
checksum or sync marker followed by more data is corruption: an error, as is a file that does not
start with MAGIC (foreign) or whose header names a newer format version.

The header (first frame, type H) is self-describing: {"format": FORMAT, "version": VERSION,
"kueuetop", "server", "context", "kueueApi", "start", "gpuFields"}. The records are described in
sources/recorder.py, which writes them.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

MAGIC = b"kueuetop-recording\n"
FORMAT = "kueuetop-recording"
VERSION = 1
SYNC = b"KTFR"
HEAD = struct.Struct(">4sBIIdd")
HEADER, DATA, KEYFRAME = ord("H"), ord("D"), ord("K")
FRAME_TYPES = (HEADER, DATA, KEYFRAME)
MAX_FRAME = 1 << 31  # a length beyond this is not a frame kueuetop wrote


class RecordingError(Exception):
    """The file cannot be read as a recording; `str()` is one line for people."""


@dataclass(frozen=True, slots=True)
class FrameInfo:
    offset: int  # of the frame head
    type: int
    length: int
    crc: int
    t0: float
    t1: float

    @property
    def payload_offset(self) -> int:
        return self.offset + HEAD.size


def encode_frame(ftype: int, t0: float, t1: float, payload: bytes, level: int = 6) -> bytes:
    """One frame of already-serialised JSON `payload`."""
    body = zlib.compress(payload, level)
    return HEAD.pack(SYNC, ftype, len(body), zlib.crc32(body), t0, t1) + body


def decode_payload(body: bytes) -> Any:
    return json.loads(zlib.decompress(body))


@dataclass
class Scan:
    frames: list[FrameInfo]
    end: int  # offset after the last complete frame
    torn: str = ""  # why the tail was skipped ("" when the file ends on a frame boundary)


def scan(f: BinaryIO, name: str, start: int = 0, frames: list[FrameInfo] | None = None) -> Scan:
    """Index the frames from `start` (after MAGIC when 0) by their heads; checks each payload's CRC.

    Raises RecordingError for a foreign file or corruption before the last frame."""
    out = frames if frames is not None else []
    if start == 0:
        f.seek(0)
        magic = f.read(len(MAGIC))
        if magic != MAGIC:
            if MAGIC.startswith(magic):
                raise RecordingError(f"{name} is truncated: it ends inside the file's first line")
            raise RecordingError(f"{name} is not a kueuetop recording (it does not start with {MAGIC.strip().decode()!r})")
        start = len(MAGIC)
    f.seek(0, 2)
    size = f.tell()
    pos = start
    while pos < size:
        f.seek(pos)
        head = f.read(HEAD.size)
        if len(head) < HEAD.size:
            return Scan(out, pos, f"an incomplete frame at byte {pos}")
        sync, ftype, length, crc, t0, t1 = HEAD.unpack(head)
        if sync != SYNC or ftype not in FRAME_TYPES or length > MAX_FRAME:
            raise RecordingError(f"{name} is corrupt at byte {pos} (no frame starts there)")
        if pos + HEAD.size + length > size:
            return Scan(out, pos, f"an incomplete frame at byte {pos}")
        body = f.read(length)
        if zlib.crc32(body) != crc:
            if pos + HEAD.size + length == size:
                return Scan(out, pos, f"a frame with a bad checksum at byte {pos}")
            raise RecordingError(f"{name} is corrupt at byte {pos} (checksum mismatch)")
        out.append(FrameInfo(pos, ftype, length, crc, t0, t1))
        pos += HEAD.size + length
    return Scan(out, pos)


def read_payload(f: BinaryIO, frame: FrameInfo, name: str) -> Any:
    f.seek(frame.payload_offset)
    body = f.read(frame.length)
    try:
        return decode_payload(body)
    except (zlib.error, ValueError) as exc:
        raise RecordingError(f"{name} is corrupt at byte {frame.offset} ({type(exc).__name__})") from None


def check_header(header: Any, name: str) -> dict[str, Any]:
    """The header object, or RecordingError for a foreign or newer file."""
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(f"{name} is not a kueuetop recording (its header names no {FORMAT!r} format)")
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise RecordingError(f"{name} has a bad recording format version {version!r}")
    if version > VERSION:
        raise RecordingError(f"{name} was written by a newer kueuetop (recording format version {version}; "
                             f"this kueuetop reads up to {VERSION}): upgrade kueuetop to replay it")
    return header
