"""The share group prepared with the Admin API before the handle is made
(``rdk._binding.share`` makes, serves and closes the ``rd_kafka_share_t`` handle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._config import ShareConfig

__all__ = ["METADATA_TIMEOUT", "prepare_group"]

METADATA_TIMEOUT = 10.0  # start(): seconds to learn the topics and set the group's config
RESET = "share.auto.offset.reset"
DEFAULT_LOCK_SECONDS = 30.0  # Kafka's group.share.record.lock.duration.ms, if unreadable


def prepare_group(config: ShareConfig) -> float:
    """Every topic exists; the group's share.auto.offset.reset is start_offset (None: kept as
    it is, with a warning when start_offset replaces a value of the group's own). Returns
    the group's acquisition lock in seconds (``share.record.lock.duration.ms``)."""
    from ..admin import Admin

    context = f"ShareConsumer of group {config.group_id!r}"
    with Admin(config.broker, config.admin_options()) as admin:
        for topic in config.topics:
            admin.partition_count(topic, METADATA_TIMEOUT)
        group_config = admin._group_config(config.group_id, METADATA_TIMEOUT, context)
        current, own = group_config.get(RESET, ("latest", False))
        wanted = config.start_offset
        if wanted is not None and wanted != current and own:
            # e.g. Admin.reset_share_group(g, "earliest") undone by this member
            config.logger.warning(
                "%s: start_offset=%r replaces the group's share.auto.offset.reset %r "
                "(set by Admin.reset_share_group, alter_group_config or another member); "
                "start_offset=None keeps the group's setting", context, wanted, current)
        if (wanted or current) != current or not own:
            # None on a group without a setting of its own: the broker's default made the
            # group's, so that describe_group_config knows the group (see there)
            admin._alter_group(config.group_id, {RESET: wanted or current}, METADATA_TIMEOUT,
                               context)
    try:
        return int(group_config["share.record.lock.duration.ms"][0]) / 1000
    except (KeyError, ValueError):
        return DEFAULT_LOCK_SECONDS
