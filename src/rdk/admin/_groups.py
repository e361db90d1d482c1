"""rdk.Admin's group calls: group configs (alter, describe), deleting and resetting share
groups."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import _binding
from .._binding import ERROR_CODES, ffi, lib
from ..errors import KafkaError
from ._base import _AdminBase, _check_timeout, check_group_id, check_mapping

_RESOURCES = "rd_kafka_ConfigResource_t *[1]"


class _GroupsAdmin(_AdminBase):
    """rdk.Admin's group calls (its docs are rdk.Admin's)."""

    def alter_group_config(self, group_id: str, configs: Mapping[str, Any], *,
                           timeout: float = 30.0) -> None:
        """Set group configuration properties, ``{name: value}`` (a value of None removes the
        group's own setting, back to the broker's default): IncrementalAlterConfigs on the
        GROUP resource. E.g. ``{"share.auto.offset.reset": "earliest"}`` or
        ``{"share.record.lock.duration.ms": 5000}`` for a share group (within the broker's
        ``group.share.min/max.record.lock.duration.ms``). The group need not exist yet.
        Raises KafkaError with the broker's text (``INVALID_CONFIG`` for an unknown name or a
        value out of bounds).

        Args:
            group_id: The group's id.
            configs: ``{name: value}``; a value of None removes the group's own setting.
            timeout: Seconds to wait for the broker.

        Raises:
            rdk.KafkaError: The broker refused (e.g. ``INVALID_CONFIG``), ``_TIMED_OUT``, or an
                authentication failure.
            TypeError: ``group_id`` is not a str, ``configs`` not a dict, a name not a
                non-empty str.
            ValueError: An empty ``group_id`` or one librdkafka would rewrite, a negative
                ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        check_mapping(configs, "alter_group_config: configs must be a dict of name to value")
        self._alter_group(group_id, configs, timeout, f"alter_group_config of group {group_id!r}")

    def _alter_group(self, group_id: str, configs: Mapping[str, Any], timeout: float,
                     context: str) -> None:
        if not configs:
            return
        res = lib.rd_kafka_ConfigResource_new(lib.RD_KAFKA_RESOURCE_GROUP, group_id.encode())
        try:
            _add_configs(res, configs, context)
        except BaseException:
            lib.rd_kafka_ConfigResource_destroy(res)
            raise
        with self._one_object_request(lib.rd_kafka_IncrementalAlterConfigs, _RESOURCES, res,
                                      lib.rd_kafka_ConfigResource_destroy, timeout, context) as ev:
            for resource in _result_items(lib.rd_kafka_IncrementalAlterConfigs_result_resources,
                                          lib.rd_kafka_event_IncrementalAlterConfigs_result(ev)):
                _raise_resource_error(resource, context)

    def describe_group_config(self, group_id: str, *, timeout: float = 30.0) -> dict[str, str]:
        """The group's configuration, ``{name: value}`` (DescribeConfigs on the GROUP
        resource): the group's own settings and the broker's defaults for the rest, e.g.
        ``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
        ``share.delivery.count.limit``. A group without settings of its own that is not a
        consumer group the coordinator knows raises ``GROUP_ID_NOT_FOUND`` instead of giving
        the broker's defaults as if they were the group's. librdkafka 2.15 cannot see share
        groups (no ShareGroupDescribe): a share group counts as known by its settings, which
        rdk's ShareConsumer always gives it (``share.auto.offset.reset``); one that only
        other clients joined, without settings of its own, looks missing too.

        Args:
            group_id: The group's id.
            timeout: Seconds to wait for the broker.

        Returns:
            ``{name: value}``, sorted by name.

        Raises:
            rdk.KafkaError: ``GROUP_ID_NOT_FOUND`` (see above), the broker refused,
                ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id`` or one librdkafka would rewrite, a negative
                ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        context = f"describe_group_config of group {group_id!r}"
        entries = self._group_config(group_id, timeout, context)
        if not any(own for _, own in entries.values()) and \
                not self._group_exists(group_id, timeout, context):
            raise KafkaError(ERROR_CODES["GROUP_ID_NOT_FOUND"],
                             "no such group, and no configuration of its own (every value "
                             "would be the broker's default)", context=context)
        return {name: value for name, (value, _) in entries.items()}

    def _group_config(self, group_id: str, timeout: float,
                      context: str) -> dict[str, tuple[str, bool]]:
        """``{name: (value, whether it is the group's own setting)}``, sorted by name."""
        res = lib.rd_kafka_ConfigResource_new(lib.RD_KAFKA_RESOURCE_GROUP, group_id.encode())
        with self._one_object_request(lib.rd_kafka_DescribeConfigs, _RESOURCES, res,
                                      lib.rd_kafka_ConfigResource_destroy, timeout, context) as ev:
            out: dict[str, tuple[str, bool]] = {}
            for resource in _result_items(lib.rd_kafka_DescribeConfigs_result_resources,
                                          lib.rd_kafka_event_DescribeConfigs_result(ev)):
                _raise_resource_error(resource, context)
                for entry in _result_items(lib.rd_kafka_ConfigResource_configs, resource):
                    value = lib.rd_kafka_ConfigEntry_value(entry)
                    if value != ffi.NULL:
                        out[ffi.string(lib.rd_kafka_ConfigEntry_name(entry)).decode()] = (
                            ffi.string(value).decode(errors="replace"),
                            not lib.rd_kafka_ConfigEntry_is_default(entry))
            return dict(sorted(out.items()))

    def delete_share_group(self, group_id: str, *, missing_ok: bool = False,
                           timeout: float = 30.0) -> None:
        """Delete a share group and its progress (DeleteGroups, which Kafka 4.x applies to
        share groups too; any other group kind is deleted the same way). The group must have
        no members: ``NON_EMPTY_GROUP`` otherwise. ``GROUP_ID_NOT_FOUND`` unless
        ``missing_ok``. The group's configuration (``alter_group_config``) is kept.

        Args:
            group_id: The group's id.
            missing_ok: Whether a group that does not exist is fine.
            timeout: Seconds to wait for the broker.

        Raises:
            rdk.KafkaError: ``NON_EMPTY_GROUP``, ``GROUP_ID_NOT_FOUND`` (unless
                ``missing_ok``), ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id`` or one librdkafka would rewrite, a negative
                ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        self._delete_group(group_id, missing_ok, timeout, f"delete_share_group of group {group_id!r}")

    def _delete_group(self, group_id: str, missing_ok: bool, timeout: float,
                      context: str) -> bool:
        """DeleteGroups of ``group_id``; whether the group existed (False only with
        ``missing_ok``)."""
        return _until_coordinator_answers(
            lambda: self._delete_group_once(group_id, missing_ok, timeout, context), timeout)

    def _delete_group_once(self, group_id: str, missing_ok: bool, timeout: float,
                           context: str) -> bool:
        request = lib.rd_kafka_DeleteGroup_new(group_id.encode())
        with self._one_object_request(lib.rd_kafka_DeleteGroups, "rd_kafka_DeleteGroup_t *[1]",
                                      request, lib.rd_kafka_DeleteGroup_destroy, timeout,
                                      context) as ev:
            for group in _result_items(lib.rd_kafka_DeleteGroups_result_groups,
                                       lib.rd_kafka_event_DeleteGroups_result(ev)):
                error = lib.rd_kafka_group_result_error(group)
                if error == ffi.NULL:
                    continue
                code = lib.rd_kafka_error_code(error)
                if missing_ok and code == ERROR_CODES["GROUP_ID_NOT_FOUND"]:
                    return False
                text = ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace")
                raise KafkaError(code, text, context=context)
        return True

    def reset_share_group(self, group_id: str, to: str, *, timeout: float = 30.0) -> None:
        """Start share group ``group_id`` over from ``to``: "earliest", "latest" or
        "by_duration:<ISO-8601 duration>" (e.g. "by_duration:PT1H"). librdkafka 2.15 has no
        AlterShareGroupOffsets, so this sets the group's ``share.auto.offset.reset`` and then
        deletes the group's progress (DeleteGroups, which needs a group without members; a
        group that does not exist is fine): the next member starts every partition there.
        A specific offset per partition is not possible this way.

        All or nothing: a value the broker refuses (``INVALID_CONFIG``) is refused before
        anything changes, and when the deletion fails (``NON_EMPTY_GROUP``...) the group's
        previous ``share.auto.offset.reset`` is put back; its progress is untouched.

        Args:
            group_id: The share group's id.
            to: ``"earliest"``, ``"latest"`` or ``"by_duration:<ISO-8601 duration>"``.
            timeout: Seconds to wait for each request (up to four).

        Raises:
            rdk.KafkaError: ``NON_EMPTY_GROUP`` (the group has members), ``INVALID_CONFIG``
                (a ``to`` the broker refuses), ``_TIMED_OUT``, or an authentication failure;
                its context names ``reset_share_group``.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id`` or one librdkafka would rewrite, a bad ``to``,
                a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        if not isinstance(to, str) or not (to in ("earliest", "latest")
                                           or to.startswith("by_duration:")):
            raise ValueError("reset_share_group: to must be 'earliest', 'latest' or "
                             f"'by_duration:<ISO-8601 duration>', got {to!r}")
        timeout = _check_timeout(timeout)
        context = f"reset_share_group of group {group_id!r} to {to!r}"
        value, own = self._group_config(group_id, timeout, context).get(
            _RESET, ("latest", False))
        before = value if own else None  # None: the broker's default (no setting of its own)
        self._alter_group(group_id, {_RESET: to}, timeout, context)  # a refused value: no change
        try:
            self._delete_group(group_id, True, timeout, context)
        except BaseException:
            try:
                self._alter_group(group_id, {_RESET: before}, timeout, context)
            except Exception as e:  # noqa: BLE001 - the first error is the one raised
                self._log_warning("%s: could not put share.auto.offset.reset back to %r: %s",
                                  context, before, e)
            raise

    def _group_exists(self, group_id: str, timeout: float, context: str) -> bool:
        """Whether the coordinator knows ``group_id`` as a consumer group (classic or
        KIP-848: not ``Dead``). librdkafka 2.15 has no ShareGroupDescribe: its
        DescribeConsumerGroups reports every share group as ``Dead``. Retries while the
        coordinator moves or loads (a new cluster's first group request)."""
        return _until_coordinator_answers(
            lambda: self._describe_group_state(group_id, timeout, context) != b"Dead", timeout)

    def _describe_group_state(self, group_id: str, timeout: float, context: str) -> bytes:
        name = ffi.new("char[]", group_id.encode())
        groups = ffi.new("const char *[1]", [name])
        with self._admin_result(lambda opts, q: lib.rd_kafka_DescribeConsumerGroups(
                self._rk, groups, 1, opts, q), timeout, context) as ev:
            for group in _result_items(lib.rd_kafka_DescribeConsumerGroups_result_groups,
                                       lib.rd_kafka_event_DescribeConsumerGroups_result(ev)):
                error = lib.rd_kafka_ConsumerGroupDescription_error(group)
                if error != ffi.NULL:
                    code = lib.rd_kafka_error_code(error)
                    if code == ERROR_CODES["GROUP_ID_NOT_FOUND"]:
                        return b"Dead"
                    text = ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace")
                    raise KafkaError(code, text, context=context)
                state = lib.rd_kafka_ConsumerGroupDescription_state(group)
                return bytes(ffi.string(lib.rd_kafka_consumer_group_state_name(state)))
        return b"Dead"

    def _log_warning(self, msg: str, *args: Any) -> None:
        (self._logger or logging.getLogger("rdk")).warning(msg, *args)


_RESET = "share.auto.offset.reset"
_COORDINATOR_MOVING = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                      "COORDINATOR_NOT_AVAILABLE")


def _until_coordinator_answers(call: Callable[[], Any], timeout: float) -> Any:
    """``call()``, again while the group's coordinator moves or loads (a new cluster's first
    group request gets NOT_COORDINATOR), for up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except KafkaError as e:
            if e.name not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
        time.sleep(0.1)  # a retry interval: librdkafka looks the coordinator up meanwhile


def _raise_resource_error(resource: Any, context: str) -> None:
    err = lib.rd_kafka_ConfigResource_error(resource)
    if err:
        msg = lib.rd_kafka_ConfigResource_error_string(resource)
        text = ffi.string(msg).decode(errors="replace") if msg != ffi.NULL else None
        raise KafkaError(err, text, context=context)


def _add_configs(res: Any, configs: Mapping[str, Any], context: str) -> None:
    """Add each ``{name: value}`` to ConfigResource ``res`` as an incremental SET (DELETE for None)."""
    for name, value in configs.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"alter_group_config: config names must be non-empty str, "
                            f"got {name!r}")
        if value is None:
            op, text = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE, ffi.NULL
        else:
            op = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET
            text = _binding.conf_value(name, value).encode()
        error = lib.rd_kafka_ConfigResource_add_incremental_config(res, name.encode(), op, text)
        _binding.check_error(error, f"{context}: {name!r}")


def _result_items(items_of: Callable[[Any, Any], Any], result: Any) -> list:
    """``items_of(result, size_t *)``'s array as a list (resources, groups, config entries)."""
    cnt = ffi.new("size_t *")
    items = items_of(result, cnt)
    return [items[i] for i in range(cnt[0])]
