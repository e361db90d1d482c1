"""Invalid and forbidden options fail early, with messages that name the option."""

from __future__ import annotations

import json

import pytest

from rdk import ConfigError, KafkaError
from rdk.spark.options import (
    parse_include_headers,
    parse_read_options,
    parse_write_options,
    split_properties,
)
from rdk.spark.reader import KafkaBatchReader

pytestmark = pytest.mark.spark

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def refused(match: str, streaming: bool = False, **options):
    with pytest.raises(ConfigError, match=match):
        parse_read_options({**BASE, **options}, streaming=streaming)


def test_valid_options_parse_to_the_built_in_meanings():
    o = parse_read_options({"kafka.bootstrap.servers": "h:1", "assign": '{"a":[1,0],"b":[2]}',
                            "startingOffsets": '{"a":{"0":5,"1":-2},"b":{"2":-1}}',
                            "maxOffsetsPerTrigger": "100", "minPartitions": "4",
                            "failOnDataLoss": "false", "includeHeaders": "true",
                            "numWorkers": "3", "workerSlot": "2", "kafka.fetch.min.bytes": "10"},
                           streaming=True)
    assert o.strategy == "assign" and o.assignment == {"a": (0, 1), "b": (2,)}
    assert o.starting == {"a": {0: 5, 1: -2}, "b": {2: -1}} and o.ending == "latest"
    assert (o.max_offsets_per_trigger, o.min_partitions) == (100, 4)
    assert not o.fail_on_data_loss and o.include_headers
    assert o.kafka == {"bootstrap.servers": "h:1", "fetch.min.bytes": "10",
                       "isolation.level": "read_uncommitted"}  # the built-in default
    assert [p for p in range(9) if o.owns(p)] == [2, 5, 8]
    assert parse_read_options(BASE, streaming=True).starting == "latest"
    assert parse_read_options(BASE, streaming=False).starting == "earliest"


@pytest.mark.parametrize("name", ["auto.offset.reset", "enable.auto.commit",
                                  "key.deserializer", "value.deserializer", "key.serializer",
                                  "value.serializer"])
def test_forbidden_kafka_options_are_refused_with_the_reason(name):
    refused(rf"'kafka\.{name}' is not supported: ", **{f"kafka.{name}": "x"})
    with pytest.raises(ConfigError, match=rf"'kafka\.{name}' is not supported"):
        parse_write_options({"kafka.bootstrap.servers": "h:1", "topic": "t", f"kafka.{name}": "x"})


def test_librdkafka_judges_passthrough_properties():
    refused(r"kafka\.\* \(librdkafka\): No such configuration property: \"no.such.thing\"",
            **{"kafka.no.such.thing": "1"})
    refused(r"fetch.wait.max.ms", **{"kafka.fetch.wait.max.ms": "-5"})


def test_exactly_one_subscription_option_is_required():
    with pytest.raises(ConfigError, match=r"exactly one of .*found: none"):
        parse_read_options({"kafka.bootstrap.servers": "h:1"}, streaming=False)
    refused("exactly one of .*found: subscribe, assign", assign='{"t":[0]}')
    refused(r"'kafka\.bootstrap\.servers' is required", **{"kafka.bootstrap.servers": " "})
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        parse_read_options({"subscribe": "t"}, streaming=False)
    refused("not host:port", **{"kafka.bootstrap.servers": "nohost"})


def test_bad_values_name_the_option():
    refused("'assign' is not valid JSON", subscribe=None, assign="{t:[0]}")
    refused("'assign': topic 't' needs a non-empty list", subscribe=None, assign='{"t":[]}')
    refused("'subscribePattern'.*not a valid regular expression", subscribe=None,
            subscribePattern="(")
    refused("'subscribe'.*not a legal Kafka topic name", subscribe="a,b c")
    refused("'startingOffsets' is not valid JSON", startingOffsets="{oops")
    refused("'startingOffsets': offset of t-0 must be", startingOffsets='{"t":{"0":-3}}')
    refused("'startingOffsets': 't' partition 'x'", startingOffsets='{"t":{"x":1}}')
    refused("'maxOffsetsPerTrigger' must be an integer", maxOffsetsPerTrigger="many")
    refused("'minPartitions' must be >= 1", minPartitions="0")
    refused("'failOnDataLoss' must be 'true' or 'false'", failOnDataLoss="yes")
    refused("'workerSlot' must be < numWorkers", numWorkers="2", workerSlot="2")
    refused("unknown option 'startingoffset'; did you mean 'startingOffsets'",
            startingOffset="earliest")
    refused("'startingTimestamp' must be an integer", startingTimestamp="yesterday")
    refused("'startingOffsetsByTimestamp': the timestamp of t-0 must be >= 0",
            startingOffsetsByTimestamp='{"t":{"0":-1}}')
    refused("'startingOffsetsByTimestampStrategy' must be 'error' or 'latest'",
            startingOffsetsByTimestampStrategy="earliest")
    refused("'maxTriggerDelay' must be a duration", maxTriggerDelay="soon")
    refused("'minOffsetsPerTrigger' \\(10\\) must not be greater than maxOffsetsPerTrigger",
            minOffsetsPerTrigger="10", maxOffsetsPerTrigger="5")
    refused("'fetchOffset.numRetries' must be >= 0", **{"fetchOffset.numRetries": "-1"})
    refused("'groupIdPrefix' must not be empty", groupIdPrefix=" ")
    refused("'maxRecordsPerPartition' must be >= 1", maxRecordsPerPartition="0")


def test_one_partition_written_twice_is_refused():
    """Bug 5: "0" and "00" name one partition; the built-in parser would merge them."""
    refused("partition 0 of 't' is given twice", startingOffsets='{"t":{"0":1,"00":2}}')
    refused("the key '0' appears twice", startingOffsets='{"t":{"0":1,"0":2}}')
    refused("partition 1 of 't' is given twice",
            endingOffsetsByTimestamp='{"t":{"1":1,"01":2}}')


def test_timestamp_options_take_precedence_as_in_the_built_in_connector():
    from rdk.spark.options import Timestamps

    o = parse_read_options({**BASE, "startingOffsets": "earliest", "startingTimestamp": "1000",
                            "startingOffsetsByTimestamp": '{"t":{"0":5}}',
                            "endingOffsets": "latest", "endingOffsetsByTimestamp": '{"t":{"0":9}}'},
                           streaming=False)
    assert o.starting == Timestamps(everywhere=1000)  # startingTimestamp wins
    assert o.ending == Timestamps(by_partition={"t": {0: 9}})  # ...ByTimestamp beats ...Offsets
    o = parse_read_options({**BASE, "startingOffsetsByTimestamp": '{"t":{"0":5}}',
                            "startingOffsets": '{"t":{"0":1}}',
                            "startingOffsetsByTimestampStrategy": "LATEST"}, streaming=True)
    assert o.starting == Timestamps(by_partition={"t": {0: 5}})
    assert o.by_timestamp_strategy == "latest"
    for key in ("endingTimestamp", "endingOffsetsByTimestamp"):
        refused(f"'{key}' is for batch queries only", streaming=True, **{key: "1"})


def test_trigger_and_fetch_options_parse():
    o = parse_read_options({**BASE, "minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "50",
                            "maxTriggerDelay": "30s", "fetchOffset.numRetries": "0",
                            "fetchOffset.retryIntervalMs": "20", "maxRecordsPerPartition": "7"},
                           streaming=True)
    assert (o.min_offsets_per_trigger, o.max_offsets_per_trigger) == (5, 50)
    assert o.max_trigger_delay_ms == 30_000
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (0, 20)
    assert o.max_records_per_partition == 7
    defaults = parse_read_options(BASE, streaming=True)
    assert defaults.max_trigger_delay_ms == 15 * 60_000  # the built-in default, 15m
    assert (defaults.fetch_offset_retries, defaults.fetch_offset_retry_interval_ms) == (3, 1000)
    for text, ms in (("250", 250), ("250ms", 250), ("2m", 120_000), ("1h", 3_600_000)):
        assert parse_read_options({**BASE, "maxTriggerDelay": text},
                                  streaming=True).max_trigger_delay_ms == ms


def test_group_id_is_accepted_and_group_id_prefix_names_the_handles(caplog):
    with caplog.at_level("WARNING", logger="rdk.spark"):
        o = parse_read_options({**BASE, "kafka.group.id": "mine", "groupIdPrefix": "ignored"},
                               streaming=False)
    assert o.kafka["group.id"] == "mine"  # kafka.group.id wins over groupIdPrefix
    assert "use it with caution" in caplog.text
    a = parse_read_options({**BASE, "groupIdPrefix": "etl"}, streaming=True)
    b = parse_read_options({**BASE, "groupIdPrefix": "etl"}, streaming=True)
    assert a.kafka["group.id"].startswith("etl-") and a.kafka["group.id"] != b.kafka["group.id"]
    assert "group.id" not in parse_read_options(BASE, streaming=True).kafka


def test_isolation_level_is_one_for_plan_and_read():
    from rdk.spark.reader import consumer_properties

    o = parse_read_options({**BASE, "kafka.isolation.level": "read_committed"}, streaming=False)
    assert consumer_properties(o)[0]["isolation.level"] == "read_committed"
    o = parse_read_options(BASE, streaming=False)
    assert o.kafka["isolation.level"] == "read_uncommitted"
    assert consumer_properties(o)[0]["isolation.level"] == "read_uncommitted"
    refused("isolation.level", **{"kafka.isolation.level": "serializable"})


def test_batch_and_stream_only_forms_are_refused_in_the_other_mode():
    refused("'startingOffsets' cannot be 'latest' here: a batch query", startingOffsets="latest")
    refused("offset -1 \\(latest\\) of t-0 is not allowed", startingOffsets='{"t":{"0":-1}}')
    refused("'endingOffsets' cannot be 'earliest'", endingOffsets="earliest")
    refused("offset -2 \\(earliest\\) of t-0 is not allowed", endingOffsets='{"t":{"0":-2}}')
    refused("'endingOffsets' is for batch queries only", streaming=True, endingOffsets="latest")


def test_topic_level_properties_are_kept_apart():
    glob, topic = split_properties({"bootstrap.servers": "h:1", "acks": "all", "linger.ms": "5"})
    assert glob == {"bootstrap.servers": "h:1", "linger.ms": "5"} and topic == {"acks": "all"}


def test_offsets_json_must_cover_every_partition_read(mock_broker, new_topic):
    topic = new_topic(mock_broker, 2)

    def plan(**options):
        opts = parse_read_options({"kafka.bootstrap.servers": mock_broker.bootstrap_servers,
                                   "subscribe": topic, **options}, streaming=False)
        return KafkaBatchReader(opts).partitions()

    with pytest.raises(ConfigError, match=f"missing {topic}-1 .use -2 for earliest"):
        plan(startingOffsets=json.dumps({topic: {"0": 0}}))
    with pytest.raises(ConfigError, match=f"names {topic}-5, which this query does not read"):
        plan(startingOffsets=json.dumps({topic: {"0": 0, "1": 0, "5": 0}}))
    with pytest.raises(ConfigError, match=f"'endingOffsets': 10 for {topic}-0 is past the end"):
        plan(endingOffsets=json.dumps({topic: {"0": 10, "1": -1}}))
    with pytest.raises(KafkaError, match="UNKNOWN_TOPIC_OR_PART") as ei:
        opts = parse_read_options({"kafka.bootstrap.servers": mock_broker.bootstrap_servers,
                                   "subscribe": "no-such-topic-here"}, streaming=False)
        KafkaBatchReader(opts).partitions()
    assert "no-such-topic-here" in str(ei.value)


def test_spark_surfaces_option_errors(spark, mock_broker, kafka_reader):
    with pytest.raises(Exception, match=r"'kafka\.auto\.offset\.reset' is not supported"):
        kafka_reader(mock_broker, subscribe="t", **{"kafka.auto.offset.reset": "x"}).load()
    with pytest.raises(Exception, match="fixed schema"):
        kafka_reader(mock_broker, subscribe="t").schema("value string").load().collect()


def test_include_headers_is_read_before_the_source_kind_is_known():
    assert parse_include_headers({"includeHeaders": "TRUE"}) is True
    assert parse_include_headers({}) is False
    with pytest.raises(ConfigError, match="'includeHeaders' must be 'true' or 'false'"):
        parse_include_headers({"includeheaders": "yes"})


def test_topic_level_offsets_as_in_the_built_in_json():
    """JsonUtilsSuite: a topic maps to "earliest"/"latest" (any case) or to partitions."""
    o = parse_read_options({**BASE, "subscribe": "a,b,c",
                            "startingOffsets": '{"a":"earliest","b":{"0":23,"1":-1},"c":"LATEST"}'},
                           streaming=True)
    assert o.starting == {"a": -2, "b": {0: 23, 1: -1}, "c": -1}
    refused("the key 'a' appears twice", startingOffsets='{"a":"earliest","a":{"0":23}}')
    for bad in ('{"a":"first"}', '{"a":[0,1]}', '{"a":{"0":"earliest"}}', '"earliest"',
                "not json"):
        with pytest.raises(ConfigError, match="'startingOffsets'"):
            parse_read_options({**BASE, "startingOffsets": bad}, streaming=True)
    refused("topic 't' cannot start or end at 'latest' here", startingOffsets='{"t":"latest"}')
    refused("topic 't' cannot start or end at 'earliest' here", endingOffsets='{"t":"earliest"}')
    refused("names topic 'x', which option 'assign' does not assign", subscribe=None,
            assign='{"t":[0]}', startingOffsets='{"x":"earliest"}')


def test_batch_start_after_end_and_empty_subscriptions_are_refused_early():
    refused("the starting offset 1 of t-2 is greater than its ending offset 0",
            startingOffsets='{"t":{"0":1,"1":1,"2":1}}', endingOffsets='{"t":{"0":1,"1":1,"2":0}}')
    refused("'subscribe' must list at least one topic", subscribe="")
    refused("the pattern to subscribe to is empty", subscribe=None, subscribePattern=" ")
    refused("'assign' is not valid JSON", subscribe=None, assign="")


def test_topic_level_offsets_resolve_against_the_partitions_read(mock_broker, new_topic,
                                                                 produce):
    """KafkaOffsetRangeLimitSuite: a topic-level offset covers every partition of the topic;
    one for a topic the query does not read fails naming it."""
    a, b = new_topic(mock_broker, 2), new_topic(mock_broker, 1)
    produce(mock_broker, a, 1, [b"x"] * 4)
    produce(mock_broker, b, 0, [b"y"] * 30)

    def plan(**options):
        opts = parse_read_options({"kafka.bootstrap.servers": mock_broker.bootstrap_servers,
                                   "subscribe": f"{a},{b}", **options}, streaming=False)
        return sorted((r.topic, r.partition, r.start, r.end)
                      for r in KafkaBatchReader(opts).partitions())

    assert plan(startingOffsets=json.dumps({a: "earliest", b: {"0": 23}})) == sorted([
        (a, 1, 0, 4), (b, 0, 23, 30)])
    assert plan(endingOffsets=json.dumps({a: "latest", b: {"0": 5}})) == sorted([
        (a, 1, 0, 4), (b, 0, 0, 5)])
    with pytest.raises(ConfigError, match="gives topic 'nope' an offset, but this query reads"):
        plan(startingOffsets=json.dumps({a: "earliest", b: "earliest", "nope": "earliest"}))


def test_the_reading_handle_does_not_long_poll_past_its_range_unless_told():
    """A Fetch past a range's end only long-polls, and librdkafka sends a broker no other Fetch
    while one is in flight: on a cached client the next task waited out fetch.wait.max.ms
    (500 ms by default) before its first record. The reader asks for 10 ms; a user's
    kafka.fetch.wait.max.ms still wins."""
    from rdk.spark.reader import consumer_properties

    assert consumer_properties(parse_read_options(BASE, streaming=True))[0]["fetch.wait.max.ms"] == "10"
    o = parse_read_options({**BASE, "kafka.fetch.wait.max.ms": "250"}, streaming=False)
    assert consumer_properties(o)[0]["fetch.wait.max.ms"] == "250"
