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


def test_rdk_mock_serves_a_registry_and_stops_it(tmp_path):
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "rdk", "mock", "--brokers", "1", "--schema-registry"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("RDK_BROKERS=127.0.0.1:")
        line = proc.stdout.readline().strip()
        assert line.startswith("RDK_SCHEMA_REGISTRY=http://127.0.0.1:"), (line, proc.stderr.read())
        url = line.split("=", 1)[1]
        with urllib.request.urlopen(url + "/subjects", timeout=10) as resp:
            assert json.loads(resp.read()) == []
        jvms = [p for p in psutil.Process(proc.pid).children(recursive=True) if "java" in p.name()]
        assert jvms
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in jvms)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
