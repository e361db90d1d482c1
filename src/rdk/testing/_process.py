"""Process supervision for the test brokers, written once: start a server tied to this
process (it dies with it, even when this process is SIGKILLed), in a process group of its
own, its output in a log file; wait until it answers metadata; kill, stop, pause, resume;
never an orphan.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from .. import _binding
from .._binding import broker_ids
from ..errors import KafkaError, RdkError

__all__ = ["ServerProcess", "free_port", "wait_for_metadata"]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, below the kernel's ephemeral range
    when it can: a port from that range (``bind(0)``) can be taken, before the server binds
    it, as the local port of any outgoing connection (clients reconnecting all the time).

    Returns:
        The port number.
    """
    low = _ephemeral_low()
    if low > 12000:
        for _ in range(50):
            port = random.randrange(10000, low)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# exec'd in front of a server's command: asks the kernel for signal argv[1] when the starting
# thread goes (PR_SET_PDEATHSIG survives exec), and exits if the parent already went
_TIE_TO_PARENT = ("import ctypes, os, sys; ctypes.CDLL(None, use_errno=True).prctl(1, int(sys.argv[1])); "
                  "os.getppid() == int(sys.argv[2]) or sys.exit(3); os.execvp(sys.argv[3], sys.argv[3:])")


def server_process(cmd: Sequence[str], *, death_signal: int = signal.SIGTERM, **kw: Any) -> subprocess.Popen:
    """Popen a test server that dies with this process: on Linux, started from the main
    thread (the kernel signals when the *thread* that started a child exits, so a server
    started from another thread is left untied), it gets ``death_signal`` if the process is
    killed."""
    argv = list(cmd)
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        argv = [sys.executable, "-c", _TIE_TO_PARENT, str(int(death_signal)), str(os.getpid()), *argv]
    return subprocess.Popen(argv, **kw)


def stop_process(proc: subprocess.Popen, grace: float, *, group: bool = False) -> None:
    """SIGTERM (and SIGCONT, should it be paused), SIGKILL if it has not exited within
    ``grace`` seconds; reaped either way. ``group``: its process group (a session of its
    own) is SIGKILLed too before the reaping, so nothing it started is left behind."""
    if proc.returncode is None:
        _send(proc, signal.SIGTERM, False)
        _send(proc, signal.SIGCONT, False)
        if not _exited(proc, grace):
            _send(proc, signal.SIGKILL, False)
    kill_process(proc, group=group)


def kill_process(proc: subprocess.Popen, *, group: bool = False) -> None:
    """SIGKILL (a crash; with ``group`` its whole process group) and reap."""
    _send(proc, signal.SIGKILL, group)
    proc.wait(30.0)


def _send(proc: subprocess.Popen, sig: int, group: bool) -> None:
    """Signal a child not reaped yet (until then its pid, and so its group id, cannot be
    taken by another process)."""
    if proc.returncode is None:
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Whether the child exits within ``timeout`` seconds, without reaping it."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.returncode is not None:
            return True
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped by someone else
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def log_text(log: IO[bytes]) -> str:
    """What a server wrote to its log file so far ("" once the file is closed).

    Read with ``pread`` at explicit offsets: the server writes through the same open file
    (its stdout), so the file offset is shared with it, and each of its appends moves that
    offset to the end. Seeking to 0 and reading raced with those appends (a busy broker
    made the read start at the end and return nothing)."""
    if log.closed:
        return ""
    log.flush()
    fd = log.fileno()
    size = os.fstat(fd).st_size
    chunks: list[bytes] = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 24), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks).decode(errors="replace")


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The child's first stdout line, or "" if it printed none within ``timeout``."""
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(None if timeout >= threading.TIMEOUT_MAX else timeout)  # inf: without limit
    return str(lines[0]).strip() if lines else ""


def wait_for_metadata(bootstrap: str, deadline: float,
                      procs: subprocess.Popen | Sequence[subprocess.Popen] | None = None, *,
                      brokers: set[int] | None = None, props: Mapping[str, Any] | None = None) -> None:
    """Until the broker at ``bootstrap`` answers metadata (listing every id of ``brokers``,
    when given); RdkError if one of ``procs`` exits or ``deadline`` (monotonic) passes."""
    watched = [procs] if isinstance(procs, subprocess.Popen) else list(procs or ())
    last: Exception | str | None = None
    client = _binding.Client("producer", {"bootstrap.servers": bootstrap, "log_level": 0, **(props or {})},
                             on_error=lambda e: None)
    try:
        while time.monotonic() < deadline:
            for proc in watched:
                if proc.poll() is not None:
                    raise RdkError(f"broker process {proc.pid} exited with code {proc.returncode}")
            try:
                seen = broker_ids(client, 1.0)
            except KafkaError as e:
                last = e
                continue
            if brokers is None or brokers <= seen:
                return
            last = f"metadata lists brokers {sorted(seen)}, waiting for {sorted(brokers)}"
            time.sleep(0.1)  # a poll interval, not a synchronisation
        raise RdkError(f"broker at {bootstrap} did not answer metadata in time: {last}")
    finally:
        client.close()


class ServerProcess:
    """One supervised server process: ``start()`` runs ``cmd`` tied to this process (see
    ``server_process``) in a session of its own, stdout and stderr into ``log`` (a file path,
    appended to across restarts, or a temporary file); ``kill()`` (SIGKILL), ``stop()``
    (SIGTERM, then SIGKILL), ``pause()``/``resume()`` (SIGSTOP/SIGCONT); ``close()`` stops
    it for good."""

    def __init__(self, cmd: Sequence[str], *, log: str | None = None, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, death_signal: int = signal.SIGTERM, grace: float = 5.0) -> None:
        self.cmd = list(cmd)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.death_signal = death_signal
        self.grace = grace
        self._log: IO[bytes]
        if log is not None:
            self._log = open(log, "a+b")  # noqa: SIM115 - closed by close()
        else:
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        if self._log.closed:
            raise RdkError("server process is closed")
        if self.running:
            raise RdkError(f"server process {self.pid} is running")
        self.proc = server_process(self.cmd, death_signal=self.death_signal, stdout=self._log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, env=self.env, cwd=self.cwd)
        return self.proc

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the process group (a crash) and reap."""
        proc, self.proc = self.proc, None
        if proc is not None:
            kill_process(proc, group=True)

    def stop(self) -> None:
        """SIGTERM, SIGKILL after ``grace`` seconds; reaped."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc, self.grace, group=True)

    def pause(self) -> None:
        """SIGSTOP: the process holds its ports and answers nothing until ``resume()``."""
        if not self.running:
            raise RdkError("server process is not running")
        assert self.proc is not None
        _send(self.proc, signal.SIGSTOP, True)

    def resume(self) -> None:
        """SIGCONT after ``pause()``."""
        if self.proc is not None:
            _send(self.proc, signal.SIGCONT, True)

    def output(self) -> str:
        return log_text(self._log)

    def close(self) -> None:
        """Stop the process and close its log; idempotent."""
        self.stop()
        if not self._log.closed:
            self._log.close()
