"""rdk.mock's embedded brokers check their arguments as every public entry point does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import wait_until

from rdk.mock import MockCluster, TansuBroker


@pytest.mark.parametrize("value,exc", [("3", TypeError), (True, TypeError), (0, ValueError)])
def test_mock_cluster_broker_count_is_checked(value, exc):
    with pytest.raises(exc, match="num_brokers"):
        MockCluster(value)


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
    wait_until(lambda: not any(_alive(p) for p in pids), 15, "the servers to exit")
