"""What the public methods raise is what their docstrings' ``Raises:`` say (the API
reference is made from them): each case below misuses a method the way a user might and
checks that the exception's class is one the method documents. No broker is needed:
every case fails before a request (librdkafka's mock cluster where a started client is).
"""

from __future__ import annotations

import inspect
import re

import pytest

import rdk
from rdk.mock import MockCluster

BROKER = "127.0.0.1:9"
_ENTRY = re.compile(r"^ {4}([A-Za-z_][\w.]*):")


def documented_raises(cls: type, method: str) -> set[str]:
    """The exception class names in the ``Raises:`` section of ``cls.method``'s docstring
    (``rdk.ClosedError`` as ``ClosedError``)."""
    doc = inspect.getdoc(getattr(cls, method)) or ""
    names: set[str] = set()
    inside = False
    for line in doc.splitlines():
        if line.strip() == "Raises:":
            inside = True
            continue
        if inside:
            if line and not line.startswith(" "):
                break  # the next section
            m = _ENTRY.match(line)
            if m:
                names.add(m.group(1).rsplit(".", 1)[-1])
    assert names, f"{cls.__name__}.{method} documents no Raises section"
    return names


def raised(call) -> BaseException:
    try:
        call()
    except Exception as e:  # the exception is what is compared
        return e
    raise AssertionError("nothing was raised")


def _consumer(tmp_path, **kw):
    return rdk.Consumer(BROKER, "t", str(tmp_path), lambda info: None, **kw)


def _stopped(obj):
    obj.stop()
    return obj


CASES = {  # name: (object factory(tmp_path), method, call(obj), the class expected)
    "consumer-seek-before-start": (_consumer, "seek", lambda c: c.seek(0, 0), RuntimeError),
    "consumer-seek-after-stop": (lambda p: _stopped(_consumer(p)), "seek",
                                 lambda c: c.seek(0, 0), rdk.ClosedError),
    "consumer-group-metadata-without-group": (_consumer, "group_metadata",
                                              lambda c: c.group_metadata(), ValueError),
    "consumer-start-after-stop": (lambda p: _stopped(_consumer(p)), "start",
                                  lambda c: c.start(), rdk.ClosedError),
    "producer-send-bad-partition": (lambda p: rdk.Producer(BROKER), "send",
                                    lambda pr: pr.send("t", "0", [b"x"]), TypeError),
    "producer-send-bad-topic": (lambda p: rdk.Producer(BROKER), "send",
                                lambda pr: pr.send("bad topic", 0, [b"x"]), ValueError),
    "producer-send-after-stop": (lambda p: _stopped(rdk.Producer(BROKER)), "send",
                                 lambda pr: pr.send("t", 0, [b"x"]), rdk.ClosedError),
    "producer-flush-negative": (lambda p: rdk.Producer(BROKER), "flush",
                                lambda pr: pr.flush(-1), ValueError),
    "admin-list-topics-after-close": (lambda p: _closed_admin(), "list_topics",
                                      lambda a: a.list_topics(), rdk.ClosedError),
    "admin-reset-share-group-bad-to": (lambda p: rdk.Admin(BROKER), "reset_share_group",
                                       lambda a: a.reset_share_group("g", "beginning"), ValueError),
    "share-start-without-callback": (lambda p: rdk.ShareConsumer(BROKER, "t", None, group_id="g"),
                                     "start", lambda s: s.start(), TypeError),
}


def _closed_admin():
    admin = rdk.Admin(BROKER)
    admin.close()
    return admin


@pytest.mark.parametrize("case", list(CASES))
def test_the_exception_raised_is_one_the_method_documents(case, tmp_path):
    make, method, call, expected = CASES[case]
    obj = make(tmp_path)
    try:
        err = raised(lambda: call(obj))
    finally:
        for end in ("stop", "close"):
            if hasattr(obj, end):
                getattr(obj, end)()
                break
    assert type(err) is expected, f"{case}: {type(err).__name__}: {err}"
    documented = documented_raises(type(obj), method)
    assert type(err).__name__ in documented, (
        f"{type(obj).__name__}.{method} raised {type(err).__name__} ({err}) but documents "
        f"{sorted(documented)}")


def test_a_started_consumer_started_again_raises_what_start_documents(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic("t", 1)
        consumer = rdk.Consumer(mc.bootstrap_servers, "t", str(tmp_path), lambda info: None)
        with consumer:
            consumer.start()
            err = raised(consumer.start)
        assert type(err).__name__ in documented_raises(rdk.Consumer, "start"), err
