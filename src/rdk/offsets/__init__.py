"""Where a consumer keeps its progress: kafka-native's offset files, and other stores.

Offset files (kafka-native's format, so its directories carry over): one file per
topic-partition, ``<offset_directory>/<topic>-<partition>.offset``, holding the last
processed offset as decimal text and a newline. A consumer resumes at stored + 1.

This module is the only writer of offset files. Writes are atomic (a temp file in the same
directory, synced, renamed, then one fsync of the directory), so a crash at any moment leaves either
the old or the new value. A consumer's [FileOffsetStore][rdk.offsets.FileOffsetStore] keeps one
temp file per partition between writes and swaps its name with the offset file's instead of
renaming a new one over it: no inode is created or freed per write.

A consumer holds an exclusive lock per owned partition while it runs: a byte range of the
topic's one lock file ``.<topic>.lock`` (Linux open-file-description locks, ``F_OFD_SETLK``:
held per open file, so two consumers in one process exclude each other too; released when the
file is closed or the process ends). Its range holds the holder's pid. One file per topic, not
per partition: creating 2,048 lock files cost a consumer's start a second.
[is_locked][rdk.offsets.is_locked] lets tools such as ``rdk offsets set`` refuse to write under
a running consumer.

Any object with ``read(partitions) -> {partition: last_processed}`` and
``commit({partition: last_processed})`` can keep progress instead ([OffsetStore][rdk.offsets.OffsetStore]);
[BrokerOffsetStore][rdk.offsets.BrokerOffsetStore] commits it to Kafka's group coordinator.
"""

from __future__ import annotations

# ``name as name``: importable from rdk.offsets as before it became a package, but not in
# __all__ (helpers and constants, not the documented API)
from ._committer import REBALANCE_ERRORS as REBALANCE_ERRORS
from ._committer import OffsetCommitter as OffsetCommitter
from ._files import SYNCFS_MIN_FILES as SYNCFS_MIN_FILES
from ._files import ensure_directory as ensure_directory
from ._files import remove_temp_files as remove_temp_files
from ._files import write_offset_file, write_offset_files
from ._format import MAX_FILE_BYTES as MAX_FILE_BYTES
from ._format import MAX_OFFSET as MAX_OFFSET
from ._format import NAME_MAX as NAME_MAX
from ._format import SUFFIX as SUFFIX
from ._format import (
    OffsetFile,
    list_offset_files,
    offset_file_path,
    read_offset_file,
)
from ._format import check_topic_fits as check_topic_fits
from ._format import offset_file_name as offset_file_name
from ._format import parse_offset_text as parse_offset_text
from ._locks import PartitionLock, is_locked, lock_partitions
from ._stores import COORDINATOR_RETRY_ERRORS as COORDINATOR_RETRY_ERRORS
from ._stores import BrokerOffsetStore, FileOffsetStore, OffsetStore

__all__ = [
    "BrokerOffsetStore",
    "FileOffsetStore",
    "OffsetFile",
    "OffsetStore",
    "PartitionLock",
    "is_locked",
    "list_offset_files",
    "lock_partitions",
    "offset_file_path",
    "read_offset_file",
    "write_offset_file",
    "write_offset_files",
]
