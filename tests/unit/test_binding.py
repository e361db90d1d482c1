"""The compiled module loads, is the pinned librdkafka, and maps errors with librdkafka's text."""

import contextlib
import os
import threading
from pathlib import Path

import pytest

import rdk
from rdk import _binding
from rdk._binding import ffi, lib
from rdk.errors import ConfigError, KafkaError


def test_librdkafka_is_the_pinned_release():
    assert rdk.librdkafka_version() == "2.15.1"
    assert _binding.built_against() == 0x020F01FF


def test_extension_is_api_mode_and_statically_linked():
    # API mode: the module exposes compiled constants and our own helpers.
    assert hasattr(lib, "rdk_consume_batch") and hasattr(lib, "rdk_produce_batch")
    import rdk._rdkafka as ext

    with open(ext.__file__, "rb") as f:
        assert b"librdkafka.so" not in f.read()  # librdkafka linked in, not a runtime dependency


def test_features_include_tls_scram_and_every_codec():
    feats = rdk.features()
    assert {"ssl", "sasl_scram", "sasl_plain", "gzip", "snappy", "lz4", "zstd"} <= feats


@pytest.mark.parametrize(
    "code,name",
    [(3, "UNKNOWN_TOPIC_OR_PART"), (-184, "_QUEUE_FULL"), (-192, "_MSG_TIMED_OUT"),
     (10, "MSG_SIZE_TOO_LARGE")],
)
def test_error_codes_map_to_librdkafka_names_and_text(code, name):
    err = KafkaError(code)
    assert err.name == name
    assert err.description == ffi.string(lib.rd_kafka_err2str(code)).decode()
    assert name in str(err)


def test_retriable_flag_follows_the_error_kind():
    assert KafkaError(_binding.ERROR_CODES["REQUEST_TIMED_OUT"]).retriable
    assert not KafkaError(_binding.ERROR_CODES["MSG_SIZE_TOO_LARGE"]).retriable


def test_check_raises_for_nonzero_codes_only():
    _binding.check(0)
    with pytest.raises(KafkaError) as ei:
        _binding.check(3, "metadata")
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART" and "metadata" in str(ei.value)


def test_kafka_error_pickles():
    import pickle

    err = KafkaError(3, "custom text", context="x")
    again = pickle.loads(pickle.dumps(err))
    assert again == err and again.name == "UNKNOWN_TOPIC_OR_PART"


def test_unknown_property_carries_librdkafka_text():
    with pytest.raises(ConfigError, match="No such configuration property"):
        _binding.new_conf({"no.such.property": 1})


def test_invalid_value_is_refused_with_librdkafka_text():
    with pytest.raises(ConfigError, match="acks"):
        _binding.new_topic_conf({"acks": "sometimes"})


def test_secret_values_never_appear_in_config_errors():
    with pytest.raises(ConfigError) as ei:
        _binding.new_conf({"sasl.password": ["not", "a", "string"]})
    assert "not" not in str(ei.value)
    assert _binding.redact({"sasl.password": "hunter2", "acks": 1}) == {"sasl.password": "***", "acks": 1}


def librdkafka_threads() -> list[str]:
    """Names of this process's librdkafka threads ("rdk:main", "rdk:broker..."): each
    rd_kafka_t runs its own, and rd_kafka_destroy() returns once they have all ended."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            names.append(Path(f"/proc/self/task/{tid}/comm").read_text().strip())
    return sorted(n for n in names if n.startswith("rdk:"))


def test_client_close_is_idempotent_and_frees_handles():
    before = librdkafka_threads()
    c = _binding.Client("producer", {"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    c.topic("a")
    assert librdkafka_threads().count("rdk:main") == before.count("rdk:main") + 1
    event_thread = c._thread
    c.close()
    assert c.closed
    assert not c._finalizer.alive  # _destroy ran...
    assert c._state == {}  # ...and freed the topic, the queues, the deliveries and the handle
    assert not event_thread.is_alive()
    assert librdkafka_threads() == before  # rd_kafka_destroy really ran: its threads are gone
    c.close()  # idempotent: nothing left to free, nothing raised
    assert c.closed and c._state == {}


def test_a_handler_that_closes_its_client_frees_it_once_the_handler_returned():
    """close() from one of the client's own handlers (as rdk.aio.Producer's stop does on the
    event thread) must not free the handle under the poll that runs the handler: that poll
    still holds the event and the delivery buffer. It is freed once the poll returned."""
    ready, seen = threading.Event(), {}

    def on_stats(_stats: dict) -> None:
        ready.wait(10)
        c.close()
        seen["alive in the handler"] = {"rk", "deliveries", "queues"} <= set(c._state)
        c.wake()  # closed: a no-op, not a call on a freed queue

    c = _binding.Client("producer", {"bootstrap.servers": "127.0.0.1:1", "log_level": 0,
                                     "statistics.interval.ms": 10}, on_stats=on_stats)
    event_thread = c._thread
    ready.set()
    event_thread.join(30)
    assert not event_thread.is_alive()
    assert seen == {"alive in the handler": True}
    assert c.closed and c._state == {}  # freed after the handler, by the event thread
