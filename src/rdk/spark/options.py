"""The data source's options: the built-in Kafka connector's names and meanings.

Spark hands options over as a case-insensitive mapping (keys lower-cased). Everything is
checked here, on the driver, when the DataFrame is defined, so a bad option fails at
``load()`` / ``save()`` with a message naming it, not later inside an executor.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._binding import lib, new_conf, new_topic_conf
from ..errors import ConfigError
from ..slots import owns
from ..validate import check_broker, check_topic_name

__all__ = [
    "EARLIEST",
    "LATEST",
    "ReadOptions",
    "WriteOptions",
    "check_early",
    "parse_include_headers",
    "parse_read_options",
    "parse_write_options",
    "split_properties",
]

EARLIEST = -2  # in offset JSON, as in the built-in connector
LATEST = -1

# librdkafka properties the built-in connector forbids (Spark owns offsets and bytes).
_FORBIDDEN = {
    "group.id": "rdkafka tracks progress itself (Spark's checkpoint for streams, explicit "
                "offset ranges for batches) and never joins a consumer group",
    "auto.offset.reset": "use the startingOffsets option ('earliest', 'latest' or JSON) instead",
    "enable.auto.commit": "offsets are never committed to Kafka; Spark's checkpoint keeps them",
    "key.deserializer": "keys are always read as binary; cast the key column in a query",
    "value.deserializer": "values are always read as binary; cast the value column in a query",
    "key.serializer": "keys are written as given (binary or string columns); "
                      "serialize in the DataFrame",
    "value.serializer": "values are written as given (binary or string columns); "
                        "serialize in the DataFrame",
    "interceptor.classes": "Kafka Java interceptors do not exist in librdkafka",
    "enable.partition.eof": "rdkafka needs end-of-partition events to finish offset ranges",
}

# Built-in options whose meaning rdkafka does not implement: refusing them beats
# silently reading something other than what was asked.
_UNSUPPORTED = {
    "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
    "endingtimestamp", "endingoffsetsbytimestamp", "minoffsetspertrigger", "maxtriggerdelay",
    "maxrecordsperpartition",
}
# Built-in tuning options that have no counterpart here: accepted and ignored.
_IGNORED = {"fetchoffset.numretries", "fetchoffset.retryintervalms", "groupidprefix",
            "path", "checkpointlocation", "queryname"}

_READ_OPTIONS = {
    "subscribe", "assign", "subscribepattern", "startingoffsets", "endingoffsets",
    "maxoffsetspertrigger", "minpartitions", "failondataloss", "includeheaders",
    "kafkaconsumer.polltimeoutms", "numworkers", "workerslot",
}
_WRITE_OPTIONS = {"topic", "includeheaders"}

# The user-facing spelling of each option, for messages.
_SPELLING = {name.lower(): name for name in (
    "subscribe", "assign", "subscribePattern", "startingOffsets", "endingOffsets",
    "maxOffsetsPerTrigger", "minPartitions", "failOnDataLoss", "includeHeaders",
    "kafkaConsumer.pollTimeoutMs", "numWorkers", "workerSlot", "topic",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "endingTimestamp", "endingOffsetsByTimestamp", "minOffsetsPerTrigger", "maxTriggerDelay",
    "maxRecordsPerPartition",
)}


def _name(key: str) -> str:
    return _SPELLING.get(key, key)


Offsets = dict[str, dict[int, int]]


@dataclass(frozen=True)
class ReadOptions:
    """Parsed reading options (picklable: it travels to executors)."""

    kafka: dict[str, str]                   # librdkafka properties, bootstrap.servers included
    strategy: str                           # "subscribe" | "assign" | "subscribePattern"
    topics: tuple[str, ...] = ()            # subscribe
    assignment: dict[str, tuple[int, ...]] = field(default_factory=dict)  # assign
    pattern: str | None = None              # subscribePattern
    starting: str | Offsets = "earliest"    # "earliest" | "latest" | {topic: {p: offset}}
    ending: str | Offsets = "latest"        # "latest" | {topic: {p: offset}}
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    num_workers: int = 1
    worker_slot: int = 0

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]

    def owns(self, partition: int) -> bool:
        """kafka-native's worker-slot rule (:func:`rdk.slots.owns`) for numWorkers/workerSlot."""
        return owns(partition, self.num_workers, self.worker_slot)


@dataclass(frozen=True)
class WriteOptions:
    """Parsed writing options."""

    kafka: dict[str, str]
    topic: str | None = None


def _lower(options: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in options.items():
        if v is None:
            continue
        out[str(k).lower()] = v if isinstance(v, str) else str(v)
    return out


def _kafka_properties(opts: dict[str, str], what: str) -> dict[str, str]:
    """The kafka.* options as librdkafka properties, checked by librdkafka itself."""
    props = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    if "bootstrap.servers" not in props or not props["bootstrap.servers"].strip():
        raise ConfigError(f"rdkafka {what}: option 'kafka.bootstrap.servers' is required "
                          "(a comma-separated list of host:port)")
    try:
        check_broker(props["bootstrap.servers"], "option 'kafka.bootstrap.servers'")
    except (TypeError, ValueError) as e:
        raise ConfigError(str(e)) from None
    for name in props:
        if name in _FORBIDDEN:
            raise ConfigError(f"rdkafka option 'kafka.{name}' is not supported: {_FORBIDDEN[name]}")
    # librdkafka is the validator of its own properties: build a configuration now.
    lib.rd_kafka_conf_destroy(new_conf(props, what="rdkafka option kafka.* (librdkafka)"))
    return props


def split_properties(props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(global, topic) librdkafka properties: a handle given a default topic configuration
    would lose topic-level properties set on its global one, so they are kept apart."""
    glob: dict[str, str] = {}
    topic: dict[str, str] = {}
    for name, value in props.items():
        try:
            lib.rd_kafka_topic_conf_destroy(new_topic_conf({name: value}))
        except ConfigError:
            glob[name] = value
        else:
            topic[name] = value
    return glob, topic


def _check_known(opts: dict[str, str], known: set[str], what: str) -> None:
    for key in opts:
        if key.startswith("kafka.") or key in known or key in _IGNORED:
            continue
        if key in _UNSUPPORTED:
            raise ConfigError(f"rdkafka option '{_name(key)}' is not supported "
                              "(the built-in connector's timestamp and trigger-delay options "
                              "are not implemented); use startingOffsets/endingOffsets")
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:
            raise ConfigError(f"rdkafka {what}: unknown option '{key}'; "
                              f"did you mean '{_name(close[0])}'?")
        # Anything else is ignored, as the built-in connector does.


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    if key not in opts:
        return default
    v = opts[key].strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"rdkafka option '{_name(key)}' must be 'true' or 'false', "
                          f"got {opts[key]!r}")
    return v == "true"


def _int(opts: dict[str, str], key: str, minimum: int) -> int | None:
    if key not in opts:
        return None
    try:
        v = int(opts[key].strip())
    except ValueError:
        raise ConfigError(f"rdkafka option '{_name(key)}' must be an integer, "
                          f"got {opts[key]!r}") from None
    if v < minimum:
        raise ConfigError(f"rdkafka option '{_name(key)}' must be >= {minimum}, got {v}")
    return v


def _json(opts: dict[str, str], key: str, example: str) -> Any:
    try:
        return json.loads(opts[key])
    except ValueError as e:
        raise ConfigError(f"rdkafka option '{_name(key)}' is not valid JSON ({e}); "
                          f"expected e.g. {example}") from None


def _parse_assign(opts: dict[str, str]) -> dict[str, tuple[int, ...]]:
    example = '{"topicA":[0,1],"topicB":[2,4]}'
    value = _json(opts, "assign", example)
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"rdkafka option 'assign' must be a JSON object of topic to "
                          f"partition list, e.g. {example}; got {opts['assign']!r}")
    out = {}
    for topic, parts in value.items():
        _topic_ok(topic, "assign")
        if (not isinstance(parts, list) or not parts
                or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                           for p in parts)):
            raise ConfigError(f"rdkafka option 'assign': topic {topic!r} needs a non-empty "
                              f"list of partition numbers >= 0, got {parts!r}")
        out[topic] = tuple(sorted(set(parts)))
    return out


def _topic_ok(topic: Any, option: str) -> str:
    try:
        return check_topic_name(topic, f"topic in option '{option}'")
    except (TypeError, ValueError) as e:
        raise ConfigError(f"rdkafka option '{option}': {e}") from None


def _parse_offsets(opts: dict[str, str], key: str, *, allow: tuple[str, ...],
                   allow_json: tuple[int, ...]) -> str | Offsets:
    raw = opts[key].strip()
    if raw.lower() in ("earliest", "latest"):
        word = raw.lower()
        if word not in allow:
            if key == "startingoffsets":
                why = ("a batch query would read nothing; use 'earliest' or JSON "
                       "offsets (or readStream for 'latest')")
            else:
                why = "a batch query cannot end before it starts; use 'latest' or JSON offsets"
            raise ConfigError(f"rdkafka option '{_name(key)}' cannot be {word!r} here: {why}")
        return word
    example = '{"topicA":{"0":23,"1":-2},"topicB":{"0":-1}}'
    value = _json(opts, key, f"'earliest', 'latest' or {example}")
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"rdkafka option '{_name(key)}' must be 'earliest', 'latest' or a "
                          f"JSON object like {example}; got {raw!r}")
    out: Offsets = {}
    for topic, parts in value.items():
        _topic_ok(topic, _name(key))
        if not isinstance(parts, dict) or not parts:
            raise ConfigError(f"rdkafka option '{_name(key)}': topic {topic!r} needs an object "
                              f"of partition to offset, got {parts!r}")
        out[topic] = {}
        for p, off in parts.items():
            if not re.fullmatch(r"\d+", str(p)):
                raise ConfigError(f"rdkafka option '{_name(key)}': {topic!r} partition {p!r} "
                                  "is not a partition number")
            if not isinstance(off, int) or isinstance(off, bool) or off < -2:
                raise ConfigError(f"rdkafka option '{_name(key)}': offset of {topic}-{p} must be "
                                  f"an integer >= 0, -2 (earliest) or -1 (latest); got {off!r}")
            if off < 0 and off not in allow_json:
                word = "earliest" if off == EARLIEST else "latest"
                raise ConfigError(f"rdkafka option '{_name(key)}': offset {off} ({word}) of "
                                  f"{topic}-{p} is not allowed here")
            out[topic][int(p)] = off
    return out


def parse_read_options(options: Mapping[str, Any], *, streaming: bool) -> ReadOptions:
    """Check and parse reading options; ConfigError names the culprit."""
    opts = _lower(options)
    what = "stream source" if streaming else "batch source"
    _check_known(opts, _READ_OPTIONS, what)
    kafka = _kafka_properties(opts, what)

    given = [k for k in ("subscribe", "assign", "subscribepattern") if k in opts]
    if len(given) != 1:
        found = ", ".join(_name(k) for k in given) or "none"
        raise ConfigError("rdkafka: exactly one of the options 'subscribe', 'assign' or "
                          f"'subscribePattern' is required (found: {found})")
    strategy = _name(given[0])
    topics: tuple[str, ...] = ()
    assignment: dict[str, tuple[int, ...]] = {}
    pattern = None
    if strategy == "subscribe":
        names = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
        if not names:
            raise ConfigError("rdkafka option 'subscribe' must list at least one topic "
                              "(comma-separated)")
        topics = tuple(dict.fromkeys(_topic_ok(t, "subscribe") for t in names))
    elif strategy == "assign":
        assignment = _parse_assign(opts)
    else:
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"rdkafka option 'subscribePattern': {pattern!r} is not a valid "
                              f"regular expression ({e})") from None

    if "startingoffsets" in opts:
        starting = _parse_offsets(
            opts, "startingoffsets",
            allow=("earliest", "latest") if streaming else ("earliest",),
            allow_json=(EARLIEST, LATEST) if streaming else (EARLIEST,))
    else:
        starting = "latest" if streaming else "earliest"
    if "endingoffsets" in opts:
        if streaming:
            raise ConfigError("rdkafka option 'endingOffsets' is for batch queries only "
                              "(a stream has no end); remove it or use spark.read")
        ending = _parse_offsets(opts, "endingoffsets", allow=("latest",), allow_json=(LATEST,))
    else:
        ending = "latest"
    if isinstance(starting, dict) and strategy == "assign":
        for t, parts in starting.items():
            extra = set(parts) - set(assignment.get(t, ()))
            if extra:
                raise ConfigError(f"rdkafka option 'startingOffsets' names {t} partitions "
                                  f"{sorted(extra)} that option 'assign' does not assign")

    num_workers = _int(opts, "numworkers", 1) or 1
    worker_slot = _int(opts, "workerslot", 0) or 0
    if worker_slot >= num_workers:
        raise ConfigError(f"rdkafka option 'workerSlot' must be < numWorkers ({num_workers}), "
                          f"got {worker_slot}")
    poll = _int(opts, "kafkaconsumer.polltimeoutms", 1)
    return ReadOptions(
        kafka=kafka, strategy=strategy, topics=topics, assignment=assignment, pattern=pattern,
        starting=starting, ending=ending,
        max_offsets_per_trigger=_int(opts, "maxoffsetspertrigger", 1),
        min_partitions=_int(opts, "minpartitions", 1),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        include_headers=_bool(opts, "includeheaders", False),
        poll_timeout_ms=poll if poll is not None else 120_000,
        num_workers=num_workers, worker_slot=worker_slot,
    )


def parse_write_options(options: Mapping[str, Any]) -> WriteOptions:
    """Check and parse writing options (the built-in sink's: kafka.*, topic)."""
    opts = _lower(options)
    _check_known(opts, _WRITE_OPTIONS | _READ_OPTIONS, "sink")
    kafka = _kafka_properties(opts, "sink")
    topic = opts.get("topic")
    if topic is not None:
        _topic_ok(topic.strip(), "topic")
        topic = topic.strip()
    return WriteOptions(kafka=kafka, topic=topic)


def parse_include_headers(options: Mapping[str, Any]) -> bool:
    """The ``includeHeaders`` option ('true' / 'false', default false), checked."""
    return _bool(_lower(options), "includeheaders", False)


def check_early(options: Mapping[str, Any]) -> None:
    """What can be checked before Spark says whether this is a batch or a stream.

    Without a source option (subscribe / assign / subscribePattern) the options are
    checked as a sink's; otherwise as a batch source's, or else a stream source's (the
    batch source's error is raised when both refuse them).
    """
    opts = _lower(options)
    if not any(k in opts for k in ("subscribe", "assign", "subscribepattern")):
        parse_write_options(options)  # kafka.* and the rest; the reader says what is missing
        return
    try:
        parse_read_options(options, streaming=False)
    except ConfigError:
        try:
            parse_read_options(options, streaming=True)
        except ConfigError:
            pass
        else:
            return
        raise
