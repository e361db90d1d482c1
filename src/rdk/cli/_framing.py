"""rdk's binary framing, and line input.

``rdk produce --binary`` reads frames and ``rdk consume --format raw`` writes them: each
record is a 4-byte big-endian unsigned length N followed by N bytes of value; N =
0xFFFFFFFF (``NULL_FRAME``) marks a null value (a tombstone) and no bytes follow.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import IO

NULL_FRAME = 0xFFFFFFFF
_HEADER = struct.Struct(">I")


def write_frame(out: IO[bytes], value: bytes | None) -> None:
    """Write one record in rdk's framing (4-byte big-endian length, then the bytes)."""
    out.write(frame(value))


def frame(value: bytes | None) -> bytes:
    """One record in rdk's framing, as bytes."""
    return _HEADER.pack(NULL_FRAME) if value is None else _HEADER.pack(len(value)) + value


def read_frames(stream: IO[bytes]) -> Iterator[bytes | None]:
    """Records from rdk's framing; ValueError naming the byte position on a truncated record."""
    pos = 0
    while True:
        head = stream.read(4)
        if not head:
            return
        if len(head) < 4:
            raise ValueError(f"truncated frame header at byte {pos}: {len(head)} of 4 bytes")
        (n,) = _HEADER.unpack(head)
        pos += 4
        if n == NULL_FRAME:
            yield None
            continue
        body = stream.read(n)
        if len(body) < n:
            raise ValueError(f"truncated frame at byte {pos - 4}: expected {n} bytes, got {len(body)}")
        pos += n
        yield body


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` without their line ending: ``\n`` or ``\r\n`` (a file written
    on Windows); a lone ``\r`` inside a line is kept."""
    for line in stream:
        if line.endswith(b"\r\n"):
            yield line[:-2]
        else:
            yield line[:-1] if line.endswith(b"\n") else line
