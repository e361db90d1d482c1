"""Where progress is kept: the OffsetStore protocol, offset files, Kafka's group coordinator."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .. import _binding
from .._binding.partitions import commit as commit_offsets
from .._binding.partitions import committed as partitions_committed
from ..errors import KafkaError
from ..validate import check_broker, check_group_id, check_int, check_options, check_topic_name, check_wait
from ._files import OffsetFileWriter, ensure_directory
from ._format import (
    MAX_OFFSET,
    NAME_MAX,
    SUFFIX,
    _check_partition,
    check_topic_fits,
    offset_file_name,
    read_offset_file,
)


@runtime_checkable
class OffsetStore(Protocol):
    """Keeps a consumer's progress: the last processed offset per partition.

    Optional hooks a Consumer calls when present: ``bind(topic=, broker=, driver_options=,
    logger=)`` before the first ``read`` and ``close()`` when it stops. ``commit`` is called
    from one thread at a time (the consumer's committer thread), never concurrently.
    """

    def read(self, partitions: Sequence[int]) -> dict[int, int]:
        """``{partition: last_processed_offset}`` for the partitions that have one.

        Args:
            partitions: The partitions asked about: ints, or ``(topic, partition)`` keys for
                a consumer of several topics.

        Returns:
            The last processed offset of each partition that has stored progress.
        """
        ...

    def commit(self, offsets: Mapping[int, int]) -> None:
        """Durably store ``{partition: last_processed_offset}``.

        Args:
            offsets: The last processed offset per partition (only those that changed).
        """
        ...


class FileOffsetStore:
    """kafka-native's offset files for one topic in ``directory`` (the Consumer's default).

    Commits keep one hidden temp file per partition between them and swap it with the
    offset file (see ``OffsetFileWriter`` in ``rdk.offsets._files``): no file is created or
    deleted per commit, which is most of a commit's cost on ext4. :meth:`close` removes them.

    Args:
        directory: The offset directory, created if missing.
        topic: A legal Kafka topic name short enough for offset file names.

    Raises:
        TypeError: ``directory`` is not a str or path, ``topic`` not a str.
        ValueError: An illegal or too long topic name, an empty ``directory``.
        rdk.OffsetFileError: ``directory`` is not a directory, or not writable.
    """

    def __init__(self, directory: str | os.PathLike, topic: str) -> None:
        self.topic = check_topic_fits(topic)
        self.directory = ensure_directory(directory)
        #: since creation: commits (flushes), offset files written, fsync/syncfs calls made
        self.flushes = self.files_written = self.sync_calls = 0
        """Counters since creation: ``flushes`` (commits), ``files_written`` (offset files
        written) and ``sync_calls`` (``fsync``/``syncfs`` calls made)."""
        self._writer = OffsetFileWriter(self.directory, self.topic)

    def read(self, partitions: Sequence[int]) -> dict[int, int]:
        """One directory scan, then only the files that exist are opened.

        Args:
            partitions: The partitions asked about.

        Returns:
            ``{partition: last processed offset}`` of the partitions that have a file.

        Raises:
            rdk.OffsetFileError: An offset file is corrupt or cannot be read.
        """
        try:
            present = set(os.listdir(self.directory))
        except FileNotFoundError:
            return {}
        found = {}
        directory, prefix = os.fspath(self.directory), f"{self.topic}-"
        for p in partitions:  # (names built here: offset_file_name checked the topic already)
            name = f"{prefix}{_check_partition(p)}{SUFFIX}"
            if len(name) > NAME_MAX:
                offset_file_name(self.topic, p)  # raises, naming topic and partition
            if name in present:
                value = read_offset_file(os.path.join(directory, name))
                if value is not None:
                    found[p] = value
        return found

    def commit(self, offsets: Mapping[int, int]) -> None:
        """Write the offsets that changed (callers pass only those), in one pass.

        Args:
            offsets: ``{partition: last processed offset}``.

        Raises:
            TypeError: A partition or offset that is not an int.
            ValueError: A partition or offset out of range (nothing is written then).
            rdk.OffsetFileError: Writing failed.
        """
        self.sync_calls += self._writer.write(offsets)
        self.files_written += len(offsets)
        self.flushes += 1

    def close(self) -> None:
        """Remove the temp files kept between commits (one per partition written; each
        holds a former value). Commits after this work as before."""
        self._writer.close()

    def __repr__(self) -> str:
        return f"FileOffsetStore({str(self.directory)!r}, {self.topic!r})"


#: a group coordinator not ready yet (fresh cluster, coordinator moving): retried by
#: ``BrokerOffsetStore.read`` until its timeout
COORDINATOR_RETRY_ERRORS = frozenset({
    "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
})


class BrokerOffsetStore:
    """Progress committed to Kafka's group coordinator (OffsetCommit / OffsetFetch).

    ``BrokerOffsetStore(group_id)`` given as a Consumer's ``offset_store`` commits the same
    progress the offset files would hold, under consumer group ``group_id``, while rdk keeps
    assigning partitions by worker slot (the group is never joined). Kafka stores the *next*
    offset to read; this store converts to and from kafka-native's last-processed offsets.
    Used alone, give ``broker`` and ``topic``.

    Args:
        group_id: The consumer group whose committed offsets hold the progress.
        broker: Comma-separated ``host:port`` list. None: given by the Consumer (``bind``).
        topic: The topic. None: given by the Consumer (``bind``); give both or neither.
        driver_options: librdkafka properties of the store's client.
        timeout: Seconds ``read()`` keeps asking a coordinator that is not ready yet; ``inf``
            waits without a practical limit.

    Raises:
        TypeError: Only one of ``broker`` and ``topic`` given, a ``group_id`` that is not
            a str, or another argument of the wrong type.
        ValueError: An empty ``group_id`` (or one librdkafka would rewrite: leading white
            space, a NUL), a negative ``timeout``; a malformed ``broker``
            or topic name.
        rdk.ConfigError: librdkafka refuses a property of ``driver_options``.
    """

    def __init__(
        self,
        group_id: str,
        *,
        broker: str | None = None,
        topic: str | None = None,
        driver_options: Mapping[str, Any] | None = None,
        timeout: float = 10.0,
    ) -> None:
        check_group_id(group_id)
        self.group_id = group_id
        # librdkafka takes int milliseconds: inf (or more) waits 2,000,000 s, i.e. no limit
        self.timeout = check_wait(timeout, "timeout", 2_000_000)
        self._client: _binding.Client | None = None
        self.topic: str | None = None
        if broker is not None or topic is not None:
            if broker is None or topic is None:
                raise TypeError("BrokerOffsetStore: give both broker and topic, or neither")
            self.bind(topic=topic, broker=broker, driver_options=driver_options)
        else:
            check_options(driver_options, "driver_options")

    def bind(self, *, topic: str, broker: str, driver_options: Mapping[str, Any] | None = None,
             logger: logging.Logger | None = None) -> None:
        """Connect to ``broker`` for ``topic`` (the Consumer calls this at start()).

        Args:
            topic: The topic whose progress the store keeps.
            broker: Comma-separated ``host:port`` list.
            driver_options: librdkafka properties of the store's client.
            logger: Logger for librdkafka's log lines. None: the ``rdk`` logger.

        Raises:
            ValueError: Bound to another topic already, a malformed ``broker`` or topic name.
            TypeError: An argument of the wrong type.
            rdk.ConfigError: A property librdkafka refuses.
        """
        check_broker(broker)
        check_topic_name(topic)
        options = check_options(driver_options, "driver_options")
        if self._client is not None:
            if topic != self.topic:
                raise ValueError(f"this BrokerOffsetStore is bound to topic {self.topic!r}, not {topic!r}")
            return
        props = {**options, "bootstrap.servers": broker, "group.id": self.group_id,
                 "enable.auto.commit": False, "enable.auto.offset.store": False}
        self._client = _binding.Client("consumer", props, logger=logger)
        self.topic = topic

    def _bound(self) -> tuple[_binding.Client, str]:
        if self._client is None or self.topic is None:
            raise RuntimeError("BrokerOffsetStore is not bound to a broker and topic")
        return self._client, self.topic

    def read(self, partitions: Sequence[int]) -> dict[int, int]:
        """The group's committed offsets, as last processed offsets.

        A coordinator that is not ready yet is asked again until ``timeout``.

        Args:
            partitions: The partitions asked about.

        Returns:
            ``{partition: last processed offset}`` of the partitions with a commit.

        Raises:
            RuntimeError: Not bound to a broker and topic.
            rdk.KafkaError: The offsets could not be fetched.
            TypeError: A partition that is not an int.
            ValueError: A negative partition.
        """
        client, topic = self._bound()
        for p in partitions:
            _check_partition(p)
        context = f"committed offsets of group {self.group_id!r}"
        # A group's first use on a fresh cluster finds its coordinator still loading (or not
        # yet elected): rd_kafka_committed answers COORDINATOR_LOAD_IN_PROGRESS /
        # NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE at once. Ask again until the timeout.
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while True:
            left_ms = max(1, int((deadline - time.monotonic()) * 1000))
            try:
                committed = partitions_committed(client.rk, topic, partitions, left_ms, context)
            except KafkaError as e:
                if e.name not in COORDINATOR_RETRY_ERRORS or time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            return {p: offset - 1 for (_, p), offset in committed.items() if offset >= 0}

    def commit(self, offsets: Mapping[int, int]) -> None:
        """Commit ``{partition: last processed offset}`` to the group (as next offsets).

        Args:
            offsets: ``{partition: last processed offset}``, each -1 to 2**63 - 1.

        Raises:
            RuntimeError: Not bound to a broker and topic.
            rdk.KafkaError: The commit failed.
            TypeError: A partition or offset that is not an int.
            ValueError: A partition or offset out of range.
        """
        client, topic = self._bound()
        if not offsets:
            return
        for p, last in offsets.items():
            _check_partition(p)
            check_int(last, f"offset of topic {topic!r} partition {p}", minimum=-1, maximum=MAX_OFFSET)
        commit_offsets(client.rk, ((topic, p, last + 1) for p, last in offsets.items()),
                       f"commit offsets for group {self.group_id!r}")

    def __repr__(self) -> str:
        return f"BrokerOffsetStore({self.group_id!r})"

    def close(self) -> None:
        """Free the store's client (idempotent); ``bind`` may connect again."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
