"""rdk's fixes to librdkafka (scripts/patches/librdkafka): each one's crash, reproduced in a
child process so that a regression fails the test instead of killing the test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A client that fetched a topic, then the topic deleted on Tansu: Tansu's next responses
# name the topic neither by name nor by id, and librdkafka 2.12-2.15's metadata update
# looked the NULL name up (strcmp segfault on its main thread).
FETCH_THEN_DELETE = textwrap.dedent("""
    import sys, time
    import rdk
    from rdk import _binding
    from rdk._partitions import true_watermarks

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
