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
    assert o.kafka == {"bootstrap.servers": "h:1", "fetch.min.bytes": "10"}
    assert [p for p in range(9) if o.owns(p)] == [2, 5, 8]
    assert parse_read_options(BASE, streaming=True).starting == "latest"
    assert parse_read_options(BASE, streaming=False).starting == "earliest"


@pytest.mark.parametrize("name", ["group.id", "auto.offset.reset", "enable.auto.commit",
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
    refused("'startingTimestamp' is not supported", startingTimestamp="1000")


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
    with pytest.raises(Exception, match=r"'kafka\.group\.id' is not supported"):
        kafka_reader(mock_broker, subscribe="t", **{"kafka.group.id": "g"}).load()  # at load()
    with pytest.raises(Exception, match="fixed schema"):
        kafka_reader(mock_broker, subscribe="t").schema("value string").load().collect()


def test_include_headers_is_read_before_the_source_kind_is_known():
    assert parse_include_headers({"includeHeaders": "TRUE"}) is True
    assert parse_include_headers({}) is False
    with pytest.raises(ConfigError, match="'includeHeaders' must be 'true' or 'false'"):
        parse_include_headers({"includeheaders": "yes"})
