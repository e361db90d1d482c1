"""Binary-safe messages: NUL bytes, binary keys, headers and tombstones round-trip exactly.

    python examples/binary_keys_headers.py
    RDK_BROKERS=localhost:9092 python examples/binary_keys_headers.py

Values and keys are bytes (never decoded unless the Consumer is built with decode="utf-8").
Messages with a key go to a partition chosen from the key: with balancer="fnv1a" that is
|int32(FNV-1a-32(key))| mod partitions, the same as sarama and kafka-go's Hash balancer.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading

from _broker import kafka

import rdk


def sample_messages(n: int) -> list[rdk.Message]:
    out = [
        rdk.Message(b"\x00\x01\x02\x00", key=b"\x00key-with-nul"),
        rdk.Message(b"", key=b"empty value"),
        rdk.Message(None, key=b"user-42"),  # a tombstone: deletes user-42 in a compacted topic
        rdk.Message("text is UTF-8 encoded: h\u00e9llo", key="k\u00e9y",
                    headers=[("content-type", b"text/plain"), ("trace", None)]),
        rdk.Message(bytes(range(256)), key=None, headers=[("bin", bytes([0, 255, 0]))]),
    ]
    for i in range(n):
        out.append(rdk.Message(os.urandom(i % 64), key=b"user-%d" % (i % 7),
                               headers=[("seq", str(i).encode()), ("raw", os.urandom(4))]))
    return out


def fnv1a_partition(key: bytes, partitions: int) -> int:
    """sarama's NewHashPartitioner: |int32(FNV-1a-32(key))| mod partitions."""
    h = 0x811C9DC5
    for byte in key:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(signed) % partitions


def expected(m: rdk.Message) -> tuple:
    """What the consumer gives back: str becomes UTF-8 bytes; headers keep their order."""
    def enc(v):
        return v.encode() if isinstance(v, str) else v

    return (enc(m.value), enc(m.key), [(k, enc(v)) for k, v in m.headers] if m.headers else None)


def main() -> None:
    parser = argparse.ArgumentParser(description="binary values, keys and headers round trip")
    parser.add_argument("--topic", default="binary-keys-headers")
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    partitions = 3
    sent = sample_messages(args.messages)

    with kafka(args.topic, partitions) as broker:
        with rdk.Admin(broker) as admin:  # start after whatever the topic already holds
            start = {p: admin.watermarks(args.topic, p)[1] for p in range(partitions)}
        with rdk.Producer(broker, balancer="fnv1a") as producer:
            keyless = [m for m in sent if m.key is None]
            keyed = [m for m in sent if m.key is not None]
            producer.send(args.topic, 0, keyless)  # no key: name the partition
            producer.send(args.topic, None, keyed)  # keyed: the balancer picks
            assert producer.flush(30) == 0, "not everything was delivered"

        received: list[rdk.Message] = []
        done = threading.Event()

        def receive_callback(batch: rdk.Batch) -> None:
            received.extend(batch.messages)
            if len(received) >= len(sent):
                done.set()

        offset_dir = tempfile.mkdtemp(prefix="kafka-offsets-")
        for p, high in start.items():  # resume each partition at its old end
            rdk.offsets.write_offset_file(offset_dir, args.topic, p, high - 1)
        with rdk.Consumer(broker, args.topic, offset_dir, receive_callback) as consumer:
            consumer.start()
            done.wait(30)

    def comparable(value, key, headers) -> tuple:  # None (absent) stays apart from b""
        return (value is None, value or b"", key is None, key or b"", repr(headers))

    got = sorted(comparable(m.value, m.key, m.headers) for m in received)
    want = sorted(comparable(*expected(m)) for m in sent)
    assert got == want, "a message did not round-trip exactly"
    for m in received:
        if m.key is not None:
            assert m.partition == fnv1a_partition(m.key, partitions), m
    tombstones = sum(m.value is None for m in received)
    with_headers = sum(m.headers is not None for m in received)
    print(f"{len(received)} messages round-tripped byte for byte: {tombstones} tombstone(s), "
          f"{with_headers} with headers, keyed ones on the FNV-1a partition of their key")
    for m in received[:3]:
        print(f"  {m.topic}[{m.partition}]@{m.offset} key={m.key!r} value={m.value!r:.40} "
              f"headers={m.headers}")


if __name__ == "__main__":
    main()
