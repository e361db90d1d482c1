"""A ``^regex`` group subscription in librdkafka's dialect (POSIX extended) reads every
matching topic on the mock cluster, and none that does not match."""

from __future__ import annotations

import uuid

from helpers import Collector, produce, values

import rdk

# short group timeouts, as in test_consumer_group.py
GROUP_OPTIONS = {"session.timeout.ms": 6000, "max.poll.interval.ms": 10000,
                 "heartbeat.interval.ms": 500}


def test_posix_pattern_subscribes_and_consumes_the_matching_topics(mock_cluster):
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    t1, t22, other = f"{prefix}-t1", f"{prefix}-t22", f"{prefix}-tx"
    for name in (t1, t22, other):
        mock_cluster.create_topic(name, 1)
    produce(mock_cluster, t1, 0, values(5, prefix=b"a"))
    produce(mock_cluster, t22, 0, values(7, prefix=b"b"))
    produce(mock_cluster, other, 0, values(3, prefix=b"x"))
    got = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, f"^{prefix}-t[0-9]+$", None, got,
                      group_id=f"g-{uuid.uuid4().hex[:8]}", driver_options=GROUP_OPTIONS) as c:
        c.start()
        got.wait_for(12, timeout=60)
        assert sorted(c.assignment) == [(t1, 0), (t22, 0)]
    assert sorted((m.topic, m.value) for m in got.messages) == sorted(
        [(t1, v) for v in values(5, prefix=b"a")] + [(t22, v) for v in values(7, prefix=b"b")])
