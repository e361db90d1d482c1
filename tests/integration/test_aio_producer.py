"""rdk.aio.Producer: awaiting a send resolves once every message of the call is settled,
with the same accounting as on_delivery; the event loop is never blocked."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import rdk
from rdk import aio
from rdk.errors import ClosedError


def test_await_send_resolves_with_the_calls_accounting(broker, new_topic):
    topic = new_topic(broker, 2)

    async def main():
        async with aio.Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
            first = await p.send(topic, 0, [b"a", b"b", b"c"])
            many = await asyncio.gather(*(p.send(topic, None, [b"x%d" % i] * 10) for i in range(8)))
            assert await p.partition_count(topic) == 2
            assert await p.flush(5) == 0
        return first, many, p

    first, many, p = asyncio.run(main())
    assert first == (3, []) and first.delivered == 3 and first.failures == []
    assert [m.delivered for m in many] == [10] * 8
    with pytest.raises(ClosedError):
        p.producer.send(topic, 0, [b"late"])
    with rdk.Admin(broker.bootstrap_servers) as admin:
        assert sum(admin.watermarks(topic, q)[1] for q in range(2)) == 83


def test_failures_come_back_as_messages_with_their_errors(mock_cluster):
    mock_cluster.create_topic("aio-faults", 1)

    async def main():
        p = aio.Producer(mock_cluster.bootstrap_servers, queue_buffering_max_ms=20)
        try:
            await p.send("aio-faults", 0, [b"warm-up"])
            mock_cluster.push_request_errors("Produce", ["INVALID_RECORD"])
            return await p.send("aio-faults", 0, [(b"k%d" % i, b"v%d" % i) for i in range(5)])
        finally:
            left = await p.stop()
            assert left == 5 and left.failed == 5 and left.queued == 0

    result = asyncio.run(main())
    assert result.delivered == 0
    assert [(m.key, m.value, m.topic, e.name) for m, e in result.failures] == [
        (b"k%d" % i, b"v%d" % i, "aio-faults", "INVALID_RECORD") for i in range(5)]


def test_block_policy_waits_for_room_off_the_event_loop(mock_cluster):
    """While ``send()`` waits for room, the loop keeps running: it is the loop that ends the wait.

    The topic's only leader is down, so the 10-message queue stays full and ``send()`` must
    wait. A task on the same loop brings the leader back up only after it has seen the send
    pending for 100 ticks. A ``send()`` that blocked the loop would never let that task run:
    its wait would end only at ``timeout`` with 290 failures (no time window decides this).
    No thread holds the wait either: neither rdk.aio's call threads nor the loop's executor.
    """
    mock_cluster.create_topic("aio-block", 1)
    mock_cluster.partition_set_leader("aio-block", 0, 1)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        async with aio.Producer(mock_cluster.bootstrap_servers, queue_buffering_max_messages=10,
                                queue_buffering_max_ms=1, on_queue_full="block") as p:
            assert await p.send("aio-block", 0, [b"warm-up"]) == (1, [])
            mock_cluster.broker_set_down(1)
            t = asyncio.create_task(ticker())
            await asyncio.sleep(0.01)
            started = time.monotonic()
            send = asyncio.create_task(
                p.send("aio-block", 0, [b"%03d" % i for i in range(300)], timeout=20))
            seen = ticks
            while ticks - seen < 100 or p.producer.send_queue_length < 10:  # send() is waiting
                assert not send.done(), "send() finished while the leader was down"
                await asyncio.sleep(0.001)
            # the wait for room holds no thread: no call thread of rdk.aio's, no executor thread
            assert [t.name for t in threading.enumerate()
                    if t.name.startswith(("rdk-aio", "asyncio"))] == []
            released = time.monotonic()
            mock_cluster.broker_set_up(1)  # runs only if the loop is free while send() waits
            result = await send
            waited = time.monotonic() - started
            t.cancel()
        return result, waited, released - started

    result, waited, held = asyncio.run(main())
    assert result == (300, [])
    assert waited >= held >= 0.1  # at least 100 ticks of >= 1 ms passed while send() waited


def test_cancelled_waiter_does_not_break_the_producer(broker, new_topic):
    topic = new_topic(broker, 1)

    async def main():
        async with aio.Producer(broker.bootstrap_servers, queue_buffering_max_ms=200) as p:
            task = asyncio.create_task(p.send(topic, 0, [b"cancelled waiter"]))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await p.send(topic, 0, [b"after"])

    start = time.monotonic()
    assert asyncio.run(main()) == (1, [])
    assert time.monotonic() - start < 20
    with rdk.Admin(broker.bootstrap_servers) as admin:
        assert admin.watermarks(topic, 0)[1] == 2  # the cancelled call's message was still delivered


def test_block_policy_gives_up_at_timeout_with_the_refused_messages_as_failures(mock_cluster):
    """No room within ``timeout`` (0 here: one attempt): what fitted is delivered, the rest are
    the send's _QUEUE_FULL failures in call order, as rdk.Producer.send reports them."""
    mock_cluster.create_topic("aio-block-t", 1)
    mock_cluster.partition_set_leader("aio-block-t", 0, 1)

    async def main():
        async with aio.Producer(mock_cluster.bootstrap_servers, queue_buffering_max_messages=10,
                                queue_buffering_max_ms=1, on_queue_full="block") as p:
            assert await p.send("aio-block-t", 0, [b"warm-up"]) == (1, [])
            mock_cluster.broker_set_down(1)
            send = asyncio.create_task(
                p.send("aio-block-t", 0, [b"%02d" % i for i in range(30)], timeout=0))
            await asyncio.sleep(0)  # the send's one attempt runs (no await before it gives up)
            assert p.producer.send_queue_length == 10 and not p._room
            mock_cluster.broker_set_up(1)
            return await asyncio.wait_for(send, 60)

    result = asyncio.run(main())
    assert result.delivered == 10
    assert [(m.value, e.name) for m, e in result.failures] == [
        (b"%02d" % i, "_QUEUE_FULL") for i in range(10, 30)]
