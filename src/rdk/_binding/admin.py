"""librdkafka's admin API: the only caller of the ``rd_kafka_*Admin*``, topic, config
resource and group request calls.

Each function makes one admin request on a :class:`~rdk._binding.Client` and waits for its
result event in short polls, so an authentication failure ends the wait at once. Errors are
KafkaError with librdkafka's code and text, naming the request (``context``) and, where one
failed alone, the topic or resource.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import KafkaError
from . import ERROR_CODES, Client, check, check_error, conf_value, ffi, lib

__all__ = [
    "alter_group_config",
    "create_partitions",
    "create_topics",
    "delete_group",
    "delete_topics",
    "describe_group_config",
    "group_state",
]

_AUTH_CHECK_MS = 500  # admin waits look for an authentication failure this often
_GROUP_ID_NOT_FOUND = ERROR_CODES["GROUP_ID_NOT_FOUND"]


def _text(ptr: Any) -> str | None:
    return ffi.string(ptr).decode(errors="replace") if ptr != ffi.NULL else None


def _run(client: Client, call: Callable[[Any, Any, Any], None], timeout: float) -> Any:
    """Make an admin request with ``call(rk, options, queue)``; its result event (the caller
    destroys it), or KafkaError _TIMED_OUT."""
    client.ensure_open()
    rk = client.rk
    q = lib.rd_kafka_queue_new(rk)
    opts = lib.rd_kafka_AdminOptions_new(rk, lib.RD_KAFKA_ADMIN_OP_ANY)
    try:
        errstr = ffi.new("char[]", 256)
        lib.rd_kafka_AdminOptions_set_request_timeout(opts, int(timeout * 1000), errstr, 256)
        lib.rd_kafka_AdminOptions_set_operation_timeout(opts, int(timeout * 1000), errstr, 256)
        call(rk, opts, q)
        deadline = time.monotonic() + timeout + 2.0
        while True:
            left = deadline - time.monotonic()
            ev = lib.rd_kafka_queue_poll(q, max(0, min(_AUTH_CHECK_MS, int(left * 1000))))
            if ev != ffi.NULL:
                if not lib.rd_kafka_event_error(ev):
                    client.auth_failure = None  # a broker answered
                return ev
            client.raise_auth_failure("admin request")
            if left <= 0:
                raise KafkaError(ERROR_CODES["_TIMED_OUT"], context="admin request")
    finally:
        lib.rd_kafka_AdminOptions_destroy(opts)
        lib.rd_kafka_queue_destroy(q)


@contextlib.contextmanager
def _result(client: Client, call: Callable[[Any, Any, Any], None], timeout: float,
            context: str) -> Iterator[Any]:
    """The result event of an admin request, after raising the whole request's error;
    freed on leaving."""
    ev = _run(client, call, timeout)
    try:
        err = lib.rd_kafka_event_error(ev)
        if err:
            raise KafkaError(err, _text(lib.rd_kafka_event_error_string(ev)), context=context)
        yield ev
    finally:
        lib.rd_kafka_event_destroy(ev)


def _items(items_of: Callable[[Any, Any], Any], result: Any) -> list:
    """``items_of(result, size_t *)``'s array as a list (resources, groups, topics...)."""
    cnt = ffi.new("size_t *")
    items = items_of(result, cnt)
    return [items[i] for i in range(cnt[0])]


# ---- topics ----------------------------------------------------------------------------


def _topic_request(client: Client, request: Callable[..., None], array_type: str,
                   result_of: Callable[[Any], Any], topics_of: Callable[[Any, Any], Any],
                   objects: list, ok: set[int], timeout: float, context: str) -> None:
    """One CreateTopics / DeleteTopics / CreatePartitions request of ``objects`` (the caller
    frees them); KafkaError for the first topic whose error is not in ``ok``."""
    array = ffi.new(array_type, objects)
    with _result(client, lambda rk, o, q: request(rk, array, len(objects), o, q), timeout,
                 context) as ev:
        for t in _items(topics_of, result_of(ev)):
            terr = lib.rd_kafka_topic_result_error(t)
            if terr and terr not in ok:
                name = ffi.string(lib.rd_kafka_topic_result_name(t)).decode()
                raise KafkaError(terr, _text(lib.rd_kafka_topic_result_error_string(t)),
                                 context=f"topic {name!r}")


def create_topics(client: Client, specs: Sequence[tuple[str, int, int, Mapping[str, Any]]],
                  exist_ok: bool, timeout: float) -> None:
    """CreateTopics of (name, partitions, replication, config) each (-1: the broker's
    default); ValueError for a spec librdkafka refuses, KafkaError for the first topic that
    failed (``TOPIC_ALREADY_EXISTS`` is fine with ``exist_ok``)."""
    errstr = ffi.new("char[]", 512)
    new_topics = []
    try:
        for name, partitions, replication, config in specs:
            nt = lib.rd_kafka_NewTopic_new(name.encode(), partitions, replication, errstr, 512)
            if nt == ffi.NULL:
                raise ValueError(f"topic {name!r}: {ffi.string(errstr).decode()}")
            new_topics.append(nt)
            for key, value in config.items():
                check(lib.rd_kafka_NewTopic_set_config(
                    nt, str(key).encode(), conf_value(key, value).encode()),
                    f"topic {name!r} config {key!r}")
        ok = {ERROR_CODES["TOPIC_ALREADY_EXISTS"]} if exist_ok else set()
        _topic_request(client, lib.rd_kafka_CreateTopics, "rd_kafka_NewTopic_t *[]",
                       lib.rd_kafka_event_CreateTopics_result,
                       lib.rd_kafka_CreateTopics_result_topics, new_topics, ok, timeout,
                       f"create_topics of {[s[0] for s in specs]!r}")
    finally:
        for nt in new_topics:
            lib.rd_kafka_NewTopic_destroy(nt)


def delete_topics(client: Client, names: Sequence[str], timeout: float) -> None:
    """DeleteTopics of ``names``; KafkaError naming the first topic that failed."""
    dels = [lib.rd_kafka_DeleteTopic_new(n.encode()) for n in names]
    try:
        _topic_request(client, lib.rd_kafka_DeleteTopics, "rd_kafka_DeleteTopic_t *[]",
                       lib.rd_kafka_event_DeleteTopics_result,
                       lib.rd_kafka_DeleteTopics_result_topics, dels, set(), timeout,
                       f"delete_topics of {list(names)!r}")
    finally:
        for d in dels:
            lib.rd_kafka_DeleteTopic_destroy(d)


def create_partitions(client: Client, totals: Mapping[str, int], timeout: float) -> None:
    """CreatePartitions to ``{topic: new total}``; KafkaError naming the first that failed."""
    errstr = ffi.new("char[]", 512)
    requests = []
    try:
        for name, total in totals.items():
            np = lib.rd_kafka_NewPartitions_new(name.encode(), total, errstr, 512)
            if np == ffi.NULL:
                raise ValueError(f"topic {name!r}: {ffi.string(errstr).decode()}")
            requests.append(np)
        if requests:
            _topic_request(client, lib.rd_kafka_CreatePartitions,
                           "rd_kafka_NewPartitions_t *[]",
                           lib.rd_kafka_event_CreatePartitions_result,
                           lib.rd_kafka_CreatePartitions_result_topics, requests, set(),
                           timeout, f"create_partitions of {list(totals)!r}")
    finally:
        for np in requests:
            lib.rd_kafka_NewPartitions_destroy(np)


# ---- groups ----------------------------------------------------------------------------


@contextlib.contextmanager
def _group_resource_request(client: Client, request: Callable[..., None], res: Any,
                            timeout: float, context: str) -> Iterator[Any]:
    """``request`` (IncrementalAlterConfigs / DescribeConfigs) of ConfigResource ``res``:
    its result event; ``res`` is freed on leaving, whatever happens."""
    try:
        array = ffi.new("rd_kafka_ConfigResource_t *[1]", [res])
        with _result(client, lambda rk, o, q: request(rk, array, 1, o, q), timeout,
                     context) as ev:
            yield ev
    finally:
        lib.rd_kafka_ConfigResource_destroy(res)


def _raise_resource_error(resource: Any, context: str) -> None:
    err = lib.rd_kafka_ConfigResource_error(resource)
    if err:
        raise KafkaError(err, _text(lib.rd_kafka_ConfigResource_error_string(resource)),
                         context=context)


def _add_configs(res: Any, configs: Mapping[str, Any], context: str) -> None:
    """Add each ``{name: value}`` to ``res`` as an incremental SET (DELETE for None)."""
    for name, value in configs.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"alter_group_config: config names must be non-empty str, "
                            f"got {name!r}")
        if value is None:
            op, text = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE, ffi.NULL
        else:
            op = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET
            text = conf_value(name, value).encode()
        error = lib.rd_kafka_ConfigResource_add_incremental_config(res, name.encode(), op, text)
        check_error(error, f"{context}: {name!r}")


def _group_resource(group_id: str) -> Any:
    return lib.rd_kafka_ConfigResource_new(lib.RD_KAFKA_RESOURCE_GROUP, group_id.encode())


def alter_group_config(client: Client, group_id: str, configs: Mapping[str, Any],
                       timeout: float, context: str) -> None:
    """IncrementalAlterConfigs on the GROUP resource: SET each value, DELETE each None."""
    res = _group_resource(group_id)
    try:
        _add_configs(res, configs, context)
    except BaseException:
        lib.rd_kafka_ConfigResource_destroy(res)
        raise
    with _group_resource_request(client, lib.rd_kafka_IncrementalAlterConfigs, res, timeout,
                                 context) as ev:
        for resource in _items(lib.rd_kafka_IncrementalAlterConfigs_result_resources,
                               lib.rd_kafka_event_IncrementalAlterConfigs_result(ev)):
            _raise_resource_error(resource, context)


#: rd_kafka_ConfigSource_t's RD_KAFKA_CONFIG_SOURCE_GROUP_CONFIG: a group's own setting
_GROUP_CONFIG_SOURCE = 8


def describe_group_config(client: Client, group_id: str, timeout: float,
                          context: str) -> dict[str, tuple[str, bool]]:
    """DescribeConfigs on the GROUP resource: ``{name: (value, whether it is the group's own
    setting)}``, sorted by name. Own: the source is the group's config, not a broker's
    (a broker's static ``group.share.heartbeat.interval.ms`` is not "default" either)."""
    res = _group_resource(group_id)
    with _group_resource_request(client, lib.rd_kafka_DescribeConfigs, res, timeout,
                                 context) as ev:
        out: dict[str, tuple[str, bool]] = {}
        for resource in _items(lib.rd_kafka_DescribeConfigs_result_resources,
                               lib.rd_kafka_event_DescribeConfigs_result(ev)):
            _raise_resource_error(resource, context)
            for entry in _items(lib.rd_kafka_ConfigResource_configs, resource):
                value = lib.rd_kafka_ConfigEntry_value(entry)
                if value != ffi.NULL:
                    out[ffi.string(lib.rd_kafka_ConfigEntry_name(entry)).decode()] = (
                        ffi.string(value).decode(errors="replace"),
                        lib.rd_kafka_ConfigEntry_source(entry) == _GROUP_CONFIG_SOURCE)
        return dict(sorted(out.items()))


def _group_error(error: Any, missing_ok: bool, context: str) -> bool:
    """For a group's ``rd_kafka_error_t *`` (not freed: the result owns it): False if the
    group does not exist and ``missing_ok``, else KafkaError; True for NULL."""
    if error == ffi.NULL:
        return True
    code = lib.rd_kafka_error_code(error)
    if missing_ok and code == _GROUP_ID_NOT_FOUND:
        return False
    raise KafkaError(code, _text(lib.rd_kafka_error_string(error)), context=context)


def delete_group(client: Client, group_id: str, missing_ok: bool, timeout: float,
                 context: str) -> bool:
    """DeleteGroups of ``group_id``: whether it existed (False only with ``missing_ok``)."""
    request = lib.rd_kafka_DeleteGroup_new(group_id.encode())
    try:
        array = ffi.new("rd_kafka_DeleteGroup_t *[1]", [request])
        with _result(client, lambda rk, o, q: lib.rd_kafka_DeleteGroups(rk, array, 1, o, q),
                     timeout, context) as ev:
            for group in _items(lib.rd_kafka_DeleteGroups_result_groups,
                                lib.rd_kafka_event_DeleteGroups_result(ev)):
                if not _group_error(lib.rd_kafka_group_result_error(group), missing_ok,
                                    context):
                    return False
    finally:
        lib.rd_kafka_DeleteGroup_destroy(request)
    return True


def group_state(client: Client, group_id: str, timeout: float, context: str) -> bytes:
    """DescribeConsumerGroups of ``group_id``: its state's name (``b"Stable"``...;
    ``b"Dead"`` for a group the coordinator does not know)."""
    name = ffi.new("char[]", group_id.encode())
    groups = ffi.new("const char *[1]", [name])
    with _result(client, lambda rk, o, q: lib.rd_kafka_DescribeConsumerGroups(
            rk, groups, 1, o, q), timeout, context) as ev:
        for group in _items(lib.rd_kafka_DescribeConsumerGroups_result_groups,
                            lib.rd_kafka_event_DescribeConsumerGroups_result(ev)):
            if not _group_error(lib.rd_kafka_ConsumerGroupDescription_error(group), True,
                                context):
                return b"Dead"
            state = lib.rd_kafka_ConsumerGroupDescription_state(group)
            return bytes(ffi.string(lib.rd_kafka_consumer_group_state_name(state)))
    return b"Dead"
