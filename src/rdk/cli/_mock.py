"""``rdk mock``: serve librdkafka's mock cluster in the foreground (see rdk.mock)."""

from __future__ import annotations

import argparse

from ._ui import UsageError


def cmd_mock(args: argparse.Namespace) -> int:
    """Serve ``args.brokers`` mock brokers with ``args.topic`` topics until interrupted."""
    from .. import mock

    if args.brokers < 1:
        raise UsageError(f"--brokers must be >= 1, got {args.brokers}")
    return mock.serve(args.brokers, args.topic)
