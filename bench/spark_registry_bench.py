"""Spark read-and-decode of registry-framed Avro: ``format("rdkafka")`` with
``valueFormat=avro`` (decoded in the Arrow path) against Spark's JVM connector
(``format("kafka")``) plus a hand-written decode UDF (a pandas UDF that strips the 5-byte
header and decodes with fastavro, as a user without ABRiS would write it). Same topic, same
query (two aggregates over decoded fields), local[2], Apache Kafka and Apicurio started here.

    .venv/bin/python bench/spark_registry_bench.py --records 100000 --repeat 2 \\
        --json docs/data/spark_registry_bench.json
"""


import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from schema_registry_bench import AVRO, records  # noqa: E402

QUERY = ("sum(value.score) AS s", "count(value.id) AS n")


def jvm_jars() -> list[str]:
    for folder in sorted(ROOT.glob(".deps/spark-sql-kafka-*"), reverse=True):
        if (folder / ".rdk-fetched").is_file():
            return sorted(str(j) for j in (folder / "jars").glob("*.jar"))
    raise SystemExit("Spark's Kafka connector jars are missing: run scripts/setup.sh")


def fill(brokers: str, url: str, topic: str, n: int) -> None:
    import rdk
    from rdk.schema_registry import AvroSerializer

    ser = AvroSerializer(url, AVRO)
    with rdk.Producer(brokers) as producer:
        for start in range(0, n, 10000):
            rows = records(min(10000, n - start))
            for i, r in enumerate(rows):
                r["id"] = start + i
            framed = ser.serialize(topic, rows)
            for p in range(4):
                producer.send(topic, p, framed[p::4], timeout=60)
        assert producer.flush(120) == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()

    import pandas as pd
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import pandas_udf

    import rdk.spark
    from rdk.testing import KafkaCluster, SchemaRegistry

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
    with KafkaCluster(1) as kafka, SchemaRegistry() as registry:
        topic = "registry-bench"
        kafka.create_topic(topic, 4)
        fill(kafka.bootstrap_servers, registry.url, topic, args.records)
        spark = (SparkSession.builder.master("local[2]").appName("rdk-registry-bench")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
                 .config("spark.driver.memory", "2g").config("spark.jars", ",".join(jvm_jars()))
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        rdk.spark.register(spark)
        brokers = kafka.bootstrap_servers
        ddl = "struct<id:bigint,user:string,kind:string,score:double,tags:array<string>,payload:string>"

        @pandas_udf(ddl)
        def decode(values: pd.Series) -> pd.DataFrame:
            import io

            import fastavro

            schema = fastavro.parse_schema(json.loads(AVRO))
            rows = [fastavro.schemaless_reader(io.BytesIO(v[5:]), schema, None) for v in values]
            return pd.DataFrame(rows)

        def rdkafka() -> list:
            return (spark.read.format("rdkafka").option("kafka.bootstrap.servers", brokers)
                    .option("subscribe", topic).option("valueFormat", "avro")
                    .option("schemaRegistry.url", registry.url).load().selectExpr(*QUERY).collect())

        def jvm() -> list:
            df = (spark.read.format("kafka").option("kafka.bootstrap.servers", brokers)
                  .option("subscribe", topic).load())
            return df.select(decode("value").alias("value")).selectExpr(*QUERY).collect()

        assert rdkafka() == jvm(), "the two paths disagree"
        times: dict[str, list[float]] = {"rdkafka": [], "jvm_udf": []}
        for _ in range(args.repeat):
            for name, fn in (("rdkafka", rdkafka), ("jvm_udf", jvm)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        spark.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    rates = {k: args.records / v for k, v in med.items()}
    print(f"{args.records} records: rdkafka {rates['rdkafka']:,.0f} rows/s, JVM + UDF "
          f"{rates['jvm_udf']:,.0f} rows/s, ratio {rates['rdkafka'] / rates['jvm_udf']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"records": args.records, "repeat": args.repeat,
                                               "loadavg": os.getloadavg(), "seconds": times,
                                               "rows_per_s": rates}, indent=2) + "\n")


if __name__ == "__main__":
    main()
