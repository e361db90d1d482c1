"""A real schema registry for tests: ``SchemaRegistry``, Apicurio Registry (its in-memory H2
storage) serving Confluent's REST API at ``<url>`` (``/apis/ccompat/v7``), one JVM on 127.0.0.1.

The server package comes from Maven Central through ``scripts/setup.sh``
(``.deps/apicurio-registry-<version>``, or the folder named by ``RDK_APICURIO_HOME``); it needs a
Java 21 or newer, found at run time (``RDK_REGISTRY_JAVA``, ``JAVA_HOME``, ``java`` on PATH, then
the JDKs under ``/usr/lib/jvm``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..errors import RdkError
from ._process import ServerProcess, free_port

__all__ = ["SchemaRegistry"]

APICURIO_VERSION = "3.3.3"
"""The Apicurio Registry release scripts/setup.sh fetches (scripts/apicurio/pom.xml pins the same)."""

_REPO = Path(__file__).resolve().parents[3]
_JVM_DIRS = ("/usr/lib/jvm", "/usr/local/lib/jvm", "/opt/java")


def apicurio_home() -> Path:
    """The unpacked Apicurio Registry: ``$RDK_APICURIO_HOME`` if set, else this source tree's
    ``.deps/apicurio-registry-<version>`` (scripts/setup.sh).

    Returns:
        The folder holding ``quarkus-run.jar`` (Quarkus' fast-jar layout).

    Raises:
        rdk.RdkError: It is not there.
    """
    env = os.environ.get("RDK_APICURIO_HOME")
    home = Path(env) if env else _REPO / ".deps" / f"apicurio-registry-{APICURIO_VERSION}"
    if _run_jar(home) is None:
        raise RdkError(f"Apicurio Registry {APICURIO_VERSION} is not in {home} (no quarkus-run.jar): "
                       "run scripts/setup.sh (it unpacks it from Maven Central with mvn), or set "
                       "RDK_APICURIO_HOME to an unpacked apicurio-registry-app")
    return home


def _run_jar(home: Path) -> Path | None:
    for jar in (home / "quarkus-run.jar", home / "quarkus-app" / "quarkus-run.jar",
                *home.glob("*/quarkus-app/quarkus-run.jar")):
        if jar.is_file():
            return jar
    return None


def _java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True,
                             text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"java\.specification\.version = (\d+)", out)
    return int(m.group(1)) if m else None


def find_java21() -> str:
    """A ``java`` of version 21 or newer: ``$RDK_REGISTRY_JAVA``, ``$JAVA_HOME/bin/java``, the
    ``java`` on PATH, then the newest under ``/usr/lib/jvm`` (and ``/usr/local/lib/jvm``,
    ``/opt/java``).

    Returns:
        The path of the executable.

    Raises:
        rdk.RdkError: None of them is 21 or newer (the message lists what was found).
    """
    candidates: list[str] = []
    if os.environ.get("RDK_REGISTRY_JAVA"):
        candidates.append(os.environ["RDK_REGISTRY_JAVA"])
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"], "bin", "java")))
    if shutil.which("java"):
        candidates.append(str(shutil.which("java")))
    for base in _JVM_DIRS:
        if Path(base).is_dir():
            candidates.extend(str(p / "bin" / "java") for p in sorted(Path(base).iterdir(), reverse=True))
    seen: dict[str, int | None] = {}
    for java in candidates:
        if java in seen or not Path(java).is_file():
            continue
        seen[java] = major = _java_major(java)
        if major is not None and major >= 21:
            return java
    found = ", ".join(f"{j} ({v or '?'})" for j, v in seen.items()) or "none"
    raise RdkError("Apicurio Registry needs Java 21 or newer; found: " + found +
                   ". Install one (e.g. a Temurin 21+ JDK) or set RDK_REGISTRY_JAVA to its java")


class SchemaRegistry:
    """Apicurio Registry on 127.0.0.1 (HTTP and management ports free ones), storage in memory.

    ``url`` is the Confluent-compatible base URL (``http://127.0.0.1:P/apis/ccompat/v7``) to give
    to ``rdk.schema_registry.SchemaRegistryClient`` or confluent-kafka's client. The JVM dies with
    this process (even on SIGKILL) and runs in a process group of its own; ``close()`` stops it.

    Args:
        start_timeout: Seconds to wait until it reports ready.
        heap: The JVM's ``-Xmx`` (``"256m"``).

    Raises:
        rdk.RdkError: No server package or no Java 21+, or it did not become ready (with the
            tail of its log).
    """

    def __init__(self, *, start_timeout: float = 120.0, heap: str = "256m") -> None:
        jar = _run_jar(apicurio_home())
        assert jar is not None
        java = find_java21()
        self.port = free_port()
        """The HTTP port (REST API) on 127.0.0.1."""
        self.management_port = free_port()
        """The management port (``/health/ready``) on 127.0.0.1."""
        while self.management_port == self.port:
            self.management_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/apis/ccompat/v7"
        """The Confluent-compatible REST base URL."""
        cmd = [java, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={self.port}",
               "-Dquarkus.management.host=127.0.0.1", f"-Dquarkus.management.port={self.management_port}",
               "-Dquarkus.banner.enabled=false", "-jar", str(jar)]
        self._server = ServerProcess(cmd, cwd=str(jar.parent), grace=10.0)
        self._server.start()
        try:
            self._wait_ready(time.monotonic() + start_timeout)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, deadline: float) -> None:
        health = f"http://127.0.0.1:{self.management_port}/health/ready"
        last = "no answer"
        while time.monotonic() < deadline:
            if not self._server.running:
                raise RdkError(f"Apicurio Registry exited during start-up; its log ends:\n{self._tail()}")
            try:
                with urllib.request.urlopen(health, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except (OSError, urllib.error.URLError) as e:
                last = str(e)
            time.sleep(0.2)  # a poll interval, not a synchronisation
        raise RdkError(f"Apicurio Registry was not ready at {health} in time ({last}); its log ends:\n"
                       f"{self._tail()}")

    def _tail(self, lines: int = 30) -> str:
        return "\n".join(self._server.output().splitlines()[-lines:])

    def log(self) -> str:
        """What the server wrote so far."""
        return self._server.output()

    def close(self) -> None:
        """Stop the server (idempotent)."""
        self._server.close()

    def __enter__(self) -> SchemaRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SchemaRegistry {self.url}>"
