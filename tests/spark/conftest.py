"""Spark fixtures: ONE local[2] SparkSession for the whole test session, data helpers.

Brokers come from tests/conftest.py (mock cluster, Tansu and Apache Kafka, or RDK_BROKERS).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[2]


def spark_kafka_jars() -> list[str]:
    """The jars of Spark's own JVM Kafka connector (format("kafka")) that scripts/setup.sh
    fetched into .deps/spark-sql-kafka-<version>/jars (scripts/spark-kafka/pom.xml), or []."""
    for folder in sorted(ROOT.glob(".deps/spark-sql-kafka-*"), reverse=True):
        if (folder / ".rdk-fetched").is_file():
            return sorted(str(j) for j in (folder / "jars").glob("*.jar"))
    return []


@pytest.fixture(scope="session")
def spark():
    """A small local Spark with rdkafka registered (UI off, 2 shuffle partitions); Spark's own
    JVM Kafka connector is on its classpath too (``spark.jars``) when scripts/setup.sh fetched
    it, so one session serves ``format("kafka")`` and ``format("rdkafka")``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rdk.spark

    builder = SparkSession.builder
    if spark_kafka_jars():
        builder = builder.config("spark.jars", ",".join(spark_kafka_jars()))
    session = (
        builder.master("local[2]")
        .appName("rdk-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    rdk.spark.register(session)
    yield session
    session.stop()


def send_all(bootstrap: str, topic: str, partition: int | None, payloads: list,
            **producer_options) -> None:
    """Send ``payloads`` with rdk.Producer and wait until every one is delivered."""
    from rdk.producer import Producer

    results: list = []
    with Producer(bootstrap, on_queue_full="block", **producer_options) as producer:
        producer.send(topic, partition, payloads, on_delivery=lambda d, f: results.append((d, f)))
        assert producer.flush(30) == 0
    assert results == [(len(payloads), [])], results


@pytest.fixture
def produce():
    """produce(broker, topic, partition, payloads): send with rdk.Producer, all delivered."""
    return lambda broker, topic, partition, payloads: send_all(
        broker.bootstrap_servers, topic, partition, payloads)


@pytest.fixture
def kafka_reader(spark):
    """kafka_reader(broker, **options) -> spark.read.format("rdkafka") with the options set."""

    def make(broker, stream: bool = False, **options):
        r = (spark.readStream if stream else spark.read).format("rdkafka")
        r = r.option("kafka.bootstrap.servers", broker.bootstrap_servers)
        for k, v in options.items():
            r = r.option(k, v)
        return r

    return make


@pytest.fixture(scope="session")
def mock_broker(_brokers):
    """The session's mock cluster, for tests where one broker kind is enough."""
    return _brokers.get("mock")
