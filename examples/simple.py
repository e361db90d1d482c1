"""kafka-native's README example in Python: a round-robin producer and a consumer that
keeps its progress in an offset directory.

    python examples/simple.py --messages 20            # embedded broker
    RDK_BROKERS=localhost:9092 python examples/simple.py --offset-dir ./kafka-offsets

Run it twice with the same --offset-dir: the second run resumes after the last offset the
first one recorded (kafka-native's offset files, one per topic-partition).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import uuid

from _broker import kafka

import rdk


def main() -> None:
    parser = argparse.ArgumentParser(description="a round-robin producer and an offset-file consumer")
    parser.add_argument("--topic", default="example")
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--offset-dir", default=None, help="default: a new temporary directory")
    args = parser.parse_args()
    offset_dir = args.offset_dir or tempfile.mkdtemp(prefix="kafka-offsets-")
    run = uuid.uuid4().hex[:8]  # tells this run's messages from older ones on the topic

    with kafka(args.topic, partitions=4) as broker:
        ours = 0
        all_received = threading.Event()

        def receive_callback(info: rdk.Batch) -> None:
            nonlocal ours
            for m in info.messages:
                print("message:", m.topic, m.partition, m.offset, m.payload.decode())
                ours += m.payload.endswith(run.encode())
            if ours >= args.messages:
                all_received.set()

        consumer = rdk.Consumer(broker, args.topic, offset_dir, receive_callback)
        print("consumer owns partitions", consumer.start())

        with rdk.Producer(broker) as producer:
            npartitions = producer.partition_count(args.topic)
            for i in range(args.messages):
                # kafka-native's example picks the partition round robin by hand
                producer.send(args.topic, i % npartitions, [f"hello {i} from {run}"])
            producer.flush(10)

        if not all_received.wait(30):
            print("timed out waiting for the messages")
        consumer.stop()  # waits for the last batch and writes its offsets
        print(f"received {ours} of {args.messages} messages; offsets recorded in {offset_dir}")


if __name__ == "__main__":
    main()
