"""A round trip through an installed rdk; run by test_wheel.py with the Python of a fresh
venv that holds only the wheel and its runtime dependencies (never the source tree).

    python wheel_client.py mock            # on a mock cluster started here, by the wheel's librdkafka
    python wheel_client.py HOST:PORT TOPIC # on a running broker; TOPIC has len(CODECS) partitions
    python wheel_client.py HOST:PORT TOPIC CA_FILE   # the same over TLS, trusting CA_FILE

Partition p is written with compression codec CODECS[p] (so the bundled zlib, zstd and
librdkafka's own lz4 and snappy all run) and read back with a Consumer. Prints one JSON
object: where rdk was imported from, the librdkafka version, whether the C fast path
(rdk._messages) loaded, and per partition the SHA-256 of what was sent and of what came back.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile

import rdk
from rdk._binding import messages as _batch
from rdk.mock import MockCluster

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_PARTITION = 200


def digest(values: list[bytes]) -> str:
    h = hashlib.sha256()
    for value in values:
        h.update(len(value).to_bytes(4, "big") + value)
    return h.hexdigest()


def round_trip(bootstrap: str, topic: str, options: dict[str, str]) -> dict:
    sent: dict[int, list[bytes]] = {}
    for partition, codec in enumerate(CODECS):
        payloads = [b"%s-%d|" % (codec.encode(), i) + bytes(range(256)) * 8 for i in range(PER_PARTITION)]
        with rdk.Producer(bootstrap, driver_options={**options, "compression.codec": codec}) as producer:
            assert producer.send(topic, partition, payloads).enqueued == len(payloads)
            assert producer.flush(30) == 0, f"{codec}: not every message was delivered"
        sent[partition] = payloads
    got: dict[int, list[bytes]] = {p: [] for p in sent}
    want = sum(map(len, sent.values()))
    with tempfile.TemporaryDirectory() as offsets, rdk.Consumer(
        bootstrap, topic, offsets, driver_options=options
    ) as consumer:
        for batch in consumer.batches(timeout=30):
            for message in batch.messages:
                got[message.partition].append(message.value)
            if sum(map(len, got.values())) >= want:
                break
    return {
        "sent": {p: [len(v), digest(v)] for p, v in sent.items()},
        "got": {p: [len(v), digest(v)] for p, v in got.items()},
    }


def main() -> None:
    if sys.argv[1] == "mock":
        with MockCluster(3) as cluster:
            cluster.create_topic("wheel", len(CODECS))
            result = round_trip(cluster.bootstrap_servers, "wheel", {})
            # left running on purpose: the interpreter must exit 0 with it (rdk._exit), on
            # every CPython the wheel is installed for (3.12+ starts no thread at exit)
            left_running = rdk.Consumer(cluster.bootstrap_servers, "wheel",
                                        tempfile.mkdtemp(), lambda batch: None)
            left_running.start()
    else:
        ca = sys.argv[3:]
        options = {"security.protocol": "SSL", "ssl.ca.location": ca[0]} if ca else {}
        result = round_trip(sys.argv[1], sys.argv[2], options)
    result.update(
        rdk_file=rdk.__file__,
        librdkafka=rdk.librdkafka_version(),
        fast_path=_batch._messages is not None,
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
