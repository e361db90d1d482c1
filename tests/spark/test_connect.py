"""rdkafka over Spark Connect: a client session with no JVM of its own reads and writes.

Spark Connect is one of the places a JVM Kafka jar cannot be added from the client. The
session runs in a subprocess (``SparkSession.builder.remote("local[2]")`` starts a local
Connect server next to the client), since this process already has a classic SparkContext.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark
pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect] (grpcio)")

CLIENT = r"""
import json, sys
from pyspark.sql import SparkSession
import rdk.spark
bootstrap, source, sink = sys.argv[1:4]
spark = SparkSession.builder.remote("local[2]").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
rdk.spark.register(spark)
rdk.spark.register(spark)
def read(topic):
    return (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).load())
rows = sorted((r.partition, r.offset, r.key, r.value) for r in read(source).collect())
writer = (read(source).selectExpr("key", "value").write.format("rdkafka")
          .option("kafka.bootstrap.servers", bootstrap).option("topic", sink))
writer.save()   # Spark's default mode appends, as with format("kafka")
back = sorted((r.key or b"", r.value) for r in read(sink).collect())
spark.stop()
print(json.dumps({"rows": [[p, o, k.hex() if k else None, v.hex()] for p, o, k, v in rows],
                  "back": [[k.hex(), v.hex()] for k, v in back]}))
"""


def test_read_and_write_through_a_spark_connect_session(mock_broker, new_topic, produce):
    source, sink = new_topic(mock_broker, 2), new_topic(mock_broker, 2)
    produce(mock_broker, source, 0, [(b"k%d" % i, b"v%d" % i) for i in range(30)])
    produce(mock_broker, source, 1, [b"\x00binary", b""])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", CLIENT, mock_broker.bootstrap_servers, source,
                           sink], capture_output=True, text=True, timeout=300, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [[0, i, (b"k%d" % i).hex(), (b"v%d" % i).hex()] for i in range(30)]
    expected += [[1, 0, None, b"\x00binary".hex()], [1, 1, None, b"".hex()]]
    assert out["rows"] == sorted(expected, key=lambda r: (r[0], r[1]))
    assert out["back"] == sorted([k or "", v] for _, _, k, v in expected)
