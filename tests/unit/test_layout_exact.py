"""The producer's payload layout: exact error messages (each names the payload's index and
what was wrong) and str subclasses / wider buffers taking the general path. Written to kill
the mutants scripts/mutation.sh found alive in rdk/producer/_layout.py."""

from __future__ import annotations

import re

import pytest

from rdk import Message
from rdk._binding import ffi
from rdk.producer._layout import layout

SURROGATE = "'utf-8' codec can't encode character '\\udc80' in position 0: surrogates not allowed"


def lay_out(payloads):
    args = ffi.new("rdk_produce_args *")
    keep = layout(payloads, args)
    return args, keep


def values_of(args, n):
    offs = args.value_offsets
    nulls = ffi.cast("unsigned char *", args.value_null) if args.value_null != ffi.NULL else None
    out = []
    for i in range(n):
        if nulls is not None and nulls[i]:
            out.append(None)
        else:
            out.append(ffi.unpack(ffi.cast("char *", args.values) + offs[i], offs[i + 1] - offs[i]))
    return out


@pytest.mark.parametrize("payloads,exc,message", [
    ([b"ok", "\udc80"], ValueError, f"payloads[1]: payload cannot be encoded as UTF-8: {SURROGATE}"),
    ([b"ok", (b"k", "\udc80")], ValueError, f"payloads[1]: value cannot be encoded as UTF-8: {SURROGATE}"),
    ([("\udc80", b"v")], ValueError, f"payloads[0]: key cannot be encoded as UTF-8: {SURROGATE}"),
    ([b"a", 3.5], TypeError,
     "payloads[1]: payload of type float is not supported (bytes, bytearray, memoryview or str)"),
    ([(b"k", 3.5)], TypeError, "payloads[0]: value of type float is not supported (bytes, "
                               "bytearray, memoryview or str, or None)"),
    ([(1, 2, 3)], TypeError, "payloads[0]: a tuple payload must be (key, value), got a tuple of 3 items"),
    ([b"x", Message(b"v", b"k", [("a", b"1", 2)])], TypeError,
     "payloads[1]: each header must be a (name, value) pair, got ('a', b'1', 2)"),
    ([Message(b"v", b"k", [(3, b"1")])], TypeError, "payloads[0]: header name must be str or bytes, got int"),
    ([Message(b"v", b"k", [(b"a\0b", b"1")])], ValueError,
     "payloads[0]: header name b'a\\x00b' contains a NUL byte"),
    ([Message(b"v", b"k", 5)], TypeError,
     "payloads[0]: headers must be a list of (name, value) pairs or a dict, got int"),
    ([Message(b"v", b"k", [(b"a", 5)])], TypeError,
     "payloads[0]: header value of type int is not supported (bytes, bytearray, memoryview or "
     "str, or None)"),
    ([Message(b"v", None, None, -1)], TypeError,
     "payloads[0]: timestamp must be an int of ms since the epoch (>= 0) or None, got -1"),
    ([Message(b"v", None, None, True)], TypeError,
     "payloads[0]: timestamp must be an int of ms since the epoch (>= 0) or None, got True"),
    ([Message(b"v", None, None, 2**63)], ValueError,
     "payloads[0]: timestamp 9223372036854775808 is beyond int64 milliseconds (at most "
     "9223372036854775807)"),
])
def test_layout_errors_name_the_index_and_the_problem(payloads, exc, message):
    with pytest.raises(exc, match=f"^{re.escape(message)}$"):
        lay_out(payloads)


def test_str_subclasses_memoryviews_and_bytearrays_are_sent_as_their_bytes():
    class Text(str):
        pass

    payloads = [(None, Text("é")), (b"k", memoryview(b"mv")), (b"k2", bytearray(b"ba")), (b"k3", None)]
    args, _keep = lay_out(payloads)
    assert values_of(args, 4) == ["é".encode(), b"mv", b"ba", None]


def test_header_value_none_and_max_timestamp_are_kept():
    args, _keep = lay_out([Message(b"v", None, [("n", None), (b"e", b"")], 2**63 - 1)])
    assert args.timestamps[0] == 2**63 - 1
    assert args.header_value_null[0] == 1 and args.header_value_null[1] == 0
