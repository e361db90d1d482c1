"""rdk.Producer without a broker: option checking at construction, payload validation
(all or nothing) and the contiguous layout handed to C, use after stop."""

from __future__ import annotations

import array

import pytest

import rdk
from rdk._binding import ffi
from rdk.errors import ClosedError, ConfigError
from rdk.message import Message
from rdk.producer import BALANCERS, QUEUE_FULL_POLICIES, Delivery, DeliveryReportInfo, Producer, StatsInfo
from rdk.producer._accounting import SendState
from rdk.producer._layout import layout

NOWHERE = "127.0.0.1:9"  # nothing listens there; construction and enqueueing need no broker


@pytest.fixture
def producer():
    p = Producer(NOWHERE, driver_options={"log_level": 0})
    yield p
    p.stop(0)


def test_producer_and_its_result_types_are_exported():
    assert rdk.Producer is Producer
    assert rdk.SendResult._fields == ("enqueued", "send_queue_length")
    assert rdk.Message is Message
    assert rdk.aio.Producer.__module__ == "rdk.aio._producer"  # its own, not rdk.Producer
    assert rdk.aio.Delivery is Delivery and rdk.aio.SendResult is rdk.SendResult
    assert BALANCERS == ("consistent_random", "murmur2_random", "fnv1a", "round_robin", "least_bytes")
    assert QUEUE_FULL_POLICIES == ("drop", "block", "raise")
    assert Delivery._fields == ("delivered", "failures")
    assert DeliveryReportInfo([], []).errors == [] and StatsInfo(0, {}, 0).dropped == 0


def test_unknown_keyword_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="linger_ms"):
        Producer(NOWHERE, linger_ms=5)


RANGE = "is outside allowed range"


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"statistics_interval_ms": -1},
         f'statistics_interval_ms: Configuration property "statistics.interval.ms" value -1 {RANGE}'),
        ({"queue_buffering_max_messages": -5},
         'queue_buffering_max_messages: Configuration property "queue.buffering.max.messages" value -5'),
        ({"queue_buffering_max_ms": -1},
         'queue_buffering_max_ms: Configuration property "queue.buffering.max.ms" value -1'),
        ({"driver_options": {"no.such.property": 1}},
         'driver_options: No such configuration property: "no.such.property"'),
        ({"driver_options": {"acks": "maybe"}},
         'driver_options: Invalid value for configuration property "request.required.acks"'),
        ({"driver_options": {"compression.codec": "zip"}},
         'Invalid value "zip" for configuration property "compression.codec"'),
        ({"driver_options": {"delivery.report.only.error": True}}, "delivery.report.only.error would break"),
        ({"topic_options": {"partitioner": "bogus"}},
         'topic_options: Invalid value for configuration property "partitioner": bogus'),
        ({"topic_options": {"no.such.topic.property": 1}},
         'topic_options: No such configuration property: "no.such.topic.property"'),
    ],
)
def test_properties_librdkafka_refuses_raise_config_error_with_its_text_at_construction(kwargs, text):
    with pytest.raises(ConfigError) as ei:
        Producer(NOWHERE, **kwargs)
    assert isinstance(ei.value, ValueError)
    assert text in str(ei.value)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"balancer": "random"}, "balancer must be one of 'consistent_random', 'murmur2_random', 'fnv1a', "
                                 "'round_robin', 'least_bytes'; got 'random'"),
        ({"on_queue_full": "wait"}, "on_queue_full must be one of 'drop', 'block', 'raise'; got 'wait'"),
        ({"queue_buffering_max_ms": float("inf")}, "queue_buffering_max_ms must be a finite number"),
    ],
)
def test_a_value_outside_the_choices_raises_value_error_naming_the_argument(kwargs, text):
    with pytest.raises(ValueError) as ei:
        Producer(NOWHERE, **kwargs)
    assert text in str(ei.value)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"statistics_interval_ms": "5000"}, "statistics_interval_ms must be int, got str"),
        ({"queue_buffering_max_messages": 1.5}, "queue_buffering_max_messages must be int, got float"),
        ({"queue_buffering_max_ms": True}, "queue_buffering_max_ms must be a number, got bool"),
        ({"driver_options": ["acks", 1]}, "driver_options must be a dict of librdkafka properties, got list"),
        ({"topic_options": "acks=1"}, "topic_options must be a dict"),
        ({"stats_callback": 5}, "stats_callback must be callable, got int"),
        ({"delivery_report_callback": "print"}, "delivery_report_callback must be callable, got str"),
    ],
)
def test_an_option_of_the_wrong_type_raises_type_error_naming_it(kwargs, text):
    with pytest.raises(TypeError) as ei:
        Producer(NOWHERE, **kwargs)
    assert text in str(ei.value)


@pytest.mark.parametrize("broker, error, text", [
    (None, TypeError, "broker must be a str"),
    (9092, TypeError, "broker must be a str"),
    ("localhost", ValueError, "is not host:port"),
    ("a:1,,b:2", ValueError, "comma-separated list"),
])
def test_a_bad_broker_raises_naming_it(broker, error, text):
    with pytest.raises(error, match=text):
        Producer(broker)


def test_secret_values_stay_out_of_config_errors():
    with pytest.raises(ConfigError) as ei:
        Producer(NOWHERE, driver_options={"sasl.mechanisms": "PLAIN", "ssl.key.password": "hunter2",
                                          "security.protocol": "nonsense"})
    assert "hunter2" not in str(ei.value)


@pytest.mark.parametrize(
    "payloads, error, text",
    [
        ([b"ok", 5], TypeError, r"payloads\[1\]: payload of type int is not supported"),
        ([b"ok", None], TypeError, r"payloads\[1\]: payload of type NoneType"),
        ([b"a", (b"k", b"v", b"x")], TypeError, r"payloads\[1\]: a tuple payload must be \(key, value\)"),
        ([(1, b"v")], TypeError, r"payloads\[0\]: key of type int"),
        ([(b"k", 2.5)], TypeError, r"payloads\[0\]: value of type float"),
        ([b"a", b"b", Message(b"v", headers=5)], TypeError, r"payloads\[2\]: headers must be"),
        ([Message(b"v", headers=[("h",)])], TypeError,
         r"payloads\[0\]: each header must be a \(name, value\) pair"),
        ([Message(b"v", headers=[(1, b"x")])], TypeError, r"payloads\[0\]: header name must be str or bytes"),
        ([Message(b"v", headers=[("h", 7)])], TypeError, r"payloads\[0\]: header value of type int"),
        ([Message(b"v", timestamp="now")], TypeError, r"payloads\[0\]: timestamp must be an int"),
        ([Message(b"v", timestamp=-5)], TypeError, r"payloads\[0\]: timestamp must be an int"),
        ([b"x", bytearray(b"y"), array.array("i", [1, 2])], TypeError,
         r"payloads\[2\]: payload of type array"),
    ],
)
def test_an_unsupported_payload_raises_type_error_naming_its_index_and_nothing_is_enqueued(
        producer, payloads, error, text):
    with pytest.raises(error, match=text):
        producer.send("topic", 0, payloads)
    assert producer.send_queue_length == 0


@pytest.mark.parametrize(
    "args, error, text",
    [
        (("bad topic!", 0, [b"x"]), ValueError, "not a legal Kafka topic name"),
        ((None, 0, [b"x"]), TypeError, "topic must be str"),
        (("t", -1, [b"x"]), ValueError, "partition must be >= 0 or None, got -1"),
        (("t", "0", [b"x"]), TypeError, "partition must be an int or None, got str"),
        (("t", True, [b"x"]), TypeError, "partition must be an int or None, got bool"),
        (("t", 0, b"one message"), TypeError, "payloads must be a list, got bytes"),
        (("t", 0, iter([b"x"])), TypeError, "payloads must be a list"),
    ],
)
def test_bad_send_arguments_name_the_culprit(producer, args, error, text):
    with pytest.raises(error, match=text):
        producer.send(*args)
    assert producer.send_queue_length == 0


def test_send_checks_timeout_and_on_delivery(producer):
    with pytest.raises(ValueError, match="timeout must be >= 0"):
        producer.send("t", 0, [b"x"], timeout=-1)
    with pytest.raises(TypeError, match="on_delivery must be callable"):
        producer.send("t", 0, [b"x"], on_delivery=3)


def test_send_enqueues_without_a_broker_and_reports_the_queue_length(producer):
    result = producer.send("t", 0, [b"a", b"b", b"c"])
    assert result == (3, 3) and result.enqueued == 3 and result.send_queue_length == 3
    assert producer.send("t", 0, []) == (0, 3)


def test_use_after_stop_raises_closed_error_and_stop_is_idempotent():
    p = Producer(NOWHERE, driver_options={"log_level": 0})
    assert p.stop(0) == 0
    assert p.stop() == 0
    for call in (lambda: p.send("t", 0, [b"x"]), lambda: p.flush(1), lambda: p.partition_count("t"),
                 lambda: p.send_queue_length):
        with pytest.raises(ClosedError, match="Producer is stopped"):
            call()


def test_stop_returns_the_undelivered_count_without_waiting_past_timeout():
    failures = []
    p = Producer(NOWHERE, driver_options={"log_level": 0})
    p.send("t", 0, [b"a", b"b"], on_delivery=lambda d, f: failures.append((d, [e.name for _, e in f])))
    assert p.stop(2.0) == 2
    # purged, never silently lost: the call's accounting ran before stop returned
    assert failures == [(0, ["_PURGE_QUEUE", "_PURGE_QUEUE"])]


def test_context_manager_stops_the_producer():
    with Producer(NOWHERE) as p:
        assert "open" in repr(p)
    assert "stopped" in repr(p)
    with pytest.raises(ClosedError):
        p.send("t", 0, [b"x"])


# ---- the layout handed to rdk_produce_batch ------------------------------------------


def lay_out(payloads):
    """The rdk_produce_args one send() would hand to C (and the buffers it points into)."""
    args = ffi.new("rdk_produce_args *")
    keep = layout(payloads, args)
    return args, keep


def unpack(buf, offsets, nulls, n, i):
    if nulls != ffi.NULL and ffi.cast("unsigned char *", nulls)[i]:
        return None
    return ffi.unpack(buf + offsets[i], offsets[i + 1] - offsets[i])


def test_bytes_fast_path_is_one_buffer_and_int32_lengths():
    payloads = [b"", b"a\x00b", bytearray(b"cd"), memoryview(b"efg")]
    lay, _keep = lay_out(payloads)
    assert lay.n == 4 and lay.keys == ffi.NULL and lay.value_null == ffi.NULL
    assert lay.value_offsets == ffi.NULL and ffi.unpack(lay.value_lengths, 4) == [0, 3, 2, 3]
    assert ffi.unpack(lay.values, 8) == b"a\x00bcdefg"


def test_str_payloads_are_utf8_ascii_or_not():
    lay, _keep = lay_out(["ab", "", "c"])
    assert [lay.value_offsets[i] for i in range(4)] == [0, 2, 2, 3]
    lay, _keep = lay_out(["é", "x€"])
    assert [unpack(lay.values, lay.value_offsets, lay.value_null, 2, i) for i in range(2)] == [
        "é".encode(), "x€".encode()]


def test_memoryview_of_wider_items_is_sent_as_its_bytes():
    mv = memoryview(array.array("i", [1, 2]))
    lay, _keep = lay_out([b"x", mv])
    assert unpack(lay.values, lay.value_offsets, lay.value_null, 2, 1) == mv.tobytes()


def test_general_layout_carries_keys_nulls_headers_and_timestamps():
    payloads = [
        b"plain",
        (b"k1", b"v1"),
        (None, b"no key"),
        ("kstr", None),  # tombstone
        Message(b"m", key=b"", headers=[("h1", b"x"), (b"h2", None)], timestamp=1700000000000),
        Message("text", headers={"a": "b"}),
    ]
    lay, _keep = lay_out(payloads)
    values = [unpack(lay.values, lay.value_offsets, lay.value_null, 6, i) for i in range(6)]
    keys = [unpack(lay.keys, lay.key_offsets, lay.key_null, 6, i) for i in range(6)]
    assert values == [b"plain", b"v1", b"no key", None, b"m", b"text"]
    assert keys == [None, b"k1", None, b"kstr", b"", None]
    assert [lay.timestamps[i] for i in range(6)] == [0, 0, 0, 0, 1700000000000, 0]
    assert [lay.header_index[i] for i in range(7)] == [0, 0, 0, 0, 0, 2, 3]
    names = [unpack(lay.header_names, lay.header_name_offsets, ffi.NULL, 3, h) for h in range(3)]
    hvals = [unpack(lay.header_values, lay.header_value_offsets, lay.header_value_null, 3, h)
             for h in range(3)]
    assert names == [b"h1", b"h2", b"a"] and hvals == [b"x", None, b"b"]


def test_failure_messages_keep_what_the_caller_sent():
    payloads = ((b"k", b"v"), b"raw", Message(b"m", b"mk", [("h", b"1")], 5))
    state = SendState(payloads, "t", None, 3, None, [])
    assert state.message(0, 2) == Message(b"v", b"k", topic="t", partition=2)
    assert state.message(1, -1).partition is None
    assert state.message(1).partition is None
    m = state.message(2, 1)
    assert (m.value, m.key, m.headers, m.timestamp, m.topic, m.partition) == (
        b"m", b"mk", [("h", b"1")], 5, "t", 1)


def test_a_retry_after_a_full_queue_lays_out_only_the_refused_messages_in_call_order():
    from array import array as int_array

    from rdk.producer._layout import restrict

    lay, keep = lay_out([b"a", b"bb", b"ccc", b"dddd"])
    restrict(lay, int_array("i", [1, 3]), 4, keep)
    assert lay.n == 2 and [lay.indices[i] for i in range(2)] == [1, 3]
    # random access into the values needs offsets, not lengths
    assert lay.value_lengths == ffi.NULL
    assert [unpack(lay.values, lay.value_offsets, ffi.NULL, 4, i) for i in (1, 3)] == [b"bb", b"dddd"]
