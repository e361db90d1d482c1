"""The ``rdk`` command line (also ``python -m rdk``).

Subcommands: produce, consume, offsets show/set, stats, mock, version, bench. Each one's
``--help`` shows examples. Bad arguments print one line and exit with code 2; a failure
at run time prints one line and exits with code 1.

Binary framing (``rdk produce --binary`` reads it, ``rdk consume --format raw`` writes it):
each record is a 4-byte big-endian unsigned length N followed by N bytes of value;
N = 0xFFFFFFFF marks a null value (a tombstone) and no bytes follow.

Where things are: ``_parser`` (arguments, help texts, ``main``), ``_ui`` (tables, progress,
stderr lines), ``_framing`` (binary frames, line input), ``_formats`` (consume's output
formats), and one module per subcommand: ``_produce``, ``_consume``, ``_offsets``,
``_stats``, ``_mock``, ``_version``, ``_bench``.
"""

from __future__ import annotations

from ._bench import bench_candidates, cmd_bench, find_bench
from ._consume import ConsumeJob, cmd_consume
from ._formats import encode_messages
from ._framing import NULL_FRAME, frame, read_frames, write_frame
from ._mock import cmd_mock
from ._offsets import cmd_offsets_set, cmd_offsets_show
from ._parser import BROKERS, EXAMPLES, TOPIC, build_parser, main
from ._produce import SEND_CHUNK, cmd_produce
from ._stats import cmd_stats
from ._ui import UsageError, print_table
from ._version import cmd_version

__all__ = [
    "BROKERS",
    "EXAMPLES",
    "NULL_FRAME",
    "SEND_CHUNK",
    "TOPIC",
    "ConsumeJob",
    "UsageError",
    "bench_candidates",
    "build_parser",
    "cmd_bench",
    "cmd_consume",
    "cmd_mock",
    "cmd_offsets_set",
    "cmd_offsets_show",
    "cmd_produce",
    "cmd_stats",
    "cmd_version",
    "encode_messages",
    "find_bench",
    "frame",
    "main",
    "print_table",
    "read_frames",
    "write_frame",
]
