"""rdk.testing.KafkaCluster: Apache Kafka (KRaft, one JVM per node) that a test can start,
read and write through rdk, and hurt (kill, restart, pause) — and that never outlives the
process that started it.

Skipped with the reason when Kafka's jars or java are missing (scripts/setup.sh fetches them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest
from helpers import Collector, kafka_unavailable, produce, read_log, values, wait_until

import rdk
from rdk import Admin, KafkaError, RdkError
from rdk.testing import KafkaCluster, start_broker

pytestmark = pytest.mark.skipif(bool(kafka_unavailable()), reason=f"Apache Kafka: {kafka_unavailable()}")


def name(prefix="k"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def _kafka_jvms(root: str) -> list[int]:
    """Pids of kafka.Kafka JVMs whose command line names ``root`` (one cluster's folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if b"kafka.Kafka" in cmd and any(root.encode() in part for part in cmd) and _alive(int(entry)):
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def hurt():
    """A 1-node cluster of this module's own, for the tests that kill or pause it."""
    with KafkaCluster(1) as kc:
        yield kc


# -- the session cluster: a real broker for rdk's clients ---------------------------------------

def test_producer_and_consumer_round_trip_on_apache_kafka(kafka_cluster, tmp_path):
    topic = name()
    kafka_cluster.create_topic(topic, 2)
    for p in (0, 1):
        produce(kafka_cluster, topic, p, values(50, prefix=b"p%d-" % p))
    got = Collector()
    with rdk.Consumer(kafka_cluster.bootstrap_servers, topic, tmp_path, got) as c:
        assert c.start() == [0, 1]
        got.wait_for(100)
    sent = values(50, prefix=b"p0-") + values(50, prefix=b"p1-")
    assert sorted(m.value for m in got.messages) == sorted(sent)
    assert got.offsets(0) == list(range(50)) and got.offsets(1) == list(range(50))


def test_create_topic_waits_for_leaders_and_honours_its_config(kafka_cluster):
    topic = name()
    kafka_cluster.create_topic(topic, 3, config={"retention.ms": 60_000})
    assert [kafka_cluster.leader(topic, p) for p in range(3)] == [1, 1, 1]
    kafka_cluster.create_topic(topic, 3)  # exists: not an error
    with Admin(kafka_cluster.bootstrap_servers) as admin:
        assert admin.partition_count(topic) == 3
    with pytest.raises(KafkaError) as ei:
        kafka_cluster.leader(name("missing"), 0)
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART"
    with pytest.raises(ValueError, match="no partition 7"):
        kafka_cluster.leader(topic, 7)


def test_every_partition_of_a_created_topic_answers_at_once(kafka_cluster):
    """A broker lists a new partition's leader before it has made its log, and answers
    NOT_LEADER_OR_FOLLOWER until then (at 512 partitions on one node, for about 2 s):
    create_topic returns only once every partition answers."""
    topic = name()
    kafka_cluster.create_topic(topic, 512)
    with Admin(kafka_cluster.bootstrap_servers) as admin:
        found = admin.offsets_for_times(topic, dict.fromkeys(range(512), 0), timeout=10)
    assert found == dict.fromkeys(range(512), -1)  # answered, and empty
    with Admin(kafka_cluster.bootstrap_servers) as admin:
        admin.delete_topics([topic])


def test_topics_are_never_created_by_a_metadata_request(kafka_cluster):
    from rdk import _binding

    missing = name("auto")
    client = _binding.Client("producer", {"bootstrap.servers": kafka_cluster.bootstrap_servers,
                                          "allow.auto.create.topics": True, "log_level": 0})
    try:  # a metadata request that asks for auto-creation
        [t] = client.metadata(missing, timeout=10)
        assert t.error is not None and t.error.name == "UNKNOWN_TOPIC_OR_PART"
    finally:
        client.close()
    with Admin(kafka_cluster.bootstrap_servers) as admin:
        assert missing not in {t.name for t in admin.list_topics()}


def test_an_unrequested_listener_is_named(kafka_cluster):
    assert kafka_cluster.bootstrap_servers_for("PLAINTEXT") == kafka_cluster.bootstrap_servers
    with pytest.raises(ValueError, match="listener 'SASL_SSL' was not requested"):
        kafka_cluster.bootstrap_servers_for("SASL_SSL")
    assert kafka_cluster.ca_location is None
    assert "Kafka Server started" in kafka_cluster.log(1)


# -- hurting a node ------------------------------------------------------------------------------

def test_kill_and_restart_keep_every_acknowledged_message(hurt):
    topic = name()
    hurt.create_topic(topic, 1)
    produce(hurt, topic, 0, values(200))
    old = hurt.pid(1)
    hurt.kill(1)
    assert hurt.pid(1) is None and not _alive(old)
    for dead in (hurt.pause, hurt.resume):  # a killed node: both say so, alike
        with pytest.raises(RdkError, match=r"node 1 is not running: restart\(1\) starts it"):
            dead(1)
    hurt.restart(1)
    assert hurt.pid(1) not in (None, old)
    rows = read_log(hurt.bootstrap_servers, topic, [0])
    assert [v for _, _, v in rows[0]] == values(200)
    produce(hurt, topic, 0, values(10, start=200))  # and it takes writes again
    assert [o for o, _, _ in read_log(hurt.bootstrap_servers, topic, [0])[0]] == list(range(210))


def test_a_paused_node_answers_nothing_until_resumed(hurt):
    topic = name()
    hurt.create_topic(topic, 1)
    hurt.pause(1)
    try:
        with Admin(hurt.bootstrap_servers) as admin:
            with pytest.raises(KafkaError) as ei:
                admin.partition_count(topic, timeout=2)
            assert ei.value.name in ("_TIMED_OUT", "_TRANSPORT")
    finally:
        hurt.resume(1)
    with Admin(hurt.bootstrap_servers) as admin:
        assert admin.partition_count(topic, timeout=30) == 1


def test_node_ids_are_checked(hurt):
    assert hurt.node_ids == [1]
    with pytest.raises(ValueError, match=r"no node 2: the nodes are \[1\]"):
        hurt.kill(2)


def test_three_nodes_elect_a_new_leader_when_one_is_killed_and_take_it_back():
    with KafkaCluster(3) as kc:
        assert len(kc.bootstrap_servers.split(",")) == 3
        topic = name()
        kc.create_topic(topic, 1, replication_factor=3)
        produce(kc, topic, 0, values(100))
        first = kc.leader(topic, 0)
        assert first in (1, 2, 3)
        kc.kill(first)
        wait_until(lambda: kc.leader(topic, 0) not in (-1, first), 30, "a new leader")
        kc.restart(first)
        assert kc.running(first)
        assert [v for _, _, v in read_log(kc.bootstrap_servers, topic, [0])[0]] == values(100)
        root = kc._root
    assert not os.path.exists(root) and not _kafka_jvms(root)
    # every call on the closed cluster raises at once, naming it (no 30 s _TIMED_OUT)
    for call in (lambda: kc.create_topic("late", 1), kc.__enter__, lambda: kc.pause(1),
                 lambda: kc.resume(1), lambda: kc.leader(topic, 0),
                 lambda: kc.bootstrap_servers_for("PLAINTEXT")):
        with pytest.raises(RdkError, match=r"KafkaCluster .* is closed"):
            call()


# -- never an orphan -----------------------------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_port_taken_before_the_jvm_binds_it_is_picked_again(monkeypatch):
    import socket

    from rdk.testing import _kafka_nodes, _process

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks = []

    def first_taken() -> int:  # the first pick is a port somebody else holds by then
        port = taken.getsockname()[1] if not picks else _process.free_port()
        picks.append(port)
        return port

    monkeypatch.setattr(_kafka_nodes, "free_port", first_taken)
    try:
        with KafkaCluster() as cluster:
            assert f":{taken.getsockname()[1]}" not in cluster.bootstrap_servers
            cluster.create_topic("after-retry")
            assert picks[0] == taken.getsockname()[1] and len(picks) > 2
    finally:
        taken.close()


def test_a_sigkilled_test_process_leaves_no_kafka_jvm():
    code = textwrap.dedent("""
        import sys
        from rdk.testing import KafkaCluster
        kc = KafkaCluster(1)
        print(kc.pid(1), kc._root, flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        pid, root = int(line[0]), line[1]
        assert _alive(pid) and _kafka_jvms(root) == [pid]
    finally:
        proc.kill()
        proc.wait(10)
    wait_until(lambda: not _alive(pid) and not _kafka_jvms(root), 15, "the JVM to exit")
    with KafkaCluster(1):  # the next cluster sweeps the dead one's folder
        assert not os.path.exists(root)


def test_python_m_rdk_mock_serves_kafka_until_interrupted():
    proc = subprocess.Popen([sys.executable, "-m", "rdk.mock", "--kind", "kafka", "--topic", "events:3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("RDK_BROKERS=127.0.0.1:"), proc.stderr.read() if proc.poll() else line
        with Admin(line.split("=", 1)[1]) as admin:
            assert admin.partition_count("events") == 3
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_start_broker_kafka_creates_the_topics():
    with start_broker("kafka", {"a": 2, "b": 1}) as broker:
        assert isinstance(broker, KafkaCluster)
        with Admin(broker.bootstrap_servers) as admin:
            assert admin.partition_count("a") == 2 and admin.partition_count("b") == 1


def test_sasl_users_without_a_sasl_listener_are_refused():
    with pytest.raises(ValueError, match="sasl_users needs a SASL listener"):
        KafkaCluster(1, listeners=("SSL",), sasl_users={"alice": "s3cret"})


def test_a_bad_config_value_says_the_brokers_reason_first():
    with pytest.raises(RdkError) as ei:
        KafkaCluster(1, config={"num.partitions": "abc"})
    first = str(ei.value).splitlines()[0]
    assert first == ("kafka-storage format failed: node 1 (exit 1): ConfigException: Invalid "
                     "value abc for configuration num.partitions: Not a number of type INT"), first


# -- security listeners --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def secure():
    listeners = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
    with KafkaCluster(1, listeners=listeners, sasl_users={"alice": "s3cret"}) as kc:
        yield kc


def _round_trip(kc, listener, options):
    topic = name("sec")
    kc.create_topic(topic, 1)
    with rdk.Producer(kc.bootstrap_servers_for(listener), queue_buffering_max_ms=5,
                      driver_options=options) as p:
        assert p.send(topic, 0, [b"a", b"b"]).enqueued == 2
        assert p.flush(30) == 0
    with Admin(kc.bootstrap_servers_for(listener), options) as admin:
        assert admin.watermarks(topic, 0) == (0, 2)


def test_ssl_listener_round_trip_with_the_generated_ca(secure):
    assert secure.ca_location and os.path.exists(secure.ca_location)
    _round_trip(secure, "SSL", {"security.protocol": "ssl", "ssl.ca.location": secure.ca_location})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_users_authenticate_on_sasl_listeners(secure, mechanism):
    user = {"sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": "s3cret"}
    _round_trip(secure, "SASL_PLAINTEXT", {"security.protocol": "sasl_plaintext", **user})
    _round_trip(secure, "SASL_SSL", {"security.protocol": "sasl_ssl", "ssl.ca.location": secure.ca_location,
                                     **user})


def test_oauthbearer_with_an_unsecured_token(secure):
    _round_trip(secure, "SASL_PLAINTEXT", {
        "security.protocol": "sasl_plaintext", "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=alice"})


def test_a_wrong_password_is_refused(secure):
    options = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-256",
               "sasl.username": "alice", "sasl.password": "wrong", "log_level": 0}
    with Admin(secure.bootstrap_servers_for("SASL_PLAINTEXT"), options) as admin, \
            pytest.raises(KafkaError) as ei:
        # a long timeout: only the refusal itself (not a _TIMED_OUT) ends the call
        admin.partition_count("anything", timeout=60)
    assert ei.value.name == "_AUTHENTICATION", str(ei.value)
    assert "invalid credentials" in str(ei.value) and "authentication with broker" in str(ei.value)
