"""Flow control: a slow asyncio processor, and pause()/resume() to match the consumer to it.

    python examples/pause_resume.py --messages 2000
    RDK_BROKERS=localhost:9092 python examples/pause_resume.py

receive_callback returns a coroutine, so the consumer does not wait for it: batches pile up
in flight. Above --high batches in flight the example calls consumer.pause(), which stops
deliveries *and* fetching (librdkafka pauses the partitions, so memory stays bounded); when
the processor has caught up to --low it calls resume(). Offsets are recorded in order as
batches complete, even though they complete out of order.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import threading

from _broker import kafka

import rdk


class SlowProcessor:
    """Processes a batch in 5-40 ms of asyncio time; pauses the consumer when it falls behind."""

    def __init__(self, total: int, high: int, low: int) -> None:
        self.total, self.high, self.low = total, high, low
        self.consumer: rdk.Consumer | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.processed = 0
        self.pauses = 0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def receive_callback(self, batch: rdk.Batch):
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.in_flight >= self.high and not self.consumer.paused:
                self.pauses += 1
                print(f"pause:  {self.in_flight} batches in flight, {self.processed} processed")
                self.consumer.pause()
        return self.process(batch)  # an awaitable: the batch settles when it completes

    async def process(self, batch: rdk.Batch) -> None:
        await asyncio.sleep(random.uniform(0.005, 0.04))  # a slow database, an HTTP call...
        with self.lock:
            self.in_flight -= 1
            self.processed += len(batch.messages)
            if self.consumer.paused and self.in_flight <= self.low:
                print(f"resume: {self.in_flight} batches in flight, {self.processed} processed")
                self.consumer.resume()
            if self.processed >= self.total:
                self.done.set()


def main() -> None:
    parser = argparse.ArgumentParser(description="pause()/resume() matched to a slow processor")
    parser.add_argument("--topic", default="pause-resume")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50, help="max_messages_per_callback")
    parser.add_argument("--high", type=int, default=6, help="pause at this many batches in flight")
    parser.add_argument("--low", type=int, default=1, help="resume at this many")
    args = parser.parse_args()
    offset_dir = tempfile.mkdtemp(prefix="kafka-offsets-")

    with kafka(args.topic, partitions=2) as broker:
        with rdk.Producer(broker) as producer:
            producer.send(args.topic, None, [b"event %d" % i for i in range(args.messages)])
            producer.flush(30)
        with rdk.Admin(broker) as admin:  # the topic may hold older messages too
            total = sum(high - low for low, high in
                        (admin.watermarks(args.topic, p) for p in range(2)))
        processor = SlowProcessor(total, args.high, args.low)
        consumer = rdk.Consumer(broker, args.topic, offset_dir, processor.receive_callback,
                                max_messages_per_callback=args.batch)
        processor.consumer = consumer
        consumer.start()
        finished = processor.done.wait(120)
        consumer.stop()
    print(f"processed {processor.processed} of {total} messages "
          f"({'complete' if finished else 'timed out'}); paused {processor.pauses} times; "
          f"at most {processor.max_in_flight} batches were in flight (limit {args.high})")


if __name__ == "__main__":
    main()
