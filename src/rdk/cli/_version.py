"""``rdk version``: the rdk and librdkafka versions and librdkafka's features."""

from __future__ import annotations

import argparse


def cmd_version(args: argparse.Namespace) -> int:
    """Print rdk's version, librdkafka's (run and built against) and its features."""
    from .. import __version__
    from .._binding import built_against, features, librdkafka_version

    built = built_against()
    print(f"rdk {__version__}")
    print(f"librdkafka {librdkafka_version()} (built against "
          f"{built >> 24}.{(built >> 16) & 0xFF}.{(built >> 8) & 0xFF})")
    print(f"features: {', '.join(sorted(features()))}")
    return 0
