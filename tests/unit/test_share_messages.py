"""rdk.share without a broker: ShareMessage pickles (also under the unpickler's path from
before rdk.share became a package), ShareBatch's settling rules and its final types."""

import pickle
import pickletools

import pytest

import rdk
from rdk.share import _rebuild_share
from rdk.share._messages import ACCEPT, REJECT, RELEASE


def _message(value: bytes, offset: int, delivery_count: int = 1) -> rdk.ShareMessage:
    return tuple.__new__(rdk.ShareMessage, (value, b"k", [("h", b"v")], 7, "t", 3, offset,
                                            delivery_count))


def test_share_message_pickles_as_a_share_message_with_its_delivery_count():
    m = _message(b"a", 10, delivery_count=2)
    again = pickle.loads(pickle.dumps(m))
    assert type(again) is rdk.ShareMessage
    assert again == m and again.delivery_count == 2 and again.offset == 10
    assert again.headers == [("h", b"v")] and again.topic == "t" and again.partition == 3


def test_pickles_made_before_the_package_split_still_load():
    m = _message(b"a", 1)
    data = pickle.dumps(m, protocol=2)
    names = [arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"]
    assert names[0] == "rdk.share._messages _rebuild_share", names
    old = data.replace(b"rdk.share._messages\n", b"rdk.share\n")
    assert old != data and pickle.loads(old) == m
    assert _rebuild_share((b"x", None, None, None, "t", 0, 0, 1)).delivery_count == 1


def test_share_batch_settles_each_message_once_and_fills_in_the_rest():
    ms = [_message(b"a", 0), _message(b"b", 1), _message(b"c", 2), _message(b"d", 3)]
    batch = rdk.ShareBatch(ms)
    assert len(batch) == 4 and list(batch) == ms and repr(batch) == "<ShareBatch 4 messages>"
    batch.accept(ms[0])
    batch.release(ms[1])
    batch.reject(ms[2])
    for settle in (batch.accept, batch.release, batch.reject):
        with pytest.raises(ValueError, match="is already released"):
            settle(ms[1])
    with pytest.raises(ValueError, match="not a message of this batch"):
        batch.accept(_message(b"d", 3))  # equal to ms[3], not it
    assert batch._finish(RELEASE) == bytes([ACCEPT, RELEASE, REJECT, RELEASE])
    with pytest.raises(ValueError, match="already acknowledged"):
        batch.accept(ms[3])


def test_share_batch_all_settled_keeps_its_types():
    ms = [_message(b"a", 0), _message(b"b", 1)]
    batch = rdk.ShareBatch(ms)
    batch.reject(ms[0])
    batch.reject(ms[1])
    assert batch._finish(ACCEPT) == bytes([REJECT, REJECT])
