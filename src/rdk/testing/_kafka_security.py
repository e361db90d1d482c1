"""The security of a ``KafkaCluster``'s listeners: which listeners and SASL users it
offers (checked), the CA and server certificate of its SSL listeners (openssl), and the
broker properties and ``kafka-storage format`` arguments that enable them."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import RdkError

__all__ = ["LISTENERS", "SASL_MECHANISMS", "check_listeners", "check_users", "make_tls",
           "scram_arguments", "security_properties"]

#: The listeners a cluster may offer besides its controller's (PLAINTEXT always runs).
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The SASL mechanisms the SASL listeners enable.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

_SAFE_SECRET = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}$")
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def check_listeners(listeners: Iterable[str]) -> tuple[str, ...]:
    """The listeners asked for, known ones only, ``"PLAINTEXT"`` first, each once."""
    if isinstance(listeners, str):
        raise TypeError(f"listeners must be a sequence of names like ('PLAINTEXT', 'SSL'), "
                        f"got the str {listeners!r}")
    wanted = ["PLAINTEXT"]
    for name in listeners:
        if name not in LISTENERS:
            raise ValueError(f"unknown listener {name!r}: expected one of {', '.join(LISTENERS)}")
        if name not in wanted:
            wanted.append(name)
    return tuple(wanted)


def check_users(users: Mapping[str, str] | None) -> dict[str, str]:
    """``{name: password}`` of the SASL users, each safe to write into JAAS and SCRAM options."""
    if users is None:
        return {}
    if not isinstance(users, Mapping):
        raise TypeError(f"sasl_users must be a mapping {{name: password}}, got {type(users).__name__}")
    for name, password in users.items():
        for what, value in (("sasl user name", name), (f"password of sasl user {name!r}", password)):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be str, got {type(value).__name__}")
            if not _SAFE_SECRET.match(value):
                raise ValueError(f"{what} must be 1-128 of A-Z a-z 0-9 _ . @ + - (it goes into "
                                 "JAAS and SCRAM options unquoted)")
    return dict(users)


def _openssl(args: list[str], cwd: Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RdkError(f"openssl {' '.join(args)} failed: {res.stderr.strip()}")


def make_tls(folder: Path) -> tuple[Path, Path]:
    """A CA (ca.pem) and, signed by it, a server key and certificate for 127.0.0.1/localhost
    in one PEM keystore (server.pem: PKCS#8 key, then the chain)."""
    if not shutil.which("openssl"):
        raise RdkError("KafkaCluster's SSL listeners need the openssl command")
    folder.mkdir(parents=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
              "-subj", "/CN=rdk-kafka-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], folder)
    _openssl(["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], folder)
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                    "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
              "-CAcreateserial", "-out", "server.crt", "-days", "30", "-extfile", "ext.cnf"], folder)
    keystore = folder / "server.pem"
    keystore.write_text((folder / "server.key").read_text() + (folder / "server.crt").read_text()
                        + (folder / "ca.pem").read_text())
    return folder / "ca.pem", keystore


def security_properties(listeners: Iterable[str], sasl_users: Mapping[str, str],
                        keystore: Path | None) -> dict[str, Any]:
    """The broker properties of the SASL listeners (every mechanism, ``sasl_users`` for
    PLAIN) and of the SSL ones (``keystore``: None without them)."""
    props: dict[str, Any] = {}
    sasl = [name for name in listeners if name.startswith("SASL_")]
    if sasl:
        props["sasl.enabled.mechanisms"] = ",".join(SASL_MECHANISMS)
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in sasl_users.items())
        jaas = {
            "plain": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "scram-sha-256": _SCRAM,
            "scram-sha-512": _SCRAM,
            "oauthbearer": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                           'required unsecuredLoginStringClaim_sub="admin";',
        }
        for name in sasl:
            for mech, text in jaas.items():
                props[f"listener.name.{name.lower()}.{mech}.sasl.jaas.config"] = text
    if keystore is not None:
        props["ssl.keystore.type"] = "PEM"
        props["ssl.keystore.location"] = keystore
        props["ssl.client.auth"] = "none"
    return props


def scram_arguments(sasl_users: Mapping[str, str]) -> list[str]:
    """``kafka-storage format`` arguments that store every user's SCRAM credentials."""
    scram = []
    for user, password in sasl_users.items():
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            scram += ["--add-scram", f"{mech}=[name={user},password={password}]"]
    return scram
