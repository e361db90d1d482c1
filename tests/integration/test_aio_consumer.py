"""rdk.aio.Consumer: async iteration over rdk.Consumer's batches, never blocking the loop."""

from __future__ import annotations

import asyncio

import pytest
from helpers import produce, stored, values

import rdk
import rdk.aio


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_async_for_reads_everything_and_leaving_async_with_records_committed_batches(
        broker, new_topic, tmp_path):
    topic = new_topic(broker, 2, prefix="aio-c")
    for p in range(2):
        produce(broker, topic, p, values(25, prefix=b"p%d-" % p))

    async def main():
        got = []
        async with rdk.aio.Consumer(broker.bootstrap_servers, topic, tmp_path,
                                    max_messages_per_callback=10) as consumer:
            async for batch in consumer:
                got.extend((m.partition, m.value) for m in batch.messages)
                await batch.commit()
                if len(got) >= 50:
                    break
        return got

    got = run(main())
    assert sorted(got) == sorted((p, v) for p in range(2) for v in values(25, prefix=b"p%d-" % p))
    assert {p: stored(tmp_path, topic, p) for p in range(2)} == {0: 24, 1: 24}


def test_an_uncommitted_batch_is_not_recorded_and_comes_back(broker, new_topic, tmp_path):
    topic = new_topic(broker, 1, prefix="aio-u")
    produce(broker, topic, 0, values(30))

    async def first_two():
        async with rdk.aio.Consumer(broker.bootstrap_servers, topic, tmp_path,
                                    max_messages_per_callback=10) as consumer:
            seen = []
            async for batch in consumer:
                seen.append(batch)
                if len(seen) == 1:
                    await batch.commit()
                else:
                    return seen  # the second is never committed

    first, second = run(first_two())
    assert stored(tmp_path, topic, 0) == first.offsets[0][1]

    async def again():
        async with rdk.aio.Consumer(broker.bootstrap_servers, topic, tmp_path) as consumer:
            async for batch in consumer.batches(timeout=30):
                return batch.messages[0].offset

    assert run(again()) == second.offsets[0][0]


def test_a_cancelled_wait_loses_no_batch_and_the_loop_keeps_running(mock_cluster, tmp_path):
    mock_cluster.create_topic("aio-x", 1)

    async def main():
        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-x", tmp_path)
        it = consumer.batches(timeout=60)
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        ticker = asyncio.create_task(tick())
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(it.__anext__(), 0.5)   # nothing there yet: cancelled
        waited_ticks = ticks
        p = rdk.Producer(mock_cluster.bootstrap_servers, queue_buffering_max_ms=5)
        p.send("aio-x", 0, [b"after-cancel"])
        assert p.stop(30) == 0
        it = consumer.batches(timeout=60)
        batch = await it.__anext__()
        ticker.cancel()
        await consumer.stop()
        return batch, waited_ticks

    batch, waited_ticks = run(main())
    assert [m.value for m in batch.messages] == [b"after-cancel"]
    # the 0.5 s wait ran off the loop: a 5 ms ticker kept ticking (a blocked loop gives 0-1)
    assert waited_ticks >= 20


def test_receive_callback_is_refused_and_options_are_checked_as_rdk_consumer_does(tmp_path):
    with pytest.raises(TypeError, match="no receive_callback"):
        rdk.aio.Consumer("127.0.0.1:9", "t", tmp_path, receive_callback=print)
    with pytest.raises(ValueError, match="max_messages_per_callback"):
        rdk.aio.Consumer("127.0.0.1:9", "t", tmp_path, max_messages_per_callback=0)
