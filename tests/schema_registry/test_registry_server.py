"""rdk.testing.SchemaRegistry: Apicurio Registry on loopback, its JVM never outliving it, a
start failure that shows the server's own words."""

from __future__ import annotations

import json
import urllib.request

import psutil
import pytest

from rdk import RdkError
from rdk.testing import SchemaRegistry


def test_session_registry_serves_confluent_api_on_loopback_only(schema_registry):
    assert schema_registry.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(schema_registry.url + "/subjects", timeout=10) as resp:
        assert isinstance(json.loads(resp.read()), list)
    jvm = psutil.Process(schema_registry._server.pid)
    ports = {c.laddr.port: c.laddr.ip for c in jvm.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    assert schema_registry.port in ports and schema_registry.management_port in ports
    assert {ip.removeprefix("::ffff:") for ip in ports.values()} == {"127.0.0.1"}, ports


def test_start_failure_shows_log_tail_and_leaves_no_process(tmp_path, monkeypatch):
    (tmp_path / "quarkus-run.jar").write_bytes(b"not a jar")
    monkeypatch.setenv("RDK_APICURIO_HOME", str(tmp_path))
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(RdkError, match=r"(?s)exited during start-up.*jarfile"):
        SchemaRegistry(start_timeout=60)
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


def test_missing_package_names_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("RDK_APICURIO_HOME", str(tmp_path))
    with pytest.raises(RdkError, match=r"scripts/setup\.sh"):
        SchemaRegistry()


def test_close_stops_the_jvm(schema_registry):
    # a second, short-lived registry: its JVM is gone once close() returns
    with SchemaRegistry() as other:
        pid = other._server.pid
        assert psutil.pid_exists(pid)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
