"""Consumer and producer stats exported to Prometheus with prometheus_client.

    python examples/prometheus_stats.py --messages 5000          # prints the metrics at the end
    python examples/prometheus_stats.py --port 9108 --seconds 60  # scrape localhost:9108/metrics
    RDK_BROKERS=localhost:9092 python examples/prometheus_stats.py

The producer's stats_callback gives send_queue_length (and the messages on_queue_full
dropped); the consumer's gives kafka-native's waiting_kafka, waiting_local and
kafka_log_size, summed and per partition. Both carry librdkafka's full statistics as
info.rdkafka_stats, from which this example exports the broker round-trip time too.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

from _broker import kafka
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, start_http_server

import rdk

registry = CollectorRegistry()
SEND_QUEUE = Gauge("rdk_producer_send_queue_length", "Messages awaiting delivery", registry=registry)
DROPPED = Gauge("rdk_producer_dropped", "Messages refused by on_queue_full", registry=registry)
WAITING_KAFKA = Gauge("rdk_consumer_waiting_kafka", "Messages on the broker not yet fetched",
                      ["topic", "partition"], registry=registry)
WAITING_LOCAL = Gauge("rdk_consumer_waiting_local", "Messages fetched, not yet handed over",
                      ["topic", "partition"], registry=registry)
LOG_SIZE = Gauge("rdk_consumer_kafka_log_size", "High minus low watermark",
                 ["topic", "partition"], registry=registry)
RTT = Gauge("rdk_broker_rtt_avg_seconds", "Average broker round-trip time (librdkafka)",
            ["client", "broker"], registry=registry)
CONSUMED = Counter("rdk_consumer_messages", "Messages handed to receive_callback", ["topic"],
                   registry=registry)


def export_rtt(client: str, rdkafka_stats: dict) -> None:
    for name, b in rdkafka_stats.get("brokers", {}).items():
        avg_us = (b.get("rtt") or {}).get("avg", 0)
        if avg_us:
            RTT.labels(client, name).set(avg_us / 1e6)


def producer_stats(info) -> None:
    SEND_QUEUE.set(info.send_queue_length)
    DROPPED.set(info.dropped)
    export_rtt("producer", info.rdkafka_stats)


def main() -> None:
    parser = argparse.ArgumentParser(description="export rdk stats with prometheus_client")
    parser.add_argument("--topic", default="prometheus-stats")
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--port", type=int, default=0, help="serve /metrics on this port")
    parser.add_argument("--seconds", type=float, default=0, help="keep running this long")
    parser.add_argument("--interval-ms", type=int, default=200, help="statistics_interval_ms")
    args = parser.parse_args()
    if args.port:
        start_http_server(args.port, registry=registry)
        print(f"metrics on http://127.0.0.1:{args.port}/metrics")

    with kafka(args.topic, partitions=3) as broker:
        consumed = 0
        seen_all = threading.Event()
        stats_after_all = threading.Event()

        def consumer_stats(info: rdk.ConsumerStats) -> None:
            for p, s in info.partitions.items():
                WAITING_KAFKA.labels(args.topic, str(p)).set(s.waiting_kafka)
                WAITING_LOCAL.labels(args.topic, str(p)).set(s.waiting_local)
                LOG_SIZE.labels(args.topic, str(p)).set(s.kafka_log_size)
            export_rtt("consumer", info.rdkafka_stats)
            if seen_all.is_set() and info.waiting_kafka == 0:
                stats_after_all.set()  # the gauges now describe the drained topic

        def receive_callback(batch: rdk.Batch) -> None:
            nonlocal consumed
            consumed += len(batch.messages)
            CONSUMED.labels(args.topic).inc(len(batch.messages))
            if consumed >= args.messages:
                seen_all.set()

        offset_dir = tempfile.mkdtemp(prefix="kafka-offsets-")
        consumer = rdk.Consumer(broker, args.topic, offset_dir, receive_callback,
                                stats_callback=consumer_stats,
                                statistics_interval_ms=args.interval_ms)
        consumer.start()
        with rdk.Producer(broker, balancer="round_robin", stats_callback=producer_stats,
                          statistics_interval_ms=args.interval_ms) as producer:
            for start in range(0, args.messages, 1000):
                chunk = [b"reading %d" % i for i in range(start, min(start + 1000, args.messages))]
                producer.send(args.topic, None, chunk)
            producer.flush(30)
            seen_all.wait(60)
            stats_after_all.wait(10)
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline:  # --seconds: keep serving for scrapers
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        consumer.stop()

    print(f"consumed {consumed} of {args.messages} messages")
    text = generate_latest(registry).decode()
    print("".join(line + "\n" for line in text.splitlines()
                  if line.startswith("rdk_") and "_created" not in line))


if __name__ == "__main__":
    main()
