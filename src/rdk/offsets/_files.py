"""Atomic offset file writes: temp file, sync, rename, one directory fsync; and cleanup.

Also the offset directory itself (created and proven writable) and the temp files a killed
writer left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import os
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


def _checked_names(directory: Path, topic: str, offsets: Mapping[int, int]) -> dict[int, str]:
    """Each partition's offset file name, once every partition and offset is checked: all or
    nothing, so a bad value raises before any file is written."""
    names = {}
    for partition, offset in offsets.items():
        name = names[partition] = offset_file_name(topic, partition)
        check_int(offset, f"offset of topic {topic!r} partition {partition} ({directory / name})",
                  minimum=-1, maximum=MAX_OFFSET)
    return names


def _write_temp_files(directory: Path, names: Mapping[int, str], offsets: Mapping[int, int],
                      sync_each: bool, staged: list[tuple[Path, Path]]) -> int:
    """Write each new value to a fresh temp file beside its offset file (fsynced when
    ``sync_each``); returns the fsync calls made.

    Each ``(temp file, offset file)`` pair goes into ``staged`` as soon as the temp file
    exists, so the caller can remove them all whatever fails.
    """
    pid, syncs = os.getpid(), 0
    for partition, offset in offsets.items():
        final = directory / names[partition]
        if os.path.islink(final):
            raise _symlink_error(final)
        tmp = directory / f"{_temp_prefix(names[partition])}{pid}-{next(_tmp_counter)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        staged.append((tmp, final))
        try:
            os.write(fd, b"%d\n" % offset)
            if sync_each:
                os.fsync(fd)
                syncs += 1
        finally:
            os.close(fd)
    return syncs


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
    names = _checked_names(directory, topic, offsets)
    if not names:
        return 0
    each = len(names) <= SYNCFS_MIN_FILES or _syncfs is None
    staged: list[tuple[Path, Path]] = []
    try:
        syncs = _write_temp_files(directory, names, offsets, each, staged)
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
