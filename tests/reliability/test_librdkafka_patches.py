"""rdk's fixes to librdkafka (scripts/patches/librdkafka): each one's crash, reproduced in a
child process so that a regression fails the test instead of killing the test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import wait_until

from rdk import _binding
from rdk._binding import ffi, lib
from rdk.testing import MockCluster

# A client that fetched a topic, then the topic deleted on Tansu: Tansu's next responses
# name the topic neither by name nor by id, and librdkafka 2.12-2.15's metadata update
# looked the NULL name up (strcmp segfault on its main thread).
FETCH_THEN_DELETE = textwrap.dedent("""
    import sys, time
    import rdk
    from rdk import _binding
    from rdk._binding.partitions import true_watermarks

    bootstrap, topic = sys.argv[1], sys.argv[2]
    with rdk.Producer(bootstrap) as p:
        p.send(topic, 0, [b"x"] * 10)
        assert p.flush(10) == 0
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap,
                                          "enable.partition.eof": False})
    assert true_watermarks(client, topic, [0, 1], 10) == {0: (0, 10), 1: (0, 0)}
    with rdk.Admin(bootstrap) as admin:
        admin.delete_topics([topic])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # metadata refreshes of the deleted topic
        try:
            client.metadata(topic, 1)
        except rdk.KafkaError:
            pass
    client.close()
    print("survived")
""")


def test_a_client_survives_the_deletion_of_a_topic_it_fetched(tansu, new_topic):
    topic = new_topic(tansu, 2)
    done = subprocess.run([sys.executable, "-c", FETCH_THEN_DELETE, tansu.bootstrap_servers, topic],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode < 0:
        pytest.fail(f"the client died of signal {-done.returncode} (librdkafka's metadata "
                    f"update of a deleted topic): {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "survived"


def _metadata_brokers(client: _binding.Client, timeout_ms: int) -> tuple[int, int]:
    """(error code, brokers listed) of one all-topics Metadata request."""
    mdp = ffi.new("const struct rd_kafka_metadata **")
    err = lib.rd_kafka_metadata(client.rk, 1, ffi.NULL, mdp, timeout_ms)
    if err:
        return err, -1
    try:
        return 0, mdp[0].broker_cnt
    finally:
        lib.rd_kafka_metadata_destroy(mdp[0])


def test_a_metadata_answer_listing_no_broker_leaves_the_clients_brokers_in_place():
    """Apache Kafka (KRaft) answers Metadata listing no broker while the answering broker is
    fenced (seen after a 30 s SIGSTOP). librdkafka 2.15 took that as "no broker exists" and
    decommissioned every broker; with none left it never sent another request, and a consumer
    stalled for good (the paused-broker test's stall). Patched (0003): the brokers stay."""
    stats: list[dict] = []
    with MockCluster(num_brokers=1) as mc:
        mc.create_topic("t", 1)
        client = _binding.Client("producer", {"bootstrap.servers": mc.bootstrap_servers,
                                              "statistics.interval.ms": 100},
                                 on_stats=stats.append)
        try:
            assert client.partition_count("t", 10) == 1  # broker 1 is known now
            mc.broker_remove_from_metadata(1)
            assert _metadata_brokers(client, 5000) == (0, 0), "the answer should list no broker"
            answered = len(stats)
            wait_until(lambda: len(stats) > answered + 1, 10, "statistics after that answer")
            known = [name for name in stats[-1]["brokers"] if not name.endswith("/internal")]
            assert any(name.endswith("/1") for name in known), f"the client's brokers: {known}"
            # and the broker is still asked: a client without brokers times out here
            assert _metadata_brokers(client, 5000) == (0, 0)
        finally:
            client.close()
