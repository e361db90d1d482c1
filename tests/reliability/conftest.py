"""Fixtures of the reliability tests: a TLS-terminated Tansu broker (stunnel in front,
certificates made at test time), and helpers shared by the fault and crash tests."""

from __future__ import annotations

import logging
import os
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from tls import Pki, Stunnel, stunnel_binary

from rdk import Admin
from rdk.errors import KafkaError
from rdk.mock import TansuBroker, free_port


def pytest_collection_modifyitems(config, items):
    """``soak`` tests run only with RDK_SOAK=1."""
    if os.environ.get("RDK_SOAK") == "1":
        return
    skip = pytest.mark.skip(reason="soak test: set RDK_SOAK=1 to run it")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


def wait_until(predicate, timeout: float, interval: float = 0.02, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class TlsSite:
    """A Tansu broker reachable only through stunnel, plus the PKI that made its certificates."""

    def __init__(self, directory: pathlib.Path) -> None:
        self.pki = Pki(directory / "ca")
        self.other = Pki(directory / "other-ca", "other-ca")
        self.server = self.pki.issue("server")
        self.wrong_name = self.pki.issue("wrong-name", san="DNS:not-this-host.invalid")
        self.client = self.pki.issue("client", san="DNS:rdk-client", usage="clientAuth")
        self.rogue_client = self.other.issue("rogue-client", san="DNS:rdk-client", usage="clientAuth")
        self._closers: list = []
        try:
            self.plain_port = free_port()
            self.tls_port = free_port()
            # Tansu speaks plaintext on plain_port and tells clients to use tls_port.
            self._add(TansuBroker(port=self.plain_port, advertised_port=self.tls_port, wait=False))
            self.stunnel = self._add(Stunnel(self.tls_port, self.plain_port, self.server))
            self.bootstrap = f"127.0.0.1:{self.tls_port}"
            self.wait_ready(self.bootstrap, self.ssl_options())
        except BaseException:
            self.close()
            raise

    def _add(self, closable):
        self._closers.append(closable)
        return closable

    def ssl_options(self, **extra) -> dict:
        return {"security.protocol": "SSL", "ssl.ca.location": str(self.pki.ca.cert), **extra}

    def extra_listener(self, identity, client_ca=None, advertise_self: bool = False) -> Stunnel:
        """Another stunnel in front of a broker (``.bootstrap`` is its address).

        With ``advertise_self`` a new Tansu advertising the new port is started behind it
        (needed when every connection must pass this listener, e.g. mutual TLS)."""
        port = free_port()
        target = self.plain_port
        if advertise_self:
            target = free_port()
            self._add(TansuBroker(port=target, advertised_port=port, wait=False))
        return self._add(Stunnel(port, target, identity, client_ca=client_ca))

    @staticmethod
    def wait_ready(bootstrap: str, options: dict, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with Admin(bootstrap, {**options, "log_level": 0}) as admin:
            while True:
                try:
                    admin.list_topics(timeout=1.0)
                    return
                except KafkaError:
                    if time.monotonic() > deadline:
                        raise

    def close(self) -> None:
        while self._closers:
            self._closers.pop().close()


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    """Tansu behind stunnel with a CA made by openssl for this module; always torn down."""
    if stunnel_binary() is None:
        pytest.skip("stunnel4 is not installed (apt-get install stunnel4)")
    site = TlsSite(tmp_path_factory.mktemp("pki"))
    yield site
    site.close()


@pytest.fixture
def rdk_log(caplog):
    """Everything logged on the ``rdk`` logger (librdkafka's logs and errors included)."""
    caplog.set_level(logging.DEBUG, logger="rdk")
    return caplog


def read_log(bootstrap: str, topic: str, partitions, timeout: float = 60.0) -> dict[int, list]:
    """Every message now in ``partitions`` of ``topic``: {partition: [(offset, key, value)]}.

    Reads up to each partition's high watermark (Admin.watermarks) through the C batch
    helper, so the test sees exactly what the broker kept.
    """
    from rdk import _binding
    from rdk._binding import ffi
    from rdk._fetch import Fetcher

    with Admin(bootstrap) as admin:
        highs = {p: admin.watermarks(topic, p) for p in partitions}
    rows: dict[int, list] = {p: [] for p in partitions}
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "log_level": 3})
    fetcher = Fetcher(client, topic)
    try:
        for p, (low, high) in highs.items():
            if high > low:
                fetcher.start(p, low)
        want = sum(high - low for low, high in highs.values())
        got = 0
        deadline = time.monotonic() + timeout
        while got < want:
            assert time.monotonic() < deadline, f"read {got} of {want} messages of {topic}"
            b = fetcher.fetch(200)
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                vo, ko = b.value_offsets, b.key_offsets
                value = ffi.unpack(b.values + vo[i], vo[i + 1] - vo[i])
                key = ffi.unpack(b.keys + ko[i], ko[i + 1] - ko[i]) if ko[i + 1] > ko[i] else None
                rows[b.partition[i]].append((b.offset[i], key, value))
            got += b.n
    finally:
        fetcher.close()
        client.close()
    return rows
