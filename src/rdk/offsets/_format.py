"""kafka-native's offset file format: file names and paths, parsing, reading and listing.

One file per topic-partition, ``<offset_directory>/<topic>-<partition>.offset``, holding the
last processed offset as decimal text and a newline.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import OffsetFileError
from ..validate import check_int, check_topic_name

SUFFIX = ".offset"
NAME_MAX = 255  # bytes in one file name (Linux, macOS)
MAX_FILE_BYTES = 4096  # an offset file is a number and a newline; anything longer is not one
MAX_OFFSET = 2**63 - 1  # a Kafka offset is a signed 64-bit integer
_NUMBER = re.compile(rb"^\s*(-?[0-9]+)\s*$")
_FILE_NAME = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>[0-9]+)\.offset$")


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


def _open_read_only(path: str | os.PathLike, failure: str) -> int | None:
    """``path`` opened read-only (a symbolic link refused); None if it does not exist.

    Any other error raises OffsetFileError ``"<failure>: <error>"``.
    """
    try:
        return _open_no_symlink(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise OffsetFileError(f"{failure}: {e}") from e


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
    for _ in range(_READ_TRIES):
        fd = _open_read_only(path, f"offset file {os.fspath(path)!s} cannot be read")
        if fd is None:
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            while size <= MAX_FILE_BYTES:  # one byte more tells an oversized file
                chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if not _still_named(fd, path):
                continue  # replaced while it was read: read the new one
        except OSError as e:
            raise OffsetFileError(f"offset file {os.fspath(path)!s} cannot be read: {e}") from e
        finally:
            os.close(fd)
        break
    return parse_offset_text(b"".join(chunks), path)


_READ_TRIES = 3


def _still_named(fd: int, path: str | os.PathLike) -> bool:
    """Whether ``path`` still names the file open as ``fd``. A consumer swaps an offset file
    with a temp file it rewrites later (``OffsetFileWriter``): a read that spans a swap is
    done again rather than trusted."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return True  # removed after it was read whole: what was read stands


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
