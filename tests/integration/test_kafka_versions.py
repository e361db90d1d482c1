"""A compatibility subset on the other Apache Kafka versions rdk is tested against.

The suite runs on Apache Kafka 4.3.1 (``rdk.testing.KAFKA_VERSION``, the session's cluster).
Here the same client paths run on the oldest and the newest KRaft release Maven Central
serves (``VERSIONS``; scripts/setup.sh fetches their jars): produce/consume, a group on
both protocols (classic, KIP-848), a transaction committed and one aborted under
read_committed, a share group where the broker has one on by default (4.2+) and SASL
(PLAIN, SCRAM-SHA-256). One 1-node cluster per version, for the module.
"""

from __future__ import annotations

import threading
import uuid

import pytest

import rdk
from rdk.testing import KafkaCluster

VERSIONS = ["4.0.2", "4.4.0"]
USERS = {"alice": "alice-secret"}
SHARE_GROUPS_FROM = (4, 2)  # on by default in KafkaCluster (earlier: early access, off)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", params=VERSIONS)
def versioned(request):
    with KafkaCluster(1, listeners=("PLAINTEXT", "SASL_PLAINTEXT"), sasl_users=USERS,
                      version=request.param) as kc:
        yield kc


def fresh_topic(kc: KafkaCluster, partitions: int = 2) -> str:
    name = f"v-{uuid.uuid4().hex[:10]}"
    kc.create_topic(name, partitions)
    return name


def send(bootstrap: str, topic: str, n: int, options: dict | None = None) -> list[bytes]:
    payloads = [b"m%d" % i for i in range(n)]
    with rdk.Producer(bootstrap, driver_options=options) as p:
        for part in (0, 1):
            p.send(topic, part, payloads[part::2])
        assert p.flush(30) == 0
    return payloads


class Collect:
    """A receive callback gathering values until ``want`` came."""

    def __init__(self, want: int) -> None:
        self.want, self.values, self.done = want, [], threading.Event()
        self.lock = threading.Lock()

    def __call__(self, batch) -> None:
        with self.lock:
            self.values.extend(m.value for m in batch.messages)
            if len(self.values) >= self.want:
                self.done.set()

    def wait(self, what: str) -> list[bytes]:
        assert self.done.wait(60), f"{what}: {len(self.values)} of {self.want}"
        return sorted(self.values)


def test_produce_and_consume_with_offset_files(versioned, tmp_path):
    topic = fresh_topic(versioned)
    sent = send(versioned.bootstrap_servers, topic, 200)
    got = Collect(len(sent))
    with rdk.Consumer(versioned.bootstrap_servers, topic, str(tmp_path), got) as c:
        c.start()
        assert got.wait(f"Kafka {versioned.version}") == sorted(sent)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_consumer_on_either_protocol_reads_everything(versioned, protocol):
    topic = fresh_topic(versioned)
    sent = send(versioned.bootstrap_servers, topic, 100)
    got = Collect(len(sent))
    options = {"group.protocol": protocol}
    with rdk.Consumer(versioned.bootstrap_servers, topic, None, got, group_id=f"g-{topic}",
                      driver_options=options) as c:
        c.start()
        assert got.wait(f"Kafka {versioned.version}, group.protocol={protocol}") == sorted(sent)


def test_read_committed_sees_the_committed_transaction_only(versioned, tmp_path):
    topic = fresh_topic(versioned, 1)
    bs = versioned.bootstrap_servers
    with rdk.Producer(bs, transactional_id=f"tx-{topic}", queue_buffering_max_ms=5) as p:
        p.init_transactions(30)
        p.begin_transaction()
        p.send(topic, 0, [b"aborted-%d" % i for i in range(5)])
        p.abort_transaction(30)
        p.begin_transaction()
        p.send(topic, 0, [b"committed-%d" % i for i in range(5)])
        p.commit_transaction(30)
    got = Collect(5)
    with rdk.Consumer(bs, topic, str(tmp_path), got,
                      driver_options={"isolation.level": "read_committed"}) as c:
        c.start()
        assert got.wait(f"Kafka {versioned.version}, read_committed") == [
            b"committed-%d" % i for i in range(5)]
        assert c.error is None


def test_a_share_group_reads_and_acknowledges(versioned):
    if tuple(int(x) for x in versioned.version.split(".")[:2]) < SHARE_GROUPS_FROM:
        pytest.skip(f"Apache Kafka {versioned.version} has share groups only as an early-access "
                    "feature, off by default")
    topic = fresh_topic(versioned)
    sent = send(versioned.bootstrap_servers, topic, 50)
    got = Collect(len(sent))
    with rdk.ShareConsumer(versioned.bootstrap_servers, topic, got, group_id=f"s-{topic}",
                           start_offset="earliest") as member:
        member.start()
        assert got.wait(f"Kafka {versioned.version}, share group") == sorted(sent)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_round_trip(versioned, tmp_path, mechanism):
    bootstrap = versioned.bootstrap_servers_for("SASL_PLAINTEXT")
    options = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
               "sasl.username": "alice", "sasl.password": USERS["alice"]}
    topic = fresh_topic(versioned)
    sent = send(bootstrap, topic, 50, options)
    got = Collect(len(sent))
    with rdk.Consumer(bootstrap, topic, str(tmp_path), got, driver_options=options) as c:
        c.start()
        assert got.wait(f"Kafka {versioned.version}, SASL {mechanism}") == sorted(sent)
