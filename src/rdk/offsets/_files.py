"""Atomic offset file writes: temp file, sync, rename, one directory fsync; and cleanup.

:class:`OffsetFileWriter` (a consumer's offset files) keeps one temp file per partition
between writes and swaps it with the offset file (Linux ``renameat2(RENAME_EXCHANGE)``), so
a write in steady state creates and frees no inode: on ext4 that is most of a write's cost.
Also the offset directory itself (created and proven writable) and the temp files a killed
writer left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import itertools
import os
import stat
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import OffsetFileError
from ..validate import check_int
from ._format import MAX_OFFSET, _symlink_error, offset_file_name

_tmp_counter = itertools.count()


def _temp_prefix(name: str) -> str:
    """Temp files of offset file ``name``: ``.tmp-<hash of name>.``, short whatever the
    topic's length (a 249-character topic's ``.<name>.<pid>`` would pass NAME_MAX)."""
    return f".tmp-{hashlib.sha1(name.encode()).hexdigest()[:20]}."


def _old_temp_prefix(name: str) -> str:
    return f".{name}."  # rdk before issue 14 named them so; still cleaned up


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


#: above this many files in one flush, one ``syncfs`` of the directory's file system
#: replaces one ``fsync`` per temp file (each fsync is a journal commit on ext4/xfs)
SYNCFS_MIN_FILES = 8


def _libc_function(name: str, *argtypes: Any) -> Any:
    """libc's function ``name`` returning an int (errno kept), or None where it does not
    exist: ``syncfs`` (Linux), ``renameat2`` (glibc >= 2.28)."""
    try:
        func = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    func.argtypes = list(argtypes)
    func.restype = ctypes.c_int
    return func


_syncfs = _libc_function("syncfs", ctypes.c_int)


def _sync_filesystem(dir_fd: int) -> bool:
    """Flush every written-but-unsynced file of the file system of directory ``dir_fd`` at
    once; False where syncfs is unavailable (then the caller fsyncs each file)."""
    if _syncfs is None:
        return False
    if _syncfs(dir_fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"syncfs: {os.strerror(err)}")
    return True


RENAME_EXCHANGE = 2  # renameat2 flag (linux/fs.h): swap the two names atomically

#: a writer rewrites the temp file that holds an offset file's former inode only this long
#: after the swap: a reader that opened the offset file just before it reads it whole
SHADOW_SETTLE_SECONDS = 0.5


_renameat2 = _libc_function("renameat2", ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                            ctypes.c_char_p, ctypes.c_uint)


def _exchange(dir_fd: int, a: str, b: str) -> int:
    """Swap names ``a`` and ``b`` in ``dir_fd``; 0, or the errno of the failure."""
    if _renameat2(dir_fd, a.encode(), dir_fd, b.encode(), RENAME_EXCHANGE) == 0:
        return 0
    return ctypes.get_errno()


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
    return OffsetFileWriter(directory, topic, keep=False).write(offsets)


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


#: errors of renameat2(RENAME_EXCHANGE) that mean the file system cannot swap names
_NO_EXCHANGE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


class OffsetFileWriter:
    """Replaces one topic's offset files in one directory, as :func:`write_offset_files`
    does, at a fraction of the cost when it is done again and again (a consumer's commits).

    Each partition keeps a temp file of this writer (``<temp prefix><pid>-w<n>.tmp``) from
    one write to the next. A write puts the new value into it, syncs it, and swaps the
    names of the temp file and the offset file (Linux ``renameat2(RENAME_EXCHANGE)``), so
    no inode is created or freed; the temp file then holds the former value. A crash at any
    moment leaves every offset file with its old or its new value. The temp files go at
    :meth:`close`, or after a crash at the next owner's :func:`remove_temp_files`.

    A temp file is rewritten only ``SHADOW_SETTLE_SECONDS`` after its swap (a reader that
    opened the offset file just before the swap reads a whole value). A write sooner than
    that, or on a file system that cannot swap names, makes a fresh temp file and renames
    it over the offset file, as write_offset_files does. Thread-safe: one write at a time.

    Args:
        directory: The offset directory (it must exist).
        topic: A legal Kafka topic name.
        keep: False: keep no temp file, rename a fresh one each time (write_offset_files).
    """

    def __init__(self, directory: str | os.PathLike, topic: str, keep: bool = True) -> None:
        self.directory = Path(directory)
        self.topic = topic
        self._keep = keep
        self._lock = threading.Lock()
        self._names: dict[int, tuple[str, str]] = {}  # partition -> (offset file, kept temp file)
        self._swapped: dict[int, float] = {}  # partition -> when its kept temp file got the old value
        self._owner = [0]  # the pid whose temp files these are
        self._reset()
        # a store dropped unclosed (an application's store wrapping a FileOffsetStore)
        # still removes its temp files, at the latest when the interpreter exits
        weakref.finalize(self, _remove_kept, self.directory, self._names, self._swapped, self._owner)

    @property
    def _pid(self) -> int:
        return self._owner[0]

    def _reset(self) -> None:
        self._owner[0] = os.getpid()
        self._tag = f"{self._pid}-w{next(_tmp_counter)}.tmp"
        self._names.clear()
        self._swapped.clear()
        self._can_swap = self._keep and _renameat2 is not None

    def _name(self, partition: int) -> tuple[str, str]:
        names = self._names.get(partition)
        if names is None:
            final = offset_file_name(self.topic, partition)
            names = self._names[partition] = (final, f"{_temp_prefix(final)}{self._tag}")
        return names

    def write(self, offsets: Mapping[int, int]) -> int:
        """Replace the offset files of ``offsets`` (``{partition: last processed offset}``);
        returns the sync calls made. Raises as :func:`write_offset_files` does."""
        names = {}
        for partition, offset in offsets.items():
            names[partition] = self._name(partition)
            check_int(offset, f"offset of topic {self.topic!r} partition {partition} "
                              f"({self.directory / names[partition][0]})", minimum=-1, maximum=MAX_OFFSET)
        if not names:
            return 0
        with self._lock:
            if os.getpid() != self._pid:  # a forked child: the parent's temp files are not its own
                self._reset()
                names = {p: self._name(p) for p in names}
            try:
                return self._write(names, offsets)
            except OSError as e:
                raise OffsetFileError(f"cannot write offsets of topic {self.topic!r} in "
                                      f"{self.directory}: {e}") from e

    def _write(self, names: Mapping[int, tuple[str, str]], offsets: Mapping[int, int]) -> int:
        each = len(names) <= SYNCFS_MIN_FILES or _syncfs is None
        now, syncs, done = time.monotonic(), 0, 0
        # (partition, written file, offset file, written file is the kept one, offset file exists)
        staged: list[tuple[int, str, str, bool, bool]] = []
        dir_fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
        try:
            for partition, offset in offsets.items():
                syncs += self._stage(dir_fd, partition, offset, names[partition], now, each, staged)
            if not each:
                _sync_filesystem(dir_fd)
                syncs += 1
            for partition, source, final, keep, exists in staged:
                self._put_in_place(dir_fd, partition, source, final, keep and exists)
                done += 1
            os.fsync(dir_fd)
            return syncs + 1
        finally:
            for _p, source, *_ in staged[done:]:  # only on failure: no new value stays behind
                with contextlib.suppress(OSError):
                    os.unlink(source, dir_fd=dir_fd)
            os.close(dir_fd)

    def _stage(self, dir_fd: int, partition: int, offset: int, names: tuple[str, str], now: float,
               each: bool, staged: list[tuple[int, str, str, bool, bool]]) -> int:
        """Write ``offset`` into the partition's kept temp file (if settled) or a fresh one,
        appended to ``staged`` once it exists; fsynced when ``each``. Returns the syncs made."""
        final, kept = names
        try:
            mode: int | None = os.stat(final, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            raise _symlink_error(self.directory / final)
        since = self._swapped.get(partition)
        keep = self._can_swap and (since is None or now - since >= SHADOW_SETTLE_SECONDS)
        if keep:
            self._swapped.pop(partition, None)  # rewritten now: swapped in, or removed on failure
            source, flags = kept, os.O_NOFOLLOW
        else:
            source = f"{_temp_prefix(final)}{self._pid}-{next(_tmp_counter)}.tmp"
            flags = os.O_EXCL
        fd = os.open(source, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | flags, 0o644, dir_fd=dir_fd)
        staged.append((partition, source, final, keep, mode is not None))
        try:
            data = b"%d\n" % offset
            os.write(fd, data)
            if keep:
                os.ftruncate(fd, len(data))  # (it held a longer value before)
            if each:
                os.fsync(fd)
                return 1
            return 0
        finally:
            os.close(fd)

    def _put_in_place(self, dir_fd: int, partition: int, source: str, final: str, swap: bool) -> None:
        """``source`` becomes offset file ``final``: names swapped (``swap``: it is the kept
        file, which then holds the former value), or renamed over it."""
        if swap and self._can_swap:
            err = _exchange(dir_fd, source, final)
            if err == 0:
                self._swapped[partition] = time.monotonic()
                return
            if err in _NO_EXCHANGE:
                self._can_swap = False
            elif err != errno.ENOENT:  # (ENOENT: the offset file went meanwhile)
                raise OSError(err, f"renameat2 {source} and {final}: {os.strerror(err)}")
        os.replace(source, final, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)

    def close(self, timeout: float = 5.0) -> None:
        """Remove this writer's kept temp files (each holds a former value); a write still
        running after ``timeout`` seconds (a hung file system) leaves them to the next
        owner's :func:`remove_temp_files`. Writes after this work as before."""
        if not self._lock.acquire(timeout=timeout):
            return
        try:
            _remove_kept(self.directory, self._names, self._swapped, self._owner)
            self._reset()
        finally:
            self._lock.release()


def _remove_kept(directory: Path, names: Mapping[int, tuple[str, str]], swapped: dict[int, float],
                 owner: list[int]) -> None:
    """Remove the kept temp files of an OffsetFileWriter (not in a forked child: they are
    its parent's)."""
    if os.getpid() != owner[0]:
        return
    for partition in list(swapped):
        with contextlib.suppress(OSError, KeyError):
            os.unlink(directory / names[partition][1])
    swapped.clear()


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
