"""The rdk command line misused: a broker that is not there, -X with a bad value (under an
alias), and rdk produce interrupted by SIGINT / SIGTERM."""

from __future__ import annotations

import array
import fcntl
import io
import logging
import re
import signal
import socket
import subprocess
import sys
import termios
import time

import pytest
from helpers import read_log, wait_until

from rdk.cli._ui import RepeatFoldingHandler

PY = sys.executable


def rdk_popen(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "rdk", *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def dead_broker() -> str:
    """host:port where nobody listens (a port the kernel just gave out, closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def pipe_drained(proc: subprocess.Popen) -> bool:
    """True once the child has read everything written to its stdin (FIONREAD on the pipe)."""
    left = array.array("i", [0])
    fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, left)
    return left[0] == 0


# ---- a broker that is not there ------------------------------------------------------------


def test_commands_against_a_dead_broker_print_each_error_once_and_name_the_broker(tmp_path):
    broker = dead_broker()
    runs = {"produce": rdk_popen("produce", "-b", broker, "-t", "t"),
            "consume": rdk_popen("consume", "-b", broker, "-t", "t", "--offset-dir",
                                 str(tmp_path / "off"))}
    for name, proc in runs.items():
        _, err = proc.communicate(b"one\n" if name == "produce" else None, timeout=60)
        lines = err.decode().splitlines()
        assert proc.returncode == 1, err
        assert len(lines) < 30, err  # it was ~200, one per librdkafka error event
        # one line when an error first happens, one count line at the end if it repeated
        assert sum("_ALL_BROKERS_DOWN" in line for line in lines) <= 2, err
        counts = [int(m.group(1)) for line in lines
                  if (m := re.search(r"\(repeated (\d+) more times\)$", line))]
        assert counts and max(counts) > 10, err
        assert lines[-1].startswith(f"rdk {name}: error: ") and broker in lines[-1], err
        assert len(set(lines)) == len(lines), err


def test_repeats_are_folded_under_one_key_numbers_aside():
    out = io.StringIO()
    handler = RepeatFoldingHandler(out)
    log = logging.getLogger("rdk.test-fold")
    log.addHandler(handler)
    log.propagate = False
    try:
        for i in range(5):
            log.warning("librdkafka error: _ALL_BROKERS_DOWN: %d/1 brokers are down", i % 2)
        log.warning("FAIL: h:9092/1: Connect failed (after 0ms in state CONNECT)")
        log.warning("FAIL: h:9092/1: Connect failed (after 3ms in state CONNECT, "
                    "4 identical error(s) suppressed)")
        log.warning("FAIL: h:9093/2: Connect failed (after 0ms in state CONNECT)")
        handler.report_repeats()
    finally:
        log.removeHandler(handler)
        log.propagate = True
    assert out.getvalue().splitlines() == [
        "librdkafka error: _ALL_BROKERS_DOWN: 0/1 brokers are down",
        "FAIL: h:9092/1: Connect failed (after 0ms in state CONNECT)",
        "FAIL: h:9093/2: Connect failed (after 0ms in state CONNECT)",
        "librdkafka error: _ALL_BROKERS_DOWN: 0/1 brokers are down (repeated 4 more times)",
        "FAIL: h:9092/1: Connect failed (after 0ms in state CONNECT) (repeated 5 more times)",
    ]


# ---- -X with a bad value -------------------------------------------------------------------


def test_bad_x_value_names_the_property_written_its_value_and_the_alias():
    r = subprocess.run([PY, "-m", "rdk", "produce", "-b", "127.0.0.1:1", "-t", "x",
                        "-X", "linger.ms=abc"], capture_output=True, timeout=60, check=False)
    assert r.returncode == 1
    assert r.stderr.decode().splitlines() == [
        'rdk produce: error: -X: Invalid value for configuration property '
        '"queue.buffering.max.ms" (given: linger.ms=\'abc\', an alias of '
        "'queue.buffering.max.ms')"]


def test_library_config_errors_name_the_key_and_value_given():
    import rdk

    with pytest.raises(rdk.ConfigError, match=r"\(given: acks='maybe', an alias of "
                                              r"'request.required.acks'\)"):
        rdk.Producer("127.0.0.1:1", driver_options={"acks": "maybe"})
    with pytest.raises(rdk.ConfigError) as info:  # librdkafka's text names both: unchanged
        rdk.Producer("127.0.0.1:1", driver_options={"compression.codec": "zip"})
    assert str(info.value) == ('driver_options: Invalid value "zip" for configuration '
                               'property "compression.codec"')
    with pytest.raises(rdk.ConfigError) as info:  # a secret's value never shows
        rdk.Producer("127.0.0.1:1", driver_options={"ssl.key.password": 5.5,
                                                    "sasl.password": "s3cret", "acks": "x"})
    assert "s3cret" not in str(info.value)


# ---- rdk produce interrupted ---------------------------------------------------------------


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_interrupted_produce_sends_what_it_read_and_prints_the_summary(mock_cluster, sig, code):
    topic = f"stopped-{sig.name.lower()}"
    mock_cluster.create_topic(topic, 1)
    proc = rdk_popen("produce", "-b", mock_cluster.bootstrap_servers, "-t", topic)
    try:
        proc.stdin.write(b"a\nb\nc\n")
        proc.stdin.flush()  # stdin stays open: produce waits for more input
        wait_until(lambda: pipe_drained(proc), 30, "produce read its input")
        started = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert time.monotonic() - started < 10  # the flush is bounded (5 s)
    text = err.decode()
    assert re.search(rf"^rdk produce: interrupted by {sig.name} \(input not read to the end\); "
                     r"sent 3, failed 0, ", text, re.M), text
    assert [v for _, _, v in read_log(mock_cluster.bootstrap_servers, topic, [0])[0]] == [
        b"a", b"b", b"c"]


def test_produce_interrupted_while_no_broker_answers_ends_within_a_second():
    proc = rdk_popen("produce", "-b", dead_broker(), "-t", "t")
    try:
        first = proc.stderr.readline()  # librdkafka's first connect failure: it is running
        assert b"Connect to" in first, first
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 9  # the metadata wait is cut short, not 10 s
    assert b"rdk produce: interrupted by SIGINT (input not read to the end); sent 0, failed 0" \
        in err, err
