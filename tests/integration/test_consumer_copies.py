"""One copy per payload (issue 35): the consumer's batch buffers keep librdkafka's messages and
point into them; the bytes the application reads are the only copy, and the messages are
released as soon as their batch is converted."""

from __future__ import annotations

from helpers import Collector, produce, values

import rdk


def test_consumed_payloads_are_copied_once_straight_from_librdkafka(mock_cluster, tmp_path):
    mock_cluster.create_topic("copies", 2)
    sent = {0: [(b"k%d" % i, v, []) for i, v in enumerate(values(300, prefix=b"zero-"))],
            1: [(None, None, []), (b"key", b"", []), *values(200, prefix=b"one-")]}
    for p, payloads in sent.items():
        produce(mock_cluster, "copies", p, payloads)
    got = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "copies", tmp_path, got,
                      max_messages_per_callback=64) as c:
        c.start()
        got.wait_for(502)
        buffers = list(c._assignment.pipeline._pool._buffers)
        assert buffers
        for b in buffers:
            assert b.keep == 1
            # the contiguous value/key buffers were never allocated: nothing was copied there
            assert b.values_cap == 0 and b.keys_cap == 0
    rows = {p: [(m.key, m.value) for b in got.batches for m in b.messages if m.partition == p]
            for p in sent}
    assert rows[0] == [(k, v) for k, v, _ in sent[0]]
    assert rows[1] == [(None, None), (b"key", b""), *((None, v) for v in values(200, prefix=b"one-"))]


def test_a_converted_batch_releases_librdkafkas_messages_at_once(mock_cluster, tmp_path):
    mock_cluster.create_topic("released", 1)
    produce(mock_cluster, "released", 0, values(100))
    with rdk.Consumer(mock_cluster.bootstrap_servers, "released", tmp_path,
                      max_messages_per_callback=10) as c:
        pool = None
        seen = 0
        for batch in c.batches(timeout=20):
            pool = c._assignment.pipeline._pool
            seen += len(batch)
            with pool._cond:  # buffers back in the pool hold no librdkafka message
                assert all(b.n_kept == 0 for b in pool._free)
            batch.commit()
            if seen >= 100:
                break
        assert seen == 100 and pool is not None
