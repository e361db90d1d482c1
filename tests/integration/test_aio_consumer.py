"""rdk.aio.Consumer: async iteration over rdk.Consumer's batches, never blocking the loop."""

from __future__ import annotations

import asyncio
import threading

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
        pending = asyncio.create_task(it.__anext__())
        while not consumer._waker._waiting:  # the task waits on the consumer's fd
            await asyncio.sleep(0.01)
        # the wait holds no loop time: a task scheduled now runs while it is pending
        ran = asyncio.Event()
        asyncio.get_running_loop().call_soon(ran.set)
        await asyncio.wait_for(ran.wait(), 30)
        assert not pending.done()
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await asyncio.to_thread(produce, mock_cluster, "aio-x", 0, [b"after-cancel"])
        batch = await it.__anext__()  # the same iterator goes on
        await consumer.stop()
        return batch

    batch = run(main())
    assert [m.value for m in batch.messages] == [b"after-cancel"]


def test_pause_holds_a_waiting_task_and_resume_wakes_it(mock_cluster, tmp_path):
    mock_cluster.create_topic("aio-p", 1)
    produce(mock_cluster, "aio-p", 0, values(5))

    async def main():
        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-p", tmp_path)
        it = consumer.batches()
        first = await it.__anext__()
        consumer.pause()
        assert consumer.paused
        await asyncio.to_thread(produce, mock_cluster, "aio-p", 0, values(5, start=5))
        pending = asyncio.create_task(it.__anext__())
        while not consumer._waker._waiting:
            await asyncio.sleep(0.01)
        assert not pending.done()
        consumer.resume()  # wakes the waiting task
        second = await asyncio.wait_for(pending, 60)
        await consumer.stop()
        return [m.value for m in first], [m.value for m in second]

    first, second = run(main())
    assert first == values(5) and second == values(5, start=5)


def test_seek_through_rdk_aio_reads_again_from_the_offset(mock_cluster, tmp_path):
    mock_cluster.create_topic("aio-s", 1)
    produce(mock_cluster, "aio-s", 0, values(10))

    async def main():
        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-s", tmp_path)
        got = []
        it = consumer.batches()
        while len(got) < 10:
            got.extend(m.offset for m in await it.__anext__())
        consumer.seek(0, 3)
        again = [m.offset for m in await it.__anext__()]
        await consumer.stop()
        return got, again

    got, again = run(main())
    assert got == list(range(10)) and again[0] == 3


def test_an_error_that_stops_fetching_is_raised_to_the_waiting_task(mock_cluster, tmp_path):
    mock_cluster.create_topic("aio-e", 1)
    produce(mock_cluster, "aio-e", 0, values(3))

    async def main():
        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-e", tmp_path,
                                    on_offset_out_of_range="error")
        it = consumer.batches()
        await it.__anext__()
        consumer.seek(0, 1000)  # beyond the end: OFFSET_OUT_OF_RANGE stops the consumer
        with pytest.raises(rdk.KafkaError) as e:
            while True:
                await asyncio.wait_for(it.__anext__(), 60)
        await consumer.stop()
        return e.value, consumer.error

    err, error = run(main())
    # the same error object the consumer keeps; librdkafka names it by the path that saw it
    # first (the fetch's OFFSET_OUT_OF_RANGE, or its reset policy's _AUTO_OFFSET_RESET), as
    # test_consumer_flow's OUT_OF_RANGE says
    assert error is err and err.name in {"_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE"}


def test_group_mode_runs_coroutine_rebalance_callbacks_on_the_loop(mock_cluster):
    mock_cluster.create_topic("aio-g", 2)
    for p in range(2):
        produce(mock_cluster, "aio-g", p, values(5, prefix=b"p%d-" % p))

    async def main():
        loop_thread = threading.get_ident()
        calls = []

        async def on_assign(parts):
            await asyncio.sleep(0)
            calls.append(("assign", sorted(parts), threading.get_ident() == loop_thread))

        async def on_revoke(parts):
            calls.append(("revoke", sorted(parts), threading.get_ident() == loop_thread))

        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-g", group_id="aio-g1",
                                    on_assign=on_assign, on_revoke=on_revoke)
        got = []
        async for batch in consumer:
            got.extend(m.value for m in batch)
            await batch.commit()
            if len(got) >= 10:
                break
        await consumer.stop()
        return got, calls

    got, calls = run(main())
    assert sorted(got) == sorted(values(5, prefix=b"p0-") + values(5, prefix=b"p1-"))
    parts = [("aio-g", 0), ("aio-g", 1)]
    assert calls[0] == ("assign", parts, True)
    assert calls[-1] == ("revoke", parts, True)


def test_receive_callback_is_refused_and_options_are_checked_as_rdk_consumer_does(tmp_path):
    with pytest.raises(TypeError, match="no receive_callback"):
        rdk.aio.Consumer("127.0.0.1:9", "t", tmp_path, receive_callback=print)
    with pytest.raises(ValueError, match="max_messages_per_callback"):
        rdk.aio.Consumer("127.0.0.1:9", "t", tmp_path, max_messages_per_callback=0)


def test_resume_wakes_a_task_waiting_while_batches_were_buffered(mock_cluster, tmp_path):
    """Batches fetched before pause() wait in the pipeline: nothing new is fetched after
    resume(), so only resume() itself can wake the task waiting for them."""
    mock_cluster.create_topic("aio-r", 1)
    produce(mock_cluster, "aio-r", 0, values(30))

    async def main():
        consumer = rdk.aio.Consumer(mock_cluster.bootstrap_servers, "aio-r", tmp_path,
                                    max_messages_per_callback=10)
        it = consumer.batches()
        first = await it.__anext__()
        state = consumer.consumer._shared
        while state.buffered([("aio-r", 0)])[("aio-r", 0)] < 20:  # all fetched
            await asyncio.sleep(0.01)
        consumer.pause()
        pending = asyncio.create_task(it.__anext__())
        while not consumer._waker._waiting:
            await asyncio.sleep(0.01)
        assert not pending.done()  # paused: the buffered batches are held
        consumer.resume()
        second = await asyncio.wait_for(pending, 30)
        await consumer.stop()
        return [m.offset for m in first], [m.offset for m in second]

    first, second = run(main())
    assert first == list(range(10)) and second == list(range(10, 20))
