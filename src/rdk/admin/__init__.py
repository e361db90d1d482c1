"""rdk.Admin: topic admin, metadata, offsets lookup and group admin (group configs, deleting
and resetting share groups) over librdkafka's admin APIs.

One module per area, each a base of ``Admin``: ``_topics`` (create/delete topics, partitions,
listing), ``_offsets`` (watermarks, offsets for times), ``_groups`` (group configs, share
groups); ``_base`` holds the request plumbing they share."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from .. import _binding
from .._binding import PartitionMetadata, TopicMetadata
from ..validate import check_broker, check_logger, check_options
from ._base import MAX_TIMEOUT, check_group_id  # noqa: F401  (importable from rdk.admin as before)
from ._groups import _GroupsAdmin
from ._offsets import _OffsetsAdmin
from ._topics import _TopicsAdmin

__all__ = ["Admin", "PartitionMetadata", "TopicMetadata"]


class Admin(_TopicsAdmin, _OffsetsAdmin, _GroupsAdmin):
    """Topic admin, metadata and group admin: ``Admin(broker, driver_options=None, *,
    oauth_cb=None, logger=None)``.

    librdkafka's log lines go to ``logger`` (default: the ``rdk`` logger), as for Producer and
    Consumer.

    ``oauth_cb(sasl.oauthbearer.config) -> (token, expiry_epoch_seconds[, principal[,
    extensions]])`` supplies SASL/OAUTHBEARER tokens (confluent-kafka's name and shape; it runs
    on rdk's event thread). A call that waits for a broker raises the KafkaError of an
    authentication or TLS failure (``_AUTHENTICATION``, ``_SSL``...) as soon as librdkafka
    reports one, naming the broker, instead of waiting out its timeout.
    Usable as a context manager; ``close()`` is idempotent.

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed).
        driver_options: librdkafka global properties, verbatim.
        oauth_cb: SASL/OAUTHBEARER token source (see above); None: librdkafka's own.
        logger: Logger for librdkafka's log lines. None: the ``rdk`` logger.

    Raises:
        TypeError: An argument of the wrong type (the message names it).
        ValueError: A malformed ``broker``.
        rdk.ConfigError: A property librdkafka refuses.
    """

    def __init__(self, broker: str, driver_options: Mapping[str, Any] | None = None, *,
                 oauth_cb: Callable[[str], Any] | None = None,
                 logger: logging.Logger | None = None) -> None:
        check_broker(broker)
        # a metadata lookup must not create the topic it asks about
        self._props = {"bootstrap.servers": broker, "allow.auto.create.topics": False,
                       **check_options(driver_options, "driver_options")}
        self._oauth_cb = oauth_cb
        self._logger = check_logger(logger)
        self._client = _binding.Client("producer", self._props, oauth_cb=oauth_cb, logger=logger)
        self._fetch_client = None

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
