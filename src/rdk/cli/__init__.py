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

# the command line is the interface (docs/guide/cli.md), not a Python API: main(argv) is what
# the ``rdk`` entry point and ``python -m rdk`` call; the subcommands stay in private modules
from ._parser import main as main

__all__: list[str] = []
