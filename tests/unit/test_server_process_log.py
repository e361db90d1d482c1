"""ServerProcess.output(): what a server wrote so far, read while the server goes on writing."""

from __future__ import annotations

import sys
import time

from rdk.testing._process import ServerProcess

# A server that writes its first line, then appends as fast as it can (bounded in count).
_WRITER = """
import sys
out = sys.stdout
out.write("first line\\n"); out.flush()
for i in range(2_000_000):
    out.write(f"line {i}\\n"); out.flush()
"""


def test_the_whole_log_is_read_while_the_server_appends_to_it(tmp_path):
    """The server appends through the same open file (its stdout), so it shares the file's
    offset: a read that seeks that offset to 0 raced with its appends and came back empty."""
    server = ServerProcess([sys.executable, "-c", _WRITER], log=str(tmp_path / "server.log"))
    try:
        server.start()
        deadline = time.monotonic() + 30
        while not server.output() and time.monotonic() < deadline:  # the interpreter starting
            time.sleep(0.01)
        seen = []
        while server.running and len(seen) < 300:
            seen.append(server.output())
        assert len(seen) >= 20, "the writer ended before the reads could race with it"
        assert all(text.startswith("first line\n") for text in seen), \
            [text[:40] for text in seen if not text.startswith("first line\n")][:3]
        sizes = [len(text) for text in seen]
        assert sizes == sorted(sizes), "a later read saw less than an earlier one"
    finally:
        server.close()


def test_a_closed_log_reads_as_nothing(tmp_path):
    server = ServerProcess([sys.executable, "-c", "print('hello')"])
    server.start()
    server.proc.wait(30)
    assert server.output() == "hello\n"
    server.close()
    assert server.output() == ""
