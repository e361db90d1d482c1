#!/usr/bin/env bash
# Everything rdk needs on a fresh Debian bookworm machine (root, Python 3.11), idempotently:
# Debian packages, the pinned librdkafka in .deps/, Apache Kafka's jars in .deps/kafka-<version>/libs
# (for rdk.testing.KafkaCluster), Apicurio Registry in .deps/apicurio-registry-<version>
# (rdk.testing.SchemaRegistry), Spark's JVM Kafka connector in .deps/spark-sql-kafka-<version>/jars,
# a virtual environment in .venv with rdk installed editable
# plus its test, spark, bench and docs extras.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential pkg-config python3-venv python3-dev libssl-dev zlib1g-dev libzstd-dev
          liblz4-dev stunnel4 openssl procps)
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v npm >/dev/null || packages+=(npm)
command -v mvn >/dev/null || packages+=(maven)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then echo "setup: please install: ${missing[*]}" >&2; exit 1; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

scripts/build-librdkafka.sh

# Apache Kafka's broker, tools and a log4j2 backend (scripts/kafka/pom.xml pins the reference
# release; <kafka.matrix> lists the others of tests/integration/test_kafka_versions.py), copied
# from Maven Central (through ~/.m2) into .deps/kafka-<version>/libs. The stamp holds the pom's
# checksum: while it matches, nothing is asked of Maven or the network.
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml)
kafka_matrix=$(sed -n 's:.*<kafka.matrix>\(.*\)</kafka.matrix>.*:\1:p' scripts/kafka/pom.xml)
kafka_sum=$(sha256sum scripts/kafka/pom.xml | cut -d' ' -f1)
for version in $kafka_version $kafka_matrix; do
  kafka_dir=.deps/kafka-$version
  if [[ $(cat "$kafka_dir/.rdk-fetched" 2>/dev/null) != "$kafka_sum" ]]; then
    echo "setup: fetching Apache Kafka $version jars with Maven"
    rm -rf "$kafka_dir"
    mkdir -p "$kafka_dir"
    if ! mvn -q -B -Dstyle.color=never -Dkafka.version="$version" -f scripts/kafka/pom.xml \
           dependency:copy-dependencies -DoutputDirectory="$PWD/$kafka_dir/libs.partial" \
           -DincludeScope=runtime >"$kafka_dir/mvn.log" 2>&1; then
      cat "$kafka_dir/mvn.log" >&2; echo "setup: fetching Apache Kafka $version's jars failed" >&2; exit 1
    fi
    mv "$kafka_dir/libs.partial" "$kafka_dir/libs"
    echo "$kafka_sum" >"$kafka_dir/.rdk-fetched"
  fi
done

# Spark's own JVM Kafka connector (format("kafka")) beside rdkafka, for tests/spark/test_differential.py
# and examples/spark_pipeline.py: scripts/spark-kafka/pom.xml pins it (and says why that version);
# the jars go to .deps/spark-sql-kafka-<version>/jars, handed to Spark with spark.jars. Same stamp.
spark_kafka_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' scripts/spark-kafka/pom.xml)
spark_kafka_dir=.deps/spark-sql-kafka-$spark_kafka_version
spark_kafka_sum=$(sha256sum scripts/spark-kafka/pom.xml | cut -d' ' -f1)
if [[ $(cat "$spark_kafka_dir/.rdk-fetched" 2>/dev/null) != "$spark_kafka_sum" ]]; then
  echo "setup: fetching Spark's Kafka connector $spark_kafka_version jars with Maven"
  rm -rf "$spark_kafka_dir"
  mkdir -p "$spark_kafka_dir"
  if ! mvn -q -B -Dstyle.color=never -f scripts/spark-kafka/pom.xml dependency:copy-dependencies \
         -DoutputDirectory="$PWD/$spark_kafka_dir/jars.partial" -DincludeScope=runtime >"$spark_kafka_dir/mvn.log" 2>&1; then
    cat "$spark_kafka_dir/mvn.log" >&2; echo "setup: fetching Spark's Kafka connector failed" >&2; exit 1
  fi
  mv "$spark_kafka_dir/jars.partial" "$spark_kafka_dir/jars"
  echo "$spark_kafka_sum" >"$spark_kafka_dir/.rdk-fetched"
fi

# Apicurio Registry (a schema registry serving Confluent's API) for rdk.testing.SchemaRegistry:
# scripts/apicurio/pom.xml pins its ready-built server package, unpacked into
# .deps/apicurio-registry-<version> (it runs on Java 21+). Same stamp.
apicurio_version=$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' scripts/apicurio/pom.xml)
apicurio_dir=.deps/apicurio-registry-$apicurio_version
apicurio_sum=$(sha256sum scripts/apicurio/pom.xml | cut -d' ' -f1)
if [[ $(cat "$apicurio_dir/.rdk-fetched" 2>/dev/null) != "$apicurio_sum" ]]; then
  echo "setup: fetching Apicurio Registry $apicurio_version with Maven"
  rm -rf "$apicurio_dir" "$apicurio_dir.partial"
  mkdir -p "$apicurio_dir.partial"
  # markers in the fresh folder: Maven's own (under scripts/apicurio/target) would skip the unpack
  # of a package it unpacked once before, leaving an empty folder
  if ! mvn -q -B -Dstyle.color=never -f scripts/apicurio/pom.xml dependency:unpack \
         -DoutputDirectory="$PWD/$apicurio_dir.partial" -Dmdep.overWriteReleases=true \
         -DmarkersDirectory="$PWD/$apicurio_dir.partial/.markers" \
         >"$apicurio_dir.partial/mvn.log" 2>&1; then
    cat "$apicurio_dir.partial/mvn.log" >&2; echo "setup: fetching Apicurio Registry failed" >&2; exit 1
  fi
  if [[ ! -f $apicurio_dir.partial/quarkus-run.jar ]]; then
    echo "setup: Maven unpacked no Apicurio Registry server (no quarkus-run.jar) into $apicurio_dir.partial" >&2
    exit 1
  fi
  mv "$apicurio_dir.partial" "$apicurio_dir"
  echo "$apicurio_sum" >"$apicurio_dir/.rdk-fetched"
fi

python=${PYTHON:-python3}
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
stamp=.venv/.rdk-installed
inputs=(pyproject.toml setup.py build_ffi.py include/*.h src/rdk/*.c .deps/librdkafka/.rdk-build-*)
stale=0
[[ -f $stamp ]] || stale=1
for f in "${inputs[@]}"; do [[ $f -nt $stamp ]] && stale=1; done
if ((stale)); then
  .venv/bin/python -m pip install -q --upgrade pip setuptools wheel "cffi>=1.17"
  .venv/bin/python -m pip install -q --no-build-isolation -e ".[test,spark,bench,docs]"
  touch "$stamp"
fi
.venv/bin/python -c 'import rdk; print("setup: rdk", rdk.__version__, "with librdkafka", rdk.librdkafka_version())'
