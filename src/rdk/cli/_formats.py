"""How ``rdk consume --format`` writes messages: value, json or raw (rdk's framing).

json: one object per line; key, value and header values are strings when valid UTF-8,
else ``{"base64": ...}``. Lines are formatted by hand (``json.dumps`` of a dict per
message is several times slower).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from json.encoder import encode_basestring as _json_string
from typing import Any

from ._framing import frame

FORMATS = ("json", "raw", "value")


def _json_bytes(data: bytes | None) -> str:
    """A JSON string of UTF-8 bytes, {"base64": ...} for other bytes, null for None."""
    if data is None:
        return "null"
    try:
        return _json_string(data.decode("utf-8"))
    except UnicodeDecodeError:
        return '{"base64": "' + base64.b64encode(data).decode("ascii") + '"}'


def _json_line(m: Any) -> str:
    value, key, headers, timestamp, topic, partition, offset = m
    hs = "null" if headers is None else "[" + ", ".join(
        f"[{_json_string(name)}, {_json_bytes(v)}]" for name, v in headers) + "]"
    return (f'{{"topic": {_json_string(topic)}, "partition": {partition}, "offset": {offset}, '
            f'"timestamp": {"null" if timestamp is None else timestamp}, '
            f'"key": {_json_bytes(key)}, "value": {_json_bytes(value)}, "headers": {hs}}}\n')


def encode_messages(messages: Sequence[Any], fmt: str) -> bytes:
    """Messages as ``rdk consume --format`` writes them (value, json or raw)."""
    if fmt == "value":
        return b"".join((m[0] or b"") + b"\n" for m in messages)
    if fmt == "raw":
        return b"".join(map(frame, (m[0] for m in messages)))
    return "".join(map(_json_line, messages)).encode()
