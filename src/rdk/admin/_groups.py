"""rdk.Admin's group calls: group configs (alter, describe), deleting and resetting share
groups."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .._binding import ERROR_CODES, conf_value
from .._binding import admin as _admin
from ..errors import KafkaError
from ._base import _AdminBase, _check_timeout, check_group_id, check_mapping


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
        value out of bounds). Returns once the broker's DescribeConfigs shows the change (it
        applies it a moment after the controller acknowledges it; at most 5 s are waited).

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
        """IncrementalAlterConfigs, then until the broker's DescribeConfigs shows it (up to
        ``timeout`` or 5 s, the smaller; then a warning). The controller acknowledges the
        change before the broker has applied its record: a describe at once could still see
        the value before (seen for ``share.auto.offset.reset`` put back by
        ``reset_share_group``)."""
        if not configs:
            return
        _admin.alter_group_config(self._client, group_id, configs, timeout, context)
        wanted = {name: None if value is None else conf_value(name, value)
                  for name, value in configs.items()}
        deadline = time.monotonic() + min(timeout, _APPLY_WAIT)
        while True:
            try:
                seen = self._group_config(group_id, max(0.0, deadline - time.monotonic()), context)
            except KafkaError:  # the change is made; not seeing it is not a failure of it
                return
            if all((seen[n][0] if n in seen and seen[n][1] else None) == v
                   for n, v in wanted.items()):
                return
            if time.monotonic() >= deadline:
                self._log_warning("%s: the broker still describes %s after %.0f s", context,
                                  {n: seen.get(n) for n in wanted}, min(timeout, _APPLY_WAIT))
                return
            time.sleep(0.02)  # a poll interval: the broker applies the record meanwhile

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
        return _admin.describe_group_config(self._client, group_id, timeout, context)

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
            lambda: _admin.delete_group(self._client, group_id, missing_ok, timeout, context),
            timeout)

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
            lambda: _admin.group_state(self._client, group_id, timeout, context) != b"Dead",
            timeout)

    def _log_warning(self, msg: str, *args: Any) -> None:
        (self._logger or logging.getLogger("rdk")).warning(msg, *args)


_RESET = "share.auto.offset.reset"
_APPLY_WAIT = 5.0  # seconds an altered group config may take to show in DescribeConfigs
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

