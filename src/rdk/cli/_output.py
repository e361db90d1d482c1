"""stdout when it is a pipe: whether its reader took what was written, and whether it left.

``rdk consume | head -3``: a write succeeds once the kernel's pipe buffer holds the bytes,
not once the reader read them, and a reader that exits leaves nothing to write to until
the next write fails. So a batch counts as written (its offsets recorded, its share records
accepted) only once the pipe is empty again (Linux's FIONREAD on the write end), and a
watcher thread sees the reader leave (poll() reports POLLERR on the write end) so that a
consumer with nothing more to write ends too.
"""

from __future__ import annotations

import fcntl
import os
import select
import stat
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable

__all__ = ["PipeOutput"]

_POLL_MS = 200  # the watcher looks at its stop event this often
STOP_GRACE = 1.0  # seconds a stopping writer still waits for its reader to take a batch


class PipeOutput:
    """The write end of a pipe (``of_stdout()``: stdout's, or None when stdout is a file or
    a terminal, which take what is written)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def of_stdout(cls) -> PipeOutput | None:
        try:
            fd = sys.stdout.fileno()
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and _unread(fd) is not None:
                return cls(fd)
        except (OSError, ValueError, AttributeError):  # no real stdout (captured, closed)
            pass
        return None

    def closed(self, timeout_ms: int = 0) -> bool:
        """Whether the reader closed the pipe (waiting up to ``timeout_ms`` for it)."""
        poller = select.poll()
        poller.register(self.fd, 0)  # POLLERR/POLLHUP are reported without being asked
        return any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL)
                   for _, ev in poller.poll(timeout_ms))

    def drained(self, stop: threading.Event) -> bool:
        """Wait until the reader took every byte written (True); False if it closed the
        pipe with bytes unread, or has not read them within STOP_GRACE seconds after
        ``stop`` was set (what it read is unknown then)."""
        delay, stop_by = 0.001, None
        while True:
            if not _unread(self.fd):
                return True
            if self.closed():
                return False
            if stop.is_set():
                stop_by = stop_by or time.monotonic() + STOP_GRACE
                if time.monotonic() > stop_by:
                    return False
            time.sleep(delay)  # the reader is reading: look again soon
            delay = min(delay * 2, 0.05)

    def watch(self, on_closed: Callable[[], None], stop: threading.Event) -> threading.Thread:
        """A daemon thread that calls ``on_closed()`` once the reader closes the pipe (ends
        when ``stop`` is set)."""
        def run() -> None:
            while not stop.is_set():
                if self.closed(_POLL_MS):
                    on_closed()
                    return

        thread = threading.Thread(target=run, name="rdk-stdout-watch", daemon=True)
        thread.start()
        return thread


def _unread(fd: int) -> int | None:
    """Bytes written to the pipe ``fd`` and not read yet (None where FIONREAD is refused)."""
    try:
        buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return None
    return struct.unpack("i", buf)[0]
