"""``rdk mock``: serve an embedded broker in the foreground (see rdk.testing)."""

from __future__ import annotations

import argparse

from ._ui import UsageError


def cmd_mock(args: argparse.Namespace) -> int:
    """Serve a broker of ``args.kind`` (``args.brokers`` nodes) with ``args.topic`` topics
    until interrupted."""
    from ..testing import KINDS, serve  # python -m rdk.mock's serve(): importable, not __all__

    if args.list_kinds:
        print(" ".join(KINDS))
        return 0
    try:
        KINDS[args.kind].check_brokers(args.brokers)
    except (KeyError, ValueError) as e:
        raise UsageError(f"--brokers: {e}") from None
    return serve(args.brokers, args.topic, kind=args.kind, schema_registry=args.schema_registry)
