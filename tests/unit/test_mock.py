"""The embedded brokers (rdk.testing, re-exported by rdk.mock) check their arguments as every
public entry point does; the registry of kinds is the one the CLI and scripts read."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest
from helpers import wait_until

import rdk
import rdk.mock
import rdk.testing
from rdk.errors import RdkError
from rdk.mock import MockCluster, TansuBroker
from rdk.testing import KAFKA_VERSION, KINDS, KafkaCluster, kafka_libs, open_broker, start_broker

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value,exc", [("3", TypeError), (True, TypeError), (0, ValueError)])
def test_mock_cluster_broker_count_is_checked(value, exc):
    with pytest.raises(exc, match="num_brokers"):
        MockCluster(value)


@pytest.mark.parametrize("value,exc", [("0", TypeError), (-1, ValueError), (300_001, ValueError)])
def test_mock_cluster_rebalance_delay_is_checked(value, exc):
    with pytest.raises(exc, match="group_initial_rebalance_delay_ms"):
        MockCluster(1, group_initial_rebalance_delay_ms=value)
    with MockCluster(1, group_initial_rebalance_delay_ms=3000) as mc:  # librdkafka's default
        assert mc.bootstrap_servers


def test_mock_cluster_methods_name_their_bad_argument():
    with MockCluster(1) as mc:
        with pytest.raises(ValueError, match="'bad topic'"):
            mc.create_topic("bad topic", 1)
        with pytest.raises(ValueError, match="partitions"):
            mc.create_topic("t", 0)
        with pytest.raises(TypeError, match="broker_id"):
            mc.broker_set_down("1")
        with pytest.raises(ValueError, match="rtt_ms"):
            mc.broker_set_rtt(1, -5)
        with pytest.raises(ValueError, match="api must be one of"):
            mc.push_request_errors("NoSuchRequest", ["_TIMED_OUT"])
        with pytest.raises(ValueError, match="unknown librdkafka error name"):
            mc.push_request_errors("Produce", ["NO_SUCH_ERROR"])
        with pytest.raises(TypeError, match="error code"):
            mc.push_request_errors("Produce", [1.5])
        mc.push_request_errors("Fetch", ["_TIMED_OUT"])  # names and keys both work
        mc.clear_request_errors(1)


def test_mock_cluster_refusals_name_the_call_and_its_target():
    """librdkafka's refusals come back as KafkaError with the call's context."""
    with MockCluster(2) as mc:
        mc.create_topic("t", 2)
        for call, context in [(lambda: mc.broker_set_down(9), "broker 9 down"),
                              (lambda: mc.broker_set_up(9), "broker 9 up"),
                              (lambda: mc.broker_remove_from_metadata(9),
                               "broker 9 remove from metadata"),
                              (lambda: mc.broker_set_rtt(9, 10), "broker rtt"),
                              (lambda: mc.partition_set_follower("t", 7, 1), "follower of t[7]")]:
            with pytest.raises(rdk.KafkaError) as caught:
                call()
            assert caught.value.context == context, caught.value
        mc.partition_set_leader("t", 1, 2)  # accepted calls return nothing
        mc.partition_set_follower("t", 1, 1)
        mc.coordinator_set("group", "g", 2)
        mc.broker_set_rtt(1, 0)
        mc.topic_set_error("t", "_TIMED_OUT")
        mc.broker_set_down(2)
        mc.broker_set_up(2)


@pytest.mark.parametrize("kwargs,exc,pattern", [
    ({"port": "9092"}, TypeError, "port"),
    ({"port": 70000}, ValueError, "port"),
    ({"startup_timeout": -1}, ValueError, "startup_timeout"),
])
def test_tansu_broker_checks_its_arguments_before_starting(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        TansuBroker(binary="/nonexistent", **kwargs)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_servers_die_with_a_killed_test_process():
    """A test process SIGKILLed (no close(), no atexit) takes its Tansu, S3 and mock-cluster
    processes with it: they are tied to it, not left holding ports."""
    code = textwrap.dedent("""
        import sys
        from rdk.mock import MockClusterProcess, TansuBroker
        tansu = TansuBroker(durable=True)
        mock = MockClusterProcess(topics={"t": 1})
        print(tansu.pid, tansu.s3.pid, mock.pid, flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in proc.stdout.readline().split()]
        assert len(pids) == 3 and all(_alive(p) for p in pids), pids
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdin.close()
        proc.stdout.close()
    wait_until(lambda: not any(_alive(p) for p in pids), 15, "the servers to exit")


def test_rdk_mock_re_exports_the_testing_package():
    for name in ("MockCluster", "MockClusterProcess", "TansuBroker", "S3Server", "KafkaCluster",
                 "RunningCluster", "EmbeddedBroker", "start_broker", "free_port", "main", "serve"):
        assert getattr(rdk.mock, name) is getattr(rdk.testing, name), name


def test_the_registry_names_every_kind_and_checks_node_counts():
    assert list(KINDS) == ["mock", "tansu", "tansu-durable", "kafka"]
    with pytest.raises(ValueError, match="unknown broker kind 'nope': expected one of mock, tansu"):
        open_broker("nope")
    with pytest.raises(ValueError, match=r"a tansu broker has 1\.\.1 nodes, got 2"):
        open_broker("tansu", 2)
    with pytest.raises(ValueError, match=r"a kafka broker has 1\.\.9 nodes, got 10"):
        start_broker("kafka", num_brokers=10)
    with pytest.raises(TypeError, match="kind must be str"):
        start_broker(3)  # type: ignore[arg-type]


def test_python_m_rdk_mock_lists_the_registry_kinds_and_refuses_a_bad_count():
    out = subprocess.run([sys.executable, "-m", "rdk.mock", "--list-kinds"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.split() == list(KINDS)
    bad = subprocess.run([sys.executable, "-m", "rdk.mock", "--kind", "tansu", "--brokers", "2"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "a tansu broker has 1..1 nodes, got 2" in bad.stderr


def test_building_the_cli_parser_imports_no_broker_module():
    code = ("import sys, rdk.cli._parser; rdk.cli._parser.build_parser(); "
            "print(sorted(m for m in sys.modules if m == 'rdk.mock' or m.startswith('rdk.testing.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['rdk.testing._kinds', 'rdk.testing._serve']"


def test_kafka_version_is_the_one_the_pom_pins():
    pom = (REPO / "scripts" / "kafka" / "pom.xml").read_text()
    assert f"<kafka.version>{KAFKA_VERSION}</kafka.version>" in pom


@pytest.mark.parametrize("kwargs,exc,pattern", [
    ({"num_brokers": 0}, ValueError, "num_brokers"),
    ({"num_brokers": "1"}, TypeError, "num_brokers"),
    ({"listeners": "SSL"}, TypeError, "listeners must be a sequence"),
    ({"listeners": ("TLS",)}, ValueError, "unknown listener 'TLS'"),
    ({"sasl_users": [("a", "b")]}, TypeError, "sasl_users must be a mapping"),
    ({"sasl_users": {"alice": 'se"cret'}}, ValueError, "password of sasl user 'alice'"),
    ({"config": {1: 2}}, TypeError, "config keys"),
    ({"version": "latest"}, ValueError, "version must be like"),
    ({"heap_mib": 64}, ValueError, "heap_mib"),
    ({"heap_mib": "1g"}, TypeError, "heap_mib"),
])
def test_kafka_cluster_checks_its_arguments_before_starting(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        KafkaCluster(**kwargs)


def test_each_kafka_node_runs_with_the_heap_asked_for(tmp_path):
    from rdk.testing._kafka_nodes import JVM_OPTIONS, KafkaNodes

    nodes = KafkaNodes(java="java", libs=tmp_path, node_ids=[1], listeners=["PLAINTEXT"],
                       cluster_id="x", version=KAFKA_VERSION, heap_mib=2048)
    try:
        assert "-Xmx2048m" in nodes.jvm_options and "-Xmx384m" in JVM_OPTIONS
        assert [o for o in nodes.jvm_options if not o.startswith("-Xmx")] == \
            [o for o in JVM_OPTIONS if not o.startswith("-Xmx")]
    finally:
        shutil.rmtree(nodes.root)


def test_kafka_cluster_without_jars_says_to_run_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("RDK_KAFKA_LIBS", str(tmp_path))
    with pytest.raises(RdkError, match=r"RDK_KAFKA_LIBS=.* holds no kafka_2\.13"):
        KafkaCluster()
    with pytest.raises(RdkError, match=r"Apache Kafka 0\.0\.1's jars are not in .*run scripts/setup.sh"):
        kafka_libs("0.0.1")
