"""Fixtures of the reliability tests: a TLS-terminated Tansu broker (stunnel in front,
certificates made at test time), the rdk log, and the ``soak`` marker's switch.

Plain helpers shared with the other test directories (wait_until, read_log) are in
tests/helpers.py."""

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
