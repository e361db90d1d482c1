"""Where a consumer keeps its progress: kafka-native's offset files, and other stores.

Offset files (kafka-native's format, so its directories carry over): one file per
topic-partition, ``<offset_directory>/<topic>-<partition>.offset``, holding the last
processed offset as decimal text and a newline. A consumer resumes at stored + 1.

This module is the only writer of offset files. Writes are atomic (a temp file in the same
directory, synced, renamed, then one fsync of the directory), so a crash at any moment leaves either
the old or the new value. A consumer holds an exclusive lock per owned partition while it
runs: a byte range of the topic's one lock file ``.<topic>.lock`` (Linux open-file-description
locks, ``F_OFD_SETLK``: held per open file, so two consumers in one process exclude each other
too; released when the file is closed or the process ends). Its range holds the holder's pid.
One file per topic, not per partition: creating 2,048 lock files cost a consumer's start a
second. [is_locked][rdk.offsets.is_locked] lets tools such as ``rdk offsets set`` refuse to write under a
running consumer.

Any object with ``read(partitions) -> {partition: last_processed}`` and
``commit({partition: last_processed})`` can keep progress instead ([OffsetStore][rdk.offsets.OffsetStore]);
[BrokerOffsetStore][rdk.offsets.BrokerOffsetStore] commits it to Kafka's group coordinator.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import itertools
import logging
import os
import re
import struct
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from . import _binding
from ._binding import check, lib
from ._partitions import partition_list, partition_list_offsets
from .errors import KafkaError, LockedError, OffsetFileError
from .validate import check_broker, check_int, check_options, check_topic_name, check_wait

__all__ = [
    "BrokerOffsetStore",
    "FileOffsetStore",
    "OffsetCommitter",
    "OffsetFile",
    "OffsetStore",
    "PartitionLock",
    "ensure_directory",
    "is_locked",
    "list_offset_files",
    "lock_partitions",
    "offset_file_path",
    "read_offset_file",
    "remove_temp_files",
    "write_offset_file",
    "write_offset_files",
]

SUFFIX = ".offset"
NAME_MAX = 255  # bytes in one file name (Linux, macOS)
MAX_FILE_BYTES = 4096  # an offset file is a number and a newline; anything longer is not one
MAX_OFFSET = 2**63 - 1  # a Kafka offset is a signed 64-bit integer
_NUMBER = re.compile(rb"^\s*(-?[0-9]+)\s*$")
_FILE_NAME = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>[0-9]+)\.offset$")
_tmp_counter = itertools.count()


# ---- paths -------------------------------------------------------------------------


def _check_partition(partition: Any) -> int:
    return check_int(partition, "partition", minimum=0, maximum=2**31 - 1)


def check_topic_fits(topic: str) -> str:
    """Refuse a topic whose offset files cannot be named at all: ``<topic>-0.offset`` would
    pass the file system's NAME_MAX (255 bytes), so topics of 247-249 characters."""
    check_topic_name(topic)
    if len(topic) + len("-0") + len(SUFFIX) > NAME_MAX:
        raise ValueError(
            f"topic {topic!r} ({len(topic)} characters) is too long for offset files: "
            f"'<topic>-<partition>{SUFFIX}' must fit in {NAME_MAX} bytes, so at most "
            f"{NAME_MAX - len('-0') - len(SUFFIX)} characters; use offset_store= (e.g. "
            "BrokerOffsetStore) for this topic")
    return topic


def offset_file_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.offset``; the topic must be a legal Kafka name (no path tricks)
    and the name must fit in NAME_MAX (255) bytes (ValueError naming topic and partition)."""
    check_topic_name(topic)
    name = f"{topic}-{_check_partition(partition)}{SUFFIX}"
    if len(name) > NAME_MAX:
        raise ValueError(
            f"offset file name of topic {topic!r} ({len(topic)} characters) partition {partition} "
            f"is {len(name)} bytes, more than the file system's limit of {NAME_MAX}: this "
            "partition cannot have an offset file; use offset_store= for this topic")
    return name


def offset_file_path(directory: str | os.PathLike, topic: str, partition: int) -> Path:
    """The offset file of ``topic``/``partition`` in ``directory``.

    Args:
        directory: The offset directory.
        topic: A legal Kafka topic name.
        partition: The partition number, >= 0.

    Returns:
        ``<directory>/<topic>-<partition>.offset`` (the file need not exist).

    Raises:
        TypeError: ``topic`` is not a str, or ``partition`` not an int.
        ValueError: An illegal topic name, a negative partition, or a file name longer
            than 255 bytes.
    """
    return Path(directory) / offset_file_name(topic, partition)


def _lock_file_path(directory: str | os.PathLike, topic: str) -> Path:
    check_topic_fits(topic)  # refuses names too long (the lock's name is shorter)
    return Path(directory) / f".{topic}.lock"


def _temp_prefix(name: str) -> str:
    """Temp files of offset file ``name``: ``.tmp-<hash of name>.``, short whatever the
    topic's length (a 249-character topic's ``.<name>.<pid>`` would pass NAME_MAX)."""
    return f".tmp-{hashlib.sha1(name.encode()).hexdigest()[:20]}."


def _old_temp_prefix(name: str) -> str:
    return f".{name}."  # rdk before issue 14 named them so; still cleaned up


# ---- reading ----------------------------------------------------------------------


def parse_offset_text(data: bytes | str, path: str | os.PathLike = "<offset file>") -> int:
    """The offset in an offset file's content; OffsetFileError naming ``path`` if it is not one.

    Accepts a decimal integer >= -1 with surrounding whitespace (kafka-native wrote it with
    or without a newline). -1 means nothing processed yet. Empty content is an error, never 0.
    """
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_FILE_BYTES:
        raise OffsetFileError(f"offset file {os.fspath(path)!s} is larger than {MAX_FILE_BYTES} "
                              "bytes: not an offset file (a decimal number and a newline)")
    if not raw.strip():
        raise OffsetFileError(f"offset file {os.fspath(path)!s} is empty; expected the last "
                              "processed offset as decimal text")
    m = _NUMBER.match(raw)
    if not m or int(m.group(1)) < -1:
        shown = raw.strip()[:40].decode("ascii", "backslashreplace")
        raise OffsetFileError(f"offset file {os.fspath(path)!s} is corrupt: {shown!r} is not an "
                              "offset (a decimal integer >= -1)")
    value = int(m.group(1))
    if value > MAX_OFFSET:
        raise OffsetFileError(f"offset file {os.fspath(path)!s} holds {value}, beyond the largest "
                              f"Kafka offset ({MAX_OFFSET}, a signed 64-bit integer)")
    return value


def _open_no_symlink(path: str | os.PathLike, flags: int) -> int:
    """os.open refusing a symlink as the offset file itself (OffsetFileError naming it)."""
    try:
        return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP or (os.path.islink(path) and e.errno != errno.ENOENT):
            raise _symlink_error(path) from None
        raise


def _symlink_error(path: str | os.PathLike) -> OffsetFileError:
    return OffsetFileError(
        f"offset file {os.fspath(path)!s} is a symbolic link (to {os.readlink(os.fspath(path))!r}); rdk "
        "replaces offset files atomically by rename, which would replace the link, not its "
        "target: point offset_directory at the real directory instead")


def read_offset_file(path: str | os.PathLike) -> int | None:
    """The last processed offset stored in ``path``; None if the file does not exist.

    Args:
        path: The offset file.

    Returns:
        The stored offset (-1: nothing processed yet), or None when there is no such file.

    Raises:
        rdk.OffsetFileError: The file is empty, corrupt, too large, a symbolic link, or
            cannot be read.
    """
    try:
        fd = _open_no_symlink(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise OffsetFileError(f"offset file {os.fspath(path)!s} cannot be read: {e}") from e
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)  # one byte more tells an oversized file
    except OSError as e:
        raise OffsetFileError(f"offset file {os.fspath(path)!s} cannot be read: {e}") from e
    return parse_offset_text(data, path)


class OffsetFile(NamedTuple):
    """One offset file found by [list_offset_files][rdk.offsets.list_offset_files]."""

    topic: str
    """The topic, from the file name."""
    partition: int
    """The partition, from the file name."""
    path: Path
    """The file's path."""


def list_offset_files(directory: str | os.PathLike, topic: str | None = None) -> list[OffsetFile]:
    """The offset files in ``directory`` (optionally of one topic), sorted by topic, partition.

    Args:
        directory: The offset directory; one that does not exist has no files.
        topic: Only this topic's files. None: every topic's.

    Returns:
        An [rdk.offsets.OffsetFile][] per file named ``<topic>-<partition>.offset``.
    """
    found = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        m = _FILE_NAME.match(name)
        if not m or (topic is not None and m.group("topic") != topic):
            continue
        found.append(OffsetFile(m.group("topic"), int(m.group("partition")), Path(directory) / name))
    found.sort(key=lambda f: (f.topic, f.partition))
    return found


# ---- writing ----------------------------------------------------------------------


def ensure_directory(directory: str | os.PathLike) -> Path:
    """Create ``directory`` if missing and prove it writable; OffsetFileError otherwise.

    Args:
        directory: The offset directory.

    Returns:
        ``directory`` as a ``Path``.

    Raises:
        TypeError: ``directory`` is not a str or path.
        ValueError: ``directory`` is empty.
        rdk.OffsetFileError: It is not a directory, or not writable.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"offset_directory must be a str or path, got {type(directory).__name__}")
    path = Path(directory)
    if not str(directory):
        raise ValueError("offset_directory must not be empty")
    if os.path.lexists(path) and not path.is_dir():
        what = (f"a symbolic link to {os.readlink(path)!r}, which does not exist"
                if path.is_symlink() and not path.exists() else "a file, not a directory")
        raise OffsetFileError(f"offset_directory {os.fspath(directory)!s} is not a directory: it is "
                              f"{what}")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".rdk-write-probe.{os.getpid()}.{next(_tmp_counter)}"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OffsetFileError(f"offset_directory {os.fspath(directory)!s} is not writable: {e}") from e
    return path


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: above this many files in one flush, one ``syncfs`` of the directory's file system
#: replaces one ``fsync`` per temp file (each fsync is a journal commit on ext4/xfs)
SYNCFS_MIN_FILES = 8


def _load_syncfs() -> Any:
    """libc's ``syncfs(fd)`` (Linux), or None where it does not exist."""
    try:
        func = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int]
    func.restype = ctypes.c_int
    return func


_syncfs = _load_syncfs()


def _sync_filesystem(directory: Path) -> bool:
    """Flush every written-but-unsynced file of ``directory``'s file system at once;
    False where syncfs is unavailable (then the caller fsyncs each file)."""
    if _syncfs is None:
        return False
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if _syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs: {os.strerror(err)}")
    finally:
        os.close(fd)
    return True


def write_offset_files(directory: str | os.PathLike, topic: str, offsets: Mapping[int, int]) -> int:
    """Atomically replace several offset files of ``topic``; returns the sync calls made.

    Each new value goes to a temp file in the same directory; once every temp file is on
    disk (one ``fsync`` each, or for more than ``SYNCFS_MIN_FILES`` files one ``syncfs``
    of the file system), each is renamed over its offset file and the directory is fsynced
    once. A crash at any moment leaves every file with its old or its new value.

    Args:
        directory: The offset directory (it must exist).
        topic: A legal Kafka topic name.
        offsets: ``{partition: last processed offset}``, each offset -1 to 2**63 - 1.

    Returns:
        The number of ``fsync``/``syncfs`` calls made.

    Raises:
        TypeError: A partition or offset that is not an int.
        ValueError: An illegal topic name, a partition or offset out of range (nothing is
            written then).
        rdk.OffsetFileError: An offset file is a symbolic link, or writing failed.
    """
    directory = Path(directory)
    names = {}
    for partition, offset in offsets.items():  # all or nothing: check every value first
        name = names[partition] = offset_file_name(topic, partition)
        check_int(offset, f"offset of topic {topic!r} partition {partition} ({directory / name})",
                  minimum=-1, maximum=MAX_OFFSET)
    if not names:
        return 0
    each = len(names) <= SYNCFS_MIN_FILES or _syncfs is None
    pid, counter = os.getpid(), _tmp_counter
    staged: list[tuple[Path, Path]] = []
    syncs = 0
    try:
        for partition, offset in offsets.items():
            final = directory / names[partition]
            if os.path.islink(final):
                raise _symlink_error(final)
            tmp = directory / f"{_temp_prefix(names[partition])}{pid}-{next(counter)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            staged.append((tmp, final))
            try:
                os.write(fd, b"%d\n" % offset)
                if each:
                    os.fsync(fd)
                    syncs += 1
            finally:
                os.close(fd)
        if not each:
            _sync_filesystem(directory)
            syncs += 1
        for tmp, final in staged:
            os.replace(tmp, final)
        staged.clear()
        _fsync_directory(directory)
        return syncs + 1
    except OSError as e:
        raise OffsetFileError(f"cannot write offsets of topic {topic!r} in {directory}: {e}") from e
    finally:
        for tmp, _ in staged:  # only on failure: do not leave temp files behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_offset_file(directory: str | os.PathLike, topic: str, partition: int, offset: int) -> None:
    """Atomically store ``offset`` as the last processed offset of ``topic``/``partition``.

    Args:
        directory: The offset directory (it must exist).
        topic: A legal Kafka topic name.
        partition: The partition number, >= 0.
        offset: The last processed offset, -1 (nothing processed) to 2**63 - 1.

    Raises:
        TypeError: ``partition`` or ``offset`` is not an int.
        ValueError: An illegal topic name, a partition or offset out of range.
        rdk.OffsetFileError: The offset file is a symbolic link, or writing failed.
    """
    write_offset_files(directory, topic, {partition: offset})


def remove_temp_files(directory: str | os.PathLike, topic: str, partitions: Iterable[int]) -> int:
    """Delete temp files a killed writer left for these partitions; returns how many.

    Call it only while holding the partitions' locks (then no writer is active).

    Args:
        directory: The offset directory.
        topic: A legal Kafka topic name.
        partitions: The partitions whose temp files to delete.

    Returns:
        How many temp files were deleted.

    Raises:
        TypeError: ``topic`` is not a str, or a partition not an int.
        ValueError: An illegal topic name, a negative partition, or a file name longer
            than 255 bytes.
    """
    directory = Path(directory)
    offset_names = [offset_file_name(topic, p) for p in partitions]
    prefixes = tuple(_temp_prefix(n) for n in offset_names) + tuple(_old_temp_prefix(n) for n in offset_names)
    removed = 0
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    for name in names:
        if name.endswith(".tmp") and name.startswith(prefixes):
            try:
                os.unlink(directory / name)
                removed += 1
            except FileNotFoundError:
                pass
    return removed


# ---- locks -------------------------------------------------------------------------


_LOCK_RECORD = 12  # bytes of a partition's range in its topic's lock file: b"%11d\n" % pid
_F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", 36)  # Linux >= 3.15
_F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37)


def _range_lock(fd: int, partition: int, command: int, kind: int) -> int:
    """One ``struct flock`` call on ``partition``'s range; returns the l_type it came back with."""
    request = struct.pack("hhqqi4x", kind, os.SEEK_SET, partition * _LOCK_RECORD, _LOCK_RECORD, 0)
    answer = fcntl.fcntl(fd, command, request)
    return int(struct.unpack("hhqqi4x", answer)[0])


def _holder_pid(fd: int, partition: int) -> str:
    try:
        text = os.pread(fd, _LOCK_RECORD, partition * _LOCK_RECORD).decode("ascii", "replace").strip()
        return f" (pid {text})" if text.isdigit() else ""
    except OSError:
        return ""


class PartitionLock:
    """Exclusive locks on the offset files of some partitions of a topic: byte ranges of the
    topic's lock file (``F_OFD_SETLK``), one open file per PartitionLock.

    The lock file stays in place (removing it would race with other lockers); the locks are
    held by the open file, so they end with ``release()`` or with the process.

    Args:
        directory: The offset directory (it must exist).
        topic: A legal Kafka topic name.
        partitions: The partitions to lock (none: nothing is locked).

    Raises:
        rdk.LockedError: Another consumer (in any process, this one included) holds one of
            the partitions; nothing stays locked then.
        rdk.OffsetFileError: The lock file cannot be opened or locked.
        TypeError: ``topic`` is not a str, or a partition not an int.
        ValueError: An illegal or too long topic name, a negative partition.
    """

    def __init__(self, directory: str | os.PathLike, topic: str, partitions: Iterable[int]) -> None:
        self.directory = Path(directory)
        self.topic = check_topic_name(topic)
        self.partitions = sorted(set(partitions))
        """The locked partitions, sorted."""
        self._fd: int | None = None
        if not self.partitions:
            return
        offset_file_name(topic, self.partitions[-1])  # the longest name must fit
        path = _lock_file_path(self.directory, topic)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise OffsetFileError(f"cannot open lock file {path}: {e}") from e
        self._fd = fd
        holder = b"%11d\n" % os.getpid()
        try:
            for p in self.partitions:
                try:
                    _range_lock(fd, p, _F_OFD_SETLK, fcntl.F_WRLCK)
                except OSError as e:
                    if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise LockedError(
                            f"partition {p} of topic {topic!r} in offset directory {self.directory} "
                            f"is in use by another consumer{_holder_pid(fd, p)}; two consumers must "
                            "not own the same partitions"
                        ) from None
                    raise OffsetFileError(f"cannot lock partition {p} in {path}: {e}") from e
                if os.pread(fd, _LOCK_RECORD, p * _LOCK_RECORD) != holder:
                    os.pwrite(fd, holder, p * _LOCK_RECORD)
        except BaseException:
            self.release()
            raise

    @property
    def held(self) -> bool:
        """True until ``release()`` (always True for an empty set of partitions)."""
        return self._fd is not None or not self.partitions

    def release(self) -> None:
        """Give the locks up (idempotent): closing the file releases its ranges."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> PartitionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_partitions(directory: str | os.PathLike, topic: str, partitions: Iterable[int]) -> PartitionLock:
    """Lock the partitions' offset files (LockedError if another consumer has any of them).

    Args:
        directory: The offset directory (it must exist).
        topic: A legal Kafka topic name.
        partitions: The partitions to lock.

    Returns:
        The held [rdk.offsets.PartitionLock][]; ``release()`` it (or use ``with``).

    Raises:
        rdk.LockedError: Another consumer holds one of the partitions.
        rdk.OffsetFileError: The lock file cannot be opened or locked.
        TypeError: ``topic`` is not a str, or a partition not an int.
        ValueError: An illegal or too long topic name, a negative partition.
    """
    return PartitionLock(directory, topic, partitions)


def is_locked(directory: str | os.PathLike, topic: str, partition: int) -> bool:
    """True while a consumer (in any process, this one included) holds the partition's lock.

    Args:
        directory: The offset directory.
        topic: A legal Kafka topic name.
        partition: The partition number, >= 0.

    Returns:
        Whether the partition is locked now.

    Raises:
        TypeError: ``topic`` is not a str, or ``partition`` not an int.
        ValueError: An illegal or too long topic name, a negative partition.
        rdk.OffsetFileError: The lock file is a symbolic link, or cannot be opened.
    """
    _check_partition(partition)
    path = _lock_file_path(directory, topic)
    try:
        fd = _open_no_symlink(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise OffsetFileError(f"lock file {os.fspath(path)!s} cannot be opened: {e}") from e
    try:
        return _range_lock(fd, partition, _F_OFD_GETLK, fcntl.F_WRLCK) != fcntl.F_UNLCK
    finally:
        os.close(fd)


# ---- stores ------------------------------------------------------------------------


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
        for p in partitions:
            name = offset_file_name(self.topic, p)
            if name in present:
                value = read_offset_file(Path(self.directory) / name)
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
        self.sync_calls += write_offset_files(self.directory, self.topic, offsets)
        self.files_written += len(offsets)
        self.flushes += 1

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
        TypeError: ``group_id`` is not a str, only one of ``broker``/``topic``, or another
            argument of the wrong type.
        ValueError: An empty ``group_id``, a negative ``timeout``, a malformed ``broker`` or
            topic name.
        rdk.ConfigError: A property librdkafka refuses.
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
        if not isinstance(group_id, str):
            raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
        if not group_id:
            raise ValueError("group_id must not be empty")
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
            tpl = partition_list((topic, p, lib.RD_KAFKA_OFFSET_INVALID) for p in partitions)
            try:
                check(lib.rd_kafka_committed(client.rk, tpl, left_ms), context)
                committed = partition_list_offsets(tpl, context)
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
        tpl = partition_list((topic, p, last + 1) for p, last in offsets.items())
        context = f"commit offsets for group {self.group_id!r}"
        check(lib.rd_kafka_commit(client.rk, tpl, 0), context)
        partition_list_offsets(tpl, context)

    def close(self) -> None:
        """Free the store's client (idempotent); ``bind`` may connect again."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __repr__(self) -> str:
        return f"BrokerOffsetStore({self.group_id!r})"


# ---- committer ---------------------------------------------------------------------


#: a group's commit refused while it rebalances: expected, retried (logged at INFO)
REBALANCE_ERRORS = frozenset({"REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"})


class OffsetCommitter:
    """A thread that hands recorded offsets to a store: one commit in flight, newer values coalesce.

    ``record({p: offset})`` never blocks on I/O. Commits start at most every
    ``min_interval`` seconds (values recorded meanwhile coalesce into the next one). With
    ``max_cpu_share``, a commit that cost ``c`` seconds of this thread's CPU is followed by
    a pause of up to ``c / max_cpu_share`` (at most ``MAX_INTERVAL``), so writing thousands
    of offset files per commit costs a bounded share of a core; ``flush()`` and ``close()``
    commit at once. A failing commit is logged and retried (the
    values stay pending, newer ones replace them) until ``close()``.

    Args:
        store: The [rdk.offsets.OffsetStore][] commits go to.
        logger: Where failed commits are logged.
        name: The committer thread's name.
        min_interval: Least seconds between the starts of two commits.
        max_cpu_share: Largest share of a core the commits may take (e.g. 0.05). None: no bound.
    """

    RETRY_SECONDS = 0.5
    """Seconds before a failed commit is tried again."""
    MAX_INTERVAL = 10.0  # the CPU share bound never spaces commits further apart than this
    """The CPU share bound never spaces commits further apart than this many seconds."""

    def __init__(self, store: Any, logger: logging.Logger | logging.LoggerAdapter, name: str = "rdk-offsets",
                 min_interval: float = 0.0, max_cpu_share: float | None = None) -> None:
        self.store = store
        self.logger = logger
        self.min_interval = float(min_interval)
        self.max_cpu_share = max_cpu_share
        self._gap = self.min_interval  # the pause owed after the last commit
        self.committed: dict[int, int] = {}
        """The offsets the store has taken, per partition."""
        self.last_error: BaseException | None = None
        """The exception of the last failed commit; None once a commit succeeds."""
        self._pending: dict[int, int] = {}
        self._writing = False
        self._closing = False
        self._give_up = False
        self._urgent = 0
        self._last_start = float("-inf")
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def record(self, offsets: Mapping[int, int]) -> None:
        """Queue offsets for the next commit; never blocks on I/O. Ignored once closed.

        Args:
            offsets: ``{partition: last processed offset}``; newer values replace pending ones.
        """
        if not offsets:
            return
        with self._cond:
            if self._closing and not self._thread.is_alive():
                return
            self._pending.update(offsets)
            self._cond.notify_all()

    @property
    def pending(self) -> dict[int, int]:
        """The recorded offsets not yet committed."""
        with self._cond:
            return dict(self._pending)

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._pending and not self._closing:
                    cond.wait()
                if not self._pending:
                    return
                while not self._closing and not self._urgent:  # at most one per gap
                    delay = self._last_start + self._gap - time.monotonic()
                    if delay <= 0:
                        break
                    cond.wait(delay)
                batch, self._pending = self._pending, {}
                self._writing = True
                self._last_start = time.monotonic()
            ok = False
            cpu = time.thread_time()
            try:
                self.store.commit(batch)
                ok = True
            except Exception as e:  # noqa: BLE001 - keep the values and retry; never lose the thread
                self.last_error = e
                if getattr(e, "name", None) in REBALANCE_ERRORS:  # a group commit mid-rebalance
                    self.logger.info("offsets %s not committed during a rebalance: %s (will "
                                     "retry)", batch, e)
                else:
                    self.logger.error("could not store offsets %s: %s (will retry)", batch, e)
            self._gap = self._next_gap(time.thread_time() - cpu)
            with cond:
                self._writing = False
                if ok:
                    self.committed.update(batch)
                    self.last_error = None
                else:
                    for p, v in batch.items():
                        self._pending.setdefault(p, v)
                cond.notify_all()
                if not ok:
                    cond.wait(self.RETRY_SECONDS)
                    if self._closing and self._give_up:
                        return

    def _next_gap(self, cpu_seconds: float) -> float:
        if not self.max_cpu_share:
            return self.min_interval
        return max(self.min_interval, min(self.MAX_INTERVAL, cpu_seconds / self.max_cpu_share))

    def flush(self, timeout: float | None = None) -> bool:
        """Commit what is recorded now and wait for it; False if ``timeout`` passed first.

        Args:
            timeout: Seconds to wait; None waits until done.

        Returns:
            True when nothing is pending any more.
        """
        with self._cond:
            self._urgent += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: not self._pending and not self._writing, timeout)
            finally:
                self._urgent -= 1

    def close(self, timeout: float | None = None) -> bool:
        """Commit what is pending (up to ``timeout``), then end the thread. True if all was stored.

        Args:
            timeout: Seconds to wait; None waits until done.

        Returns:
            True when every recorded offset was stored.
        """
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        done = self.flush(timeout)
        with self._cond:
            self._give_up = True
            self._cond.notify_all()
        self._thread.join(0 if not done else timeout)
        return done
