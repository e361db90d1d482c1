"""The data source's options: the built-in Kafka connector's names and meanings.

Spark hands options over as a case-insensitive mapping (keys lower-cased). Everything is
checked here, on the driver, when the DataFrame is defined, so a bad option fails at
``load()`` / ``save()`` with a message naming it, not later inside an executor.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._binding import validate_options, validate_topic_options
from ..errors import ConfigError
from ..slots import owns
from ..validate import check_broker, check_topic_name

log = logging.getLogger("rdk.spark")

# the data source's internals; rdk.spark re-exports what users see
__all__: list[str] = []

EARLIEST = -2  # in offset JSON, as in the built-in connector
LATEST = -1

# librdkafka properties the built-in connector forbids (Spark owns offsets and bytes).
_FORBIDDEN = {
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

# Options Spark itself sets or that have no meaning for Kafka: accepted and ignored.
_IGNORED = {"path", "checkpointlocation", "queryname"}

_READ_OPTIONS = {
    "subscribe", "assign", "subscribepattern", "startingoffsets", "endingoffsets",
    "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
    "endingtimestamp", "endingoffsetsbytimestamp",
    "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
    "minpartitions", "maxrecordsperpartition", "failondataloss", "includeheaders",
    "kafkaconsumer.polltimeoutms", "fetchoffset.numretries", "fetchoffset.retryintervalms",
    "groupidprefix", "numworkers", "workerslot",
    # rdk.spark.registry: schema-registry framed Avro values
    "valueformat", "schemaregistry.url", "schemaregistry.subject", "schemaregistry.basicauth",
}
_WRITE_OPTIONS = {"topic", "includeheaders", "exactlyonce", "transactionalidprefix", "stagingtopic"}

# The user-facing spelling of each option, for messages.
_SPELLING = {name.lower(): name for name in (
    "subscribe", "assign", "subscribePattern", "startingOffsets", "endingOffsets",
    "maxOffsetsPerTrigger", "minPartitions", "failOnDataLoss", "includeHeaders",
    "exactlyOnce", "transactionalIdPrefix", "stagingTopic",
    "kafkaConsumer.pollTimeoutMs", "numWorkers", "workerSlot", "topic",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "endingTimestamp", "endingOffsetsByTimestamp", "minOffsetsPerTrigger", "maxTriggerDelay",
    "maxRecordsPerPartition", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "groupIdPrefix",
)}


def _name(key: str) -> str:
    return _SPELLING.get(key, key)


# {topic: {partition: offset}}; a topic may instead map to one topic-level offset
# (-2 earliest / -1 latest, written "earliest" / "latest"), as in the built-in connector
Offsets = dict[str, "dict[int, int] | int"]


@dataclass(frozen=True)
class Timestamps:
    """A timestamp position (ms since the epoch): one for every partition (``everywhere``,
    from startingTimestamp / endingTimestamp) or one per partition (``by_partition``, from
    startingOffsetsByTimestamp / endingOffsetsByTimestamp)."""

    everywhere: int | None = None
    by_partition: Offsets | None = None


@dataclass(frozen=True)
class ReadOptions:
    """Parsed reading options (picklable: it travels to executors).

    Made by `parse_read_options` from the data source's
    options, named after the built-in connector's in the field descriptions.
    """

    kafka: dict[str, str]                   # librdkafka properties, bootstrap.servers included
    """librdkafka properties (the ``kafka.*`` options), ``bootstrap.servers`` included."""
    strategy: str                           # "subscribe" | "assign" | "subscribePattern"
    """``"subscribe"``, ``"assign"`` or ``"subscribePattern"``."""
    topics: tuple[str, ...] = ()            # subscribe
    """The ``subscribe`` topics."""
    assignment: dict[str, tuple[int, ...]] = field(default_factory=dict)  # assign
    """The ``assign`` option: ``{topic: partitions}``."""
    pattern: str | None = None              # subscribePattern
    """The ``subscribePattern`` regex."""
    # "earliest" | "latest" | {topic: {p: offset}} | Timestamps (the timestamp options win)
    starting: str | Offsets | Timestamps = "earliest"
    """``"earliest"``, ``"latest"``, ``{topic: {partition: offset}}`` or a ``Timestamps``
    (startingOffsets; the timestamp options win)."""
    ending: str | Offsets | Timestamps = "latest"
    """As ``starting``, for endingOffsets (batch reads)."""
    # startingOffsetsByTimestampStrategy: "error" (no offset at or after the timestamp
    # fails the query) or "latest" (such partitions start at their end)
    by_timestamp_strategy: str = "error"
    """startingOffsetsByTimestampStrategy: ``"error"`` (no offset at or after the timestamp
    fails the query) or ``"latest"`` (such partitions start at their end)."""
    max_offsets_per_trigger: int | None = None
    """maxOffsetsPerTrigger; None: no limit."""
    min_offsets_per_trigger: int | None = None
    """minOffsetsPerTrigger; None: no minimum."""
    max_trigger_delay_ms: int = 15 * 60 * 1000
    """maxTriggerDelay in milliseconds."""
    min_partitions: int | None = None
    """minPartitions; None: one Spark partition per Kafka partition."""
    max_records_per_partition: int | None = None
    """maxRecordsPerPartition; None: no limit."""
    fetch_offset_retries: int = 3
    """fetchOffset.numRetries."""
    fetch_offset_retry_interval_ms: int = 1000
    """fetchOffset.retryIntervalMs."""
    fail_on_data_loss: bool = True
    """failOnDataLoss."""
    include_headers: bool = False
    """includeHeaders."""
    poll_timeout_ms: int = 120_000
    """kafkaConsumer.pollTimeoutMs."""
    num_workers: int = 1
    """numWorkers (rdk's): read only the partitions of ``worker_slot``."""
    worker_slot: int = 0
    """workerSlot (rdk's), ``0 <= worker_slot < num_workers``."""
    value_codec: Any = None
    """valueFormat=avro: the codec (``rdk.spark.registry``) decoding ``value``."""

    @property
    def bootstrap_servers(self) -> str:
        """The ``kafka.bootstrap.servers`` option."""
        return self.kafka["bootstrap.servers"]

    def owns(self, partition: int) -> bool:
        """kafka-native's worker-slot rule (``rdk.slots.owns``) for numWorkers/workerSlot.

        Args:
            partition: A partition number.

        Returns:
            Whether ``worker_slot`` reads ``partition``.
        """
        return owns(partition, self.num_workers, self.worker_slot)


@dataclass(frozen=True)
class WriteOptions:
    """Parsed writing options, made by `parse_write_options`."""

    kafka: dict[str, str]
    """librdkafka properties (the ``kafka.*`` options), ``bootstrap.servers`` included."""
    topic: str | None = None
    """The ``topic`` option; None: each row's ``topic`` column."""
    value_codec: Any = None
    """valueFormat=avro: the codec (``rdk.spark.registry``) encoding ``value``."""
    exactly_once: bool = False
    """The ``exactlyOnce`` option: a stream's rows are staged, then copied to ``topic`` in
    one Kafka transaction per micro-batch (rdk.spark._exactly_once)."""
    transactional_id_prefix: str = "rdk-spark"
    """The ``transactionalIdPrefix`` option: the start of the transactional id (and marker
    group) of the copy, ``<prefix>-<query id>``."""
    staging_topic: str | None = None
    """The ``stagingTopic`` option; None: ``<topic>.rdk-staging``."""


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
    validate_options(props, what="rdkafka option kafka.* (librdkafka)")
    return props


def split_properties(props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(global, topic) librdkafka properties: a handle given a default topic configuration
    would lose topic-level properties set on its global one, so they are kept apart."""
    glob: dict[str, str] = {}
    topic: dict[str, str] = {}
    for name, value in props.items():
        try:
            validate_topic_options({name: value})
        except ConfigError:
            glob[name] = value
        else:
            topic[name] = value
    return glob, topic


def _check_known(opts: dict[str, str], known: set[str], what: str) -> None:
    for key in opts:
        if key.startswith("kafka.") or key in known or key in _IGNORED:
            continue
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


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} appears twice")
        out[k] = v
    return out


def _json(opts: dict[str, str], key: str, example: str) -> Any:
    try:
        return json.loads(opts[key], object_pairs_hook=_no_duplicate_keys)
    except ValueError as e:
        raise ConfigError(f"rdkafka option '{_name(key)}' is not valid JSON ({e}); "
                          f"expected e.g. {example}") from None


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
               "h": 3_600_000, "d": 86_400_000}


def _duration_ms(opts: dict[str, str], key: str) -> int | None:
    """A Spark time string ('15m', '30s', '500ms'; a bare number is ms) in milliseconds."""
    if key not in opts:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", opts[key].lower())
    if not m or m.group(2) not in ("", *_TIME_UNITS):
        raise ConfigError(f"rdkafka option '{_name(key)}' must be a duration such as '15m', "
                          f"'30s' or '500ms' (units: {', '.join(_TIME_UNITS)}); got {opts[key]!r}")
    return int(int(m.group(1)) * _TIME_UNITS.get(m.group(2), 1))


_TOPIC_LEVEL = {"earliest": EARLIEST, "latest": LATEST}


def _partition_map(opts: dict[str, str], key: str, example: str,
                   check: Any, topic_level: bool = False) -> Offsets:
    """{topic: {partition: int}} from a JSON option; ``check(topic, p, value)`` judges values.
    One partition written twice ("0" and "00") is refused. With ``topic_level`` a topic may
    map to "earliest" / "latest" (any case) for all its partitions."""
    raw = opts[key].strip()
    value = _json(opts, key, example)
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"rdkafka option '{_name(key)}' must be a JSON object like "
                          f"{example}; got {raw!r}")
    out: Offsets = {}
    for topic, parts in value.items():
        _topic_ok(topic, _name(key))
        if topic_level and isinstance(parts, str) and parts.lower() in _TOPIC_LEVEL:
            check(topic, "*", _TOPIC_LEVEL[parts.lower()])
            out[topic] = _TOPIC_LEVEL[parts.lower()]
            continue
        if not isinstance(parts, dict) or not parts:
            allowed = "an object of partition to value"
            if topic_level:
                allowed += " or 'earliest' / 'latest'"
            raise ConfigError(f"rdkafka option '{_name(key)}': topic {topic!r} needs "
                              f"{allowed}, got {parts!r} (in {raw})")
        by_partition: dict[int, int] = {}
        out[topic] = by_partition
        for p, v in parts.items():
            if not re.fullmatch(r"\d+", str(p)) or int(p) > 2**31 - 1:
                raise ConfigError(f"rdkafka option '{_name(key)}': {topic!r} partition {p!r} "
                                  "is not a partition number")
            if int(p) in by_partition:
                raise ConfigError(f"rdkafka option '{_name(key)}': partition {int(p)} of "
                                  f"{topic!r} is given twice ({p!r} and another spelling)")
            if not isinstance(v, int) or isinstance(v, bool):
                raise ConfigError(f"rdkafka option '{_name(key)}': the value of {topic}-{p} "
                                  f"must be an integer, got {v!r}")
            check(topic, p, v)
            by_partition[int(p)] = v
    return out


def _parse_timestamps(opts: dict[str, str], single: str, by_partition: str) -> Timestamps | None:
    """startingTimestamp / endingTimestamp (wins) or the ...OffsetsByTimestamp JSON."""
    if single in opts:
        ms = _int(opts, single, 0)
        return Timestamps(everywhere=ms)
    if by_partition in opts:
        def check(topic: str, p: str, v: int) -> None:
            if v < 0:
                raise ConfigError(f"rdkafka option '{_name(by_partition)}': the timestamp of "
                                  f"{topic}-{p} must be >= 0 (ms since the epoch), got {v}")
        return Timestamps(by_partition=_partition_map(
            opts, by_partition, '{"topicA":{"0":1700000000000}}', check))
    return None


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
    example = '{"topicA":{"0":23,"1":-2},"topicB":"latest"}'
    if not raw.startswith("{"):
        raise ConfigError(f"rdkafka option '{_name(key)}' must be 'earliest', 'latest' or a "
                          f"JSON object like {example}; got {raw!r}")

    def check(topic: str, p: str, off: int) -> None:
        if p == "*" and off not in allow_json:
            word = "earliest" if off == EARLIEST else "latest"
            raise ConfigError(f"rdkafka option '{_name(key)}': topic {topic!r} cannot start or "
                              f"end at {word!r} here")
        if off < -2:
            raise ConfigError(f"rdkafka option '{_name(key)}': offset of {topic}-{p} must be "
                              f"an integer >= 0, -2 (earliest) or -1 (latest); got {off!r}")
        if off < 0 and off not in allow_json:
            word = "earliest" if off == EARLIEST else "latest"
            raise ConfigError(f"rdkafka option '{_name(key)}': offset {off} ({word}) of "
                              f"{topic}-{p} is not allowed here")

    return _partition_map(opts, key, example, check, topic_level=True)


def _subscription(opts: dict[str, str]
                  ) -> tuple[str, tuple[str, ...], dict[str, tuple[int, ...]], str | None]:
    """(strategy, subscribe topics, assign map, subscribePattern) from the options."""
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
        if not pattern.strip():
            raise ConfigError("rdkafka option 'subscribePattern': the pattern to subscribe to "
                              "is empty")
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"rdkafka option 'subscribePattern': {pattern!r} is not a valid "
                              f"regular expression ({e})") from None

    return strategy, topics, assignment, pattern


def _positions(opts: dict[str, str], streaming: bool, strategy: str,
               assignment: dict[str, tuple[int, ...]]
               ) -> tuple[str | Offsets | Timestamps, str | Offsets | Timestamps, str]:
    """(starting, ending, startingOffsetsByTimestampStrategy), with the built-in precedence."""
    starting: str | Offsets | Timestamps
    ending: str | Offsets | Timestamps
    if "startingoffsets" in opts:
        starting = _parse_offsets(
            opts, "startingoffsets",
            allow=("earliest", "latest") if streaming else ("earliest",),
            allow_json=(EARLIEST, LATEST) if streaming else (EARLIEST,))
    else:
        starting = "latest" if streaming else "earliest"
    # The built-in precedence: startingTimestamp > startingOffsetsByTimestamp > startingOffsets
    starting = _parse_timestamps(opts, "startingtimestamp", "startingoffsetsbytimestamp") or starting
    ending = "latest"
    for key in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
        if streaming and key in opts:
            raise ConfigError(f"rdkafka option '{_name(key)}' is for batch queries only "
                              "(a stream has no end); remove it or use spark.read")
    if "endingoffsets" in opts:
        ending = _parse_offsets(opts, "endingoffsets", allow=("latest",), allow_json=(LATEST,))
    # endingTimestamp > endingOffsetsByTimestamp > endingOffsets
    ending = _parse_timestamps(opts, "endingtimestamp", "endingoffsetsbytimestamp") or ending
    strategy_key = "startingoffsetsbytimestampstrategy"
    by_ts_strategy = opts.get(strategy_key, "error").strip().lower()
    if by_ts_strategy not in ("error", "latest"):
        raise ConfigError(f"rdkafka option '{_name(strategy_key)}' must be 'error' or 'latest', "
                          f"got {opts[strategy_key]!r}")
    for spec, option in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if isinstance(spec, Timestamps):
            spec = spec.by_partition or {}
            option += "ByTimestamp"
        if isinstance(spec, dict) and strategy == "assign":
            for t, parts in spec.items():
                if isinstance(parts, int):  # topic-level: whatever is assigned
                    if t not in assignment:
                        raise ConfigError(f"rdkafka option '{option}' names topic {t!r}, which "
                                          "option 'assign' does not assign")
                    continue
                extra = set(parts) - set(assignment.get(t, ()))
                if extra:
                    raise ConfigError(f"rdkafka option '{option}' names {t} partitions "
                                      f"{sorted(extra)} that option 'assign' does not assign")

    if isinstance(starting, dict) and isinstance(ending, dict):
        _check_start_before_end(starting, ending)
    return starting, ending, by_ts_strategy


def _check_start_before_end(starting: Offsets, ending: Offsets) -> None:
    """Explicit starting offsets after explicit ending ones are refused before any lookup."""
    for t, parts in starting.items():
        ends = ending.get(t)
        if not isinstance(parts, dict) or not isinstance(ends, dict):
            continue
        for p, off in parts.items():
            end = ends.get(p, LATEST)
            if off >= 0 and end >= 0 and off > end:
                raise ConfigError(f"rdkafka: the starting offset {off} of {t}-{p} is greater "
                                  f"than its ending offset {end} (startingOffsets/endingOffsets)")


def parse_read_options(options: Mapping[str, Any], *, streaming: bool) -> ReadOptions:
    """Check and parse reading options; ConfigError names the culprit.

    Args:
        options: The data source's options (names case-insensitive).
        streaming: Whether they are a stream source's (``readStream``) or a batch source's.

    Returns:
        The parsed `ReadOptions`.

    Raises:
        rdk.ConfigError: An option is missing, unknown, invalid, or not allowed here.
    """
    opts = _lower(options)
    what = "stream source" if streaming else "batch source"
    _check_known(opts, _READ_OPTIONS, what)
    kafka = _kafka_properties(opts, what)

    strategy, topics, assignment, pattern = _subscription(opts)
    starting, ending, by_ts_strategy = _positions(opts, streaming, strategy, assignment)
    group = _group_id(opts, kafka)
    if group is not None:
        kafka["group.id"] = group
    # One isolation level for the driver's plan and the executors' reads: the built-in
    # connector's default, read_uncommitted, unless kafka.isolation.level says otherwise.
    kafka.setdefault("isolation.level", "read_uncommitted")
    max_rows = _int(opts, "maxoffsetspertrigger", 1)
    min_rows = _int(opts, "minoffsetspertrigger", 1)
    if max_rows is not None and min_rows is not None and min_rows > max_rows:
        raise ConfigError(f"rdkafka option 'minOffsetsPerTrigger' ({min_rows}) must not be "
                          f"greater than maxOffsetsPerTrigger ({max_rows})")
    delay = _duration_ms(opts, "maxtriggerdelay")
    retries = _int(opts, "fetchoffset.numretries", 0)
    interval = _int(opts, "fetchoffset.retryintervalms", 0)

    num_workers = _int(opts, "numworkers", 1) or 1
    worker_slot = _int(opts, "workerslot", 0) or 0
    if worker_slot >= num_workers:
        raise ConfigError(f"rdkafka option 'workerSlot' must be < numWorkers ({num_workers}), "
                          f"got {worker_slot}")
    poll = _int(opts, "kafkaconsumer.polltimeoutms", 1)
    return ReadOptions(
        kafka=kafka, strategy=strategy, topics=topics, assignment=assignment, pattern=pattern,
        starting=starting, ending=ending, by_timestamp_strategy=by_ts_strategy,
        max_offsets_per_trigger=max_rows, min_offsets_per_trigger=min_rows,
        max_trigger_delay_ms=delay if delay is not None else 15 * 60 * 1000,
        min_partitions=_int(opts, "minpartitions", 1),
        max_records_per_partition=_int(opts, "maxrecordsperpartition", 1),
        fetch_offset_retries=retries if retries is not None else 3,
        fetch_offset_retry_interval_ms=interval if interval is not None else 1000,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        include_headers=_bool(opts, "includeheaders", False),
        poll_timeout_ms=poll if poll is not None else 120_000,
        num_workers=num_workers, worker_slot=worker_slot,
    )


def _group_id(opts: dict[str, str], kafka: dict[str, str]) -> str | None:
    """The handles' group.id: kafka.group.id as given (with the built-in connector's caution),
    else groupIdPrefix plus a unique suffix when groupIdPrefix is set, else none."""
    if "group.id" in kafka:
        if not kafka["group.id"].strip():
            raise ConfigError("rdkafka option 'kafka.group.id' must not be empty")
        log.warning("rdkafka: kafka.group.id=%r is used as given (use it with caution, as with "
                    "the built-in connector); rdkafka only names its handles with it: it never "
                    "joins the group nor commits offsets to it", kafka["group.id"])
        return None
    if "groupidprefix" in opts:
        prefix = opts["groupidprefix"].strip()
        if not prefix:
            raise ConfigError("rdkafka option 'groupIdPrefix' must not be empty")
        return f"{prefix}-{uuid.uuid4()}"
    return None


def parse_write_options(options: Mapping[str, Any]) -> WriteOptions:
    """Check and parse writing options (the built-in sink's: kafka.*, topic).

    Args:
        options: The data sink's options (names case-insensitive).

    Returns:
        The parsed `WriteOptions`.

    Raises:
        rdk.ConfigError: An option is missing, unknown or invalid.
    """
    opts = _lower(options)
    _check_known(opts, _WRITE_OPTIONS | _READ_OPTIONS, "sink")
    kafka = _kafka_properties(opts, "sink")
    topic = opts.get("topic")
    if topic is not None:
        _topic_ok(topic.strip(), "topic")
        topic = topic.strip()
    exactly_once = _bool(opts, "exactlyonce", False)
    prefix = opts.get("transactionalidprefix", "rdk-spark")
    staging = opts.get("stagingtopic")
    if exactly_once:
        _check_exactly_once(kafka, topic, prefix)
        if staging is not None:
            _topic_ok(staging.strip(), "stagingTopic")
            staging = staging.strip()
            if staging == topic:
                raise ConfigError("rdkafka sink: option 'stagingTopic' must name another topic "
                                  "than 'topic'")
    else:
        for name in ("transactionalidprefix", "stagingtopic"):
            if name in opts:
                raise ConfigError(f"rdkafka sink: option '{_SPELLING[name]}' needs option "
                                  "'exactlyOnce' set to 'true'")
    return WriteOptions(kafka=kafka, topic=topic, exactly_once=exactly_once,
                        transactional_id_prefix=prefix, staging_topic=staging)


def _check_exactly_once(kafka: Mapping[str, str], topic: str | None, prefix: str) -> None:
    """What the exactly-once sink derives itself, or cannot work with."""
    if topic is None:
        raise ConfigError("rdkafka sink: option 'exactlyOnce' needs the 'topic' option (one "
                          "output topic, whose transactions the sink commits)")
    if not prefix.strip() or prefix != prefix.strip() or any(c.isspace() for c in prefix):
        raise ConfigError(f"rdkafka sink: option 'transactionalIdPrefix' {prefix!r} must be "
                          "non-empty and without whitespace")
    if "transactional.id" in kafka:
        raise ConfigError("rdkafka sink: option 'kafka.transactional.id' is not allowed with "
                          "'exactlyOnce': the sink derives it from 'transactionalIdPrefix' "
                          "and the query's id")
    if kafka.get("enable.idempotence", "true").lower() in ("false", "0"):
        raise ConfigError("rdkafka sink: 'exactlyOnce' needs an idempotent producer; "
                          "remove option 'kafka.enable.idempotence=false'")


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
