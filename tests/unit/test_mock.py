"""rdk.mock's embedded brokers check their arguments as every public entry point does."""

from __future__ import annotations

import pytest

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
