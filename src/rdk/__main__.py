"""``python -m rdk``: the rdk command line (see rdk.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
