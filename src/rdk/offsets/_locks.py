"""Per-partition locks on offset files: byte ranges of a topic's ``.<topic>.lock`` file.

Linux open-file-description locks (``F_OFD_SETLK``): held per open file, released when it is
closed or the process ends; each partition's range holds its holder's pid.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Iterable
from pathlib import Path

from ..errors import LockedError, OffsetFileError
from ..validate import check_topic_name
from ._format import _check_partition, _open_read_only, check_topic_fits, offset_file_name


def _lock_file_path(directory: str | os.PathLike, topic: str) -> Path:
    check_topic_fits(topic)  # refuses names too long (the lock's name is shorter)
    return Path(directory) / f".{topic}.lock"


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
        directory: The offset directory; one that does not exist holds no locks.
        topic: A legal Kafka topic name.
        partition: The partition asked about, >= 0.

    Returns:
        Whether the partition is locked now.

    Raises:
        TypeError: ``topic`` is not a str, or ``partition`` not an int.
        ValueError: An illegal or too long topic name, a negative partition.
        rdk.OffsetFileError: The lock file is a symbolic link, or cannot be opened.
    """
    _check_partition(partition)
    path = _lock_file_path(directory, topic)
    fd = _open_read_only(path, f"lock file {os.fspath(path)!s} cannot be opened")
    if fd is None:
        return False
    try:
        return _range_lock(fd, partition, _F_OFD_GETLK, fcntl.F_WRLCK) != fcntl.F_UNLCK
    finally:
        os.close(fd)
