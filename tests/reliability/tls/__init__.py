"""TLS test helpers: a throwaway PKI made with the ``openssl`` command and a
``stunnel`` TLS terminator in front of a plaintext broker.

Every key and certificate is generated at test time into a temporary directory;
none is committed. ``Stunnel`` processes are always stopped by ``close()``.
"""

from __future__ import annotations

import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

__all__ = ["Identity", "Pki", "Stunnel", "stunnel_binary"]


def stunnel_binary() -> str | None:
    """Debian's stunnel (``stunnel4`` or ``stunnel``), or None if not installed."""
    return shutil.which("stunnel4") or shutil.which("stunnel")


def _openssl(*args: str, cwd: pathlib.Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {res.stderr.strip()}")


@dataclass(frozen=True)
class Identity:
    """A certificate and its private key (PEM files)."""

    cert: pathlib.Path
    key: pathlib.Path


class Pki:
    """A certificate authority in ``directory`` that signs server and client certificates."""

    def __init__(self, directory: pathlib.Path, name: str = "rdk-test-ca") -> None:
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.ca = Identity(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        _openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(self.ca.key), "-out", str(self.ca.cert), "-days", "2",
            "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=self.dir,
        )

    def issue(self, name: str, *, san: str = "IP:127.0.0.1,DNS:localhost",
              usage: str = "serverAuth") -> Identity:
        """A leaf certificate for ``name`` with subjectAltName ``san`` signed by this CA."""
        ident = Identity(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        csr = self.dir / f"{name}.csr"
        ext = self.dir / f"{name}.ext"
        ext.write_text(
            f"subjectAltName={san}\n"
            "basicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            f"extendedKeyUsage={usage}\n"
        )
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(ident.key), "-out", str(csr), "-subj", f"/CN={name}",
            cwd=self.dir,
        )
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(self.ca.cert), "-CAkey", str(self.ca.key),
            "-CAcreateserial", "-out", str(ident.cert), "-days", "2", "-extfile", str(ext),
            cwd=self.dir,
        )
        return ident


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Stunnel:
    """stunnel accepting TLS on 127.0.0.1:``accept_port`` and forwarding plaintext to
    127.0.0.1:``connect_port``. With ``client_ca`` it demands a client certificate
    signed by that CA (mutual TLS). Waits until the port accepts connections."""

    def __init__(self, accept_port: int, connect_port: int, server: Identity, *,
                 client_ca: pathlib.Path | None = None, startup_timeout: float = 10.0) -> None:
        binary = stunnel_binary()
        if binary is None:
            raise RuntimeError("stunnel is not installed (Debian package stunnel4)")
        self.accept_port = accept_port
        self.bootstrap = f"127.0.0.1:{accept_port}"
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="rdk-stunnel-"))
        self.log = self.dir / "stunnel.log"
        lines = [
            "foreground = yes",
            "pid =",
            f"output = {self.log}",
            "debug = 5",
            "[kafka]",
            f"accept = 127.0.0.1:{accept_port}",
            f"connect = 127.0.0.1:{connect_port}",
            f"cert = {server.cert}",
            f"key = {server.key}",
        ]
        if client_ca is not None:
            lines += ["verify = 2", f"CAfile = {client_ca}"]
        conf = self.dir / "stunnel.conf"
        conf.write_text("\n".join(lines) + "\n")
        self._proc: subprocess.Popen | None = subprocess.Popen(
            [binary, str(conf)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + startup_timeout
        while not _port_open(accept_port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                out = self.output()
                self.close()
                raise RuntimeError(f"stunnel did not start listening on {accept_port}: {out}")
            time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        """Stop stunnel (SIGTERM, then SIGKILL after 5 s) and remove its files. Idempotent."""
        proc, self._proc = self._proc, None
        for stop in ((proc.terminate, proc.kill) if proc is not None else ()):
            if proc.poll() is not None:
                break
            stop()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                continue
        shutil.rmtree(self.dir, ignore_errors=True)
