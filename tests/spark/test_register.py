"""rdk.spark.register(): idempotent, and Python workers find rdk in local mode."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

import rdk.spark

pytestmark = pytest.mark.spark


class Session:
    """Just enough of a SparkSession for register(): a context and dataSource.register."""

    def __init__(self, master: str) -> None:
        self.sparkContext = SimpleNamespace(master=master, pythonExec="python3")
        self.registered: list = []
        self.dataSource = SimpleNamespace(register=self.registered.append)


def test_register_is_idempotent_and_uses_this_interpreter_in_local_mode(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = Session("local[2]")
    rdk.spark.register(session)
    rdk.spark.register(session)
    assert session.registered == [rdk.spark.KafkaDataSource]
    assert session.sparkContext.pythonExec == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_register_leaves_cluster_and_explicit_interpreters_alone(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    cluster = Session("yarn")
    rdk.spark.register(cluster)
    assert cluster.sparkContext.pythonExec == "python3"
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python/bin/python3")
    local = Session("local[*]")
    rdk.spark.register(local)
    assert local.sparkContext.pythonExec == "python3"
    assert local.registered == [rdk.spark.KafkaDataSource]


def test_the_data_source_is_named_rdkafka():
    assert rdk.spark.KafkaDataSource.name() == "rdkafka"
    assert [f.name for f in rdk.spark.kafka_schema(True).fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def test_the_spark_schema_is_the_arrow_schema_of_rdk_arrow():
    from pyspark.sql.types import TimestampType

    import rdk.arrow

    for headers in (False, True):
        spark_schema = rdk.spark.kafka_schema(headers)
        arrow_schema = rdk.arrow.kafka_schema(headers)
        assert spark_schema.fieldNames() == arrow_schema.names
        assert isinstance(spark_schema["timestamp"].dataType, TimestampType)
    assert rdk.spark.kafka_schema(True).simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>")
