"""``rdk consume ... | head -3``: a reader that takes a few lines and closes the pipe. A
record counts as written only once the reader took it out of the pipe: the share member
accepts exactly those (the rest is released and the group keeps it), the plain consumer
records offsets only for them, and either process ends by itself when its output closes,
however few records there are (no signal is sent here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest
from helpers import produce, stored, values, wait_until

import rdk

pytestmark = pytest.mark.timeout(300)

TOTAL = 100
TAKEN = b"".join(v + b"\n" for v in values(3))  # what the reader takes: 3 lines, 9 bytes


def _rdk(*args: str) -> subprocess.Popen:
    script = "import sys\nfrom rdk.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _take_and_close(proc: subprocess.Popen, n: int) -> bytes:
    """Read exactly ``n`` bytes of proc's stdout (no read-ahead), then close the pipe."""
    fd = proc.stdout.fileno()
    got = b""
    while len(got) < n:
        chunk = os.read(fd, n - len(got))
        assert chunk, f"stdout ended after {got!r}"
        got += chunk
    proc.stdout.close()
    return got


def _ends_by_itself(proc: subprocess.Popen) -> str:
    try:
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return err


def test_share_member_accepts_only_what_the_reader_took_and_ends(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="spipe")
    produce(kafka_cluster, topic, 0, values(TOTAL))
    group = f"g-{uuid.uuid4().hex[:10]}"
    proc = _rdk("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic, "--share", group,
                "--start-offset", "earliest")
    lines = _take_and_close(proc, len(TAKEN)).splitlines()
    err = _ends_by_itself(proc)
    m = re.search(r"accepted (\d+), released (\d+), rejected 0", err)
    assert m, err
    accepted = int(m.group(1))
    # a batch is accepted only when the reader took all of it out of the pipe: the reader
    # took 3 lines, so at most those (0 when the first batch was longer than 3 records)
    assert accepted <= len(lines) and int(m.group(2)) >= 1, err

    # the group kept everything that was not accepted: exactly TOTAL - accepted records
    rest: list[bytes] = []
    with rdk.ShareConsumer(kafka_cluster.bootstrap_servers, topic,
                           lambda info: rest.extend(x.value for x in info.messages),
                           group_id=group) as member:
        member.start()
        wait_until(lambda: len(rest) >= TOTAL - accepted, 60, f"{TOTAL - accepted} records")
    assert len(rest) == len(set(rest)) == TOTAL - accepted
    assert set(rest) | set(lines) == set(values(TOTAL))


def test_plain_consumer_records_offsets_only_for_what_the_reader_took_and_ends(
        kafka_cluster, new_topic, tmp_path):
    topic = new_topic(kafka_cluster, 1, prefix="ppipe")
    produce(kafka_cluster, topic, 0, values(TOTAL))
    proc = _rdk("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic,
                "--offset-dir", str(tmp_path))
    assert _take_and_close(proc, len(TAKEN)) == TAKEN
    _ends_by_itself(proc)
    recorded = stored(tmp_path, topic, 0)
    # the first batch ends at or after the 3rd record: recorded only if the reader took all
    # of it, i.e. at most the 3 lines read (offsets 0..2)
    assert recorded is None or recorded <= 2, recorded
