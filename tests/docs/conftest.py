"""The environments the documentation samples run in (see test_samples.py for the convention).

- ``secured_kafka``: a 1-node Apache Kafka with SSL and SASL_SSL listeners (PLAIN, SCRAM and
  OAUTHBEARER with unsecured JWS tokens) and one user, started once per session, only when a
  block with ``env=sasl`` runs.
- ``sample_env(name, topics)``: the environment variables of a block and its fresh topics.
"""

from __future__ import annotations

import secrets
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import kafka_unavailable, wait_until

ROOT = Path(__file__).resolve().parents[2]
SASL_USER = "alice"


def spark_kafka_jars() -> list[str]:
    """The jars of Spark's JVM Kafka connector that scripts/setup.sh fetched, or [] (the same
    lookup as tests/spark/conftest.py's ``spark_kafka_jars``)."""
    for folder in sorted(ROOT.glob(".deps/spark-sql-kafka-*"), reverse=True):
        if (folder / ".rdk-fetched").is_file():
            return sorted(str(j) for j in (folder / "jars").glob("*.jar"))
    return []


@dataclass
class SecuredKafka:
    """The session's secured cluster and the password of its one user."""

    cluster: Any
    password: str


@pytest.fixture(scope="session")
def secured_kafka() -> Iterator[SecuredKafka]:
    """A 1-node Apache Kafka with PLAINTEXT, SSL and SASL_SSL listeners and user ``alice``
    (the approach of tests/reliability/test_auth_errors.py), closed at the end of the session."""
    why = kafka_unavailable()
    if why:
        pytest.skip(f"Apache Kafka: {why}")
    from rdk.testing import KafkaCluster

    password = secrets.token_urlsafe(12)
    with KafkaCluster(1, listeners=("SSL", "SASL_SSL"), sasl_users={SASL_USER: password}) as kc:
        yield SecuredKafka(kc, password)


def drop_topics(bootstrap: str, names: list[str]) -> None:
    """Delete those of ``names`` that exist and wait until the metadata no longer lists them."""
    from rdk import Admin

    with Admin(bootstrap) as admin:
        existing = [t.name for t in admin.list_topics(timeout=30) if t.name in names]
        if not existing:
            return
        admin.delete_topics(existing)
        wait_until(lambda: not {t.name for t in admin.list_topics(timeout=30)} & set(existing), 60,
                   what=f"topics {existing} to be deleted")


@pytest.fixture
def sample_env(request) -> Iterator[Any]:
    """sample_env(env, topics, cwd) -> the block's environment variables, its ``topics``
    ({name: partitions}) created fresh on the environment's cluster and deleted afterwards
    (env=sasl: the CA is copied to ``cwd``/ca.pem too)."""
    made: list[tuple[str, list[str]]] = []

    def make(env: str, topics: dict[str, int], cwd: Path) -> dict[str, str]:
        variables: dict[str, str] = {}
        cluster = None
        if env in ("kafka", "spark"):
            cluster = request.getfixturevalue("kafka_cluster")
            variables["RDK_BROKERS"] = cluster.bootstrap_servers
        if env == "spark":
            variables["PYSPARK_PYTHON"] = sys.executable
            variables["RDK_SPARK_KAFKA_JARS"] = ",".join(spark_kafka_jars())
        if env == "sasl":
            secured: SecuredKafka = request.getfixturevalue("secured_kafka")
            cluster = secured.cluster
            variables.update(
                RDK_BROKERS=cluster.bootstrap_servers,
                RDK_SSL_BROKERS=cluster.bootstrap_servers_for("SSL"),
                RDK_SASL_BROKERS=cluster.bootstrap_servers_for("SASL_SSL"),
                RDK_CA_LOCATION=str(cluster.ca_location),
                RDK_SASL_USERNAME=SASL_USER,
                RDK_SASL_PASSWORD=secured.password,
            )
            shutil.copyfile(cluster.ca_location, cwd / "ca.pem")  # for the shell pages' ca.pem
        if topics:
            if cluster is None:
                raise ValueError(f"topics= needs a broker, and env={env} has none")
            drop_topics(cluster.bootstrap_servers, list(topics))
            made.append((cluster.bootstrap_servers, list(topics)))
            for name, partitions in topics.items():
                cluster.create_topic(name, partitions)
        if "RDK_BROKERS" in variables:
            variables["B"] = variables["RDK_BROKERS"]  # the shell pages' $B
        return variables

    yield make
    for bootstrap, names in made:
        drop_topics(bootstrap, names)

