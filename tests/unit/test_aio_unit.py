"""rdk.aio's own logic, fast: the Batch and ShareBatch wrappers, the ``Batches`` iterator,
coroutine rebalance callbacks (``_on_loop``), the Consumer's and ShareConsumer's argument
checks and stop before start, and the Producer's pending-send bookkeeping (an
authentication failure fails every pending send, room waiters are woken, a refused send
leaves nothing pending) against librdkafka's in-process mock cluster. The end-to-end aio
paths run in tests/integration/test_aio_*.py (on the mock cluster too)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import rdk
from rdk import _binding, aio
from rdk.aio._consumer import Batches, _on_loop
from rdk.consumer._batch import Batch as SyncBatch
from rdk.errors import KafkaError
from rdk.share._messages import ACCEPT, REJECT, RELEASE
from rdk.testing import MockCluster


@pytest.fixture(scope="module")
def cluster():
    with MockCluster(1) as mc:
        mc.create_topic("aio-unit", 2)
        yield mc


def _message(offset: int) -> rdk.Message:
    return tuple.__new__(rdk.Message, (b"v%d" % offset, None, None, 5, "t", 1, offset))


def test_batch_wraps_an_rdk_batch_and_commits_it():
    calls: list[tuple] = []
    ms = [_message(3), _message(4)]
    inner = SyncBatch(ms, 2, 1, "t", [(1, 3, 4, 2)],
                      lambda *args: calls.append(args))
    b = aio.Batch(inner)
    assert b.messages is ms and b.topic == "t" and b.offsets == {1: (3, 4)}
    assert (b.repeats, b.misses) == (2, 1) and len(b) == 2 and list(b) == ms
    assert repr(b) == "<rdk.aio.Batch t 2 messages {1: (3, 4)}>"
    asyncio.run(b.commit())
    assert calls == [(inner, True, None, True)]


def test_share_batch_wraps_an_rdk_share_batch():
    ms = [tuple.__new__(rdk.ShareMessage, (b"%d" % i, None, None, None, "t", 0, i, 1))
          for i in range(4)]
    inner = rdk.ShareBatch(ms)
    b = aio.ShareBatch(inner)
    assert b.messages is ms and len(b) == 4 and list(b) == ms
    assert repr(b) == "<rdk.aio.ShareBatch 4 messages>"
    b.accept(ms[0])
    b.release(ms[1])
    b.reject(ms[2])
    with pytest.raises(ValueError, match="already rejected"):
        b.accept(ms[2])
    assert not inner._settled.is_set()
    asyncio.run(b.commit())
    assert inner._settled.is_set()
    assert inner._finish(ACCEPT) == bytes([ACCEPT, RELEASE, REJECT, ACCEPT])


def test_batches_hands_on_each_batch_with_its_timeout_and_ends_on_none():
    got: list = []
    items = ["a", "b", None, "c"]

    async def next_batch(timeout):
        got.append(timeout)
        return items.pop(0)

    async def main():
        it = Batches(next_batch, 2.5)
        assert it.__aiter__() is it
        out = [b async for b in it]
        assert await it.__anext__() == "c"  # the same iterator goes on after an end
        return out

    assert asyncio.run(main()) == ["a", "b"] and got == [2.5, 2.5, 2.5, 2.5]


def test_on_loop_without_a_callback_is_none():
    assert _on_loop(None, lambda: None) is None


def test_on_loop_returns_a_plain_result_and_runs_a_coroutine_on_the_loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        seen: list = []
        assert _on_loop(lambda parts: ("plain", parts), lambda: loop)([("t", 0)]) == (
            "plain", [("t", 0)])

        async def on_assign(parts):
            seen.append((parts, asyncio.get_running_loop() is loop,
                         threading.current_thread() is thread))
            return len(parts)

        assert _on_loop(on_assign, lambda: loop)([("t", 0), ("t", 1)]) == 2
        assert seen == [([("t", 0), ("t", 1)], True, True)]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_on_loop_refuses_a_coroutine_without_an_open_loop(recwarn):
    ran: list = []

    async def on_revoke(parts):
        ran.append(parts)

    closed = asyncio.new_event_loop()
    closed.close()
    for loop in (None, closed):
        call = _on_loop(on_revoke, lambda loop=loop: loop)
        with pytest.raises(RuntimeError) as info:
            call([("t", 0)])
        assert str(info.value) == ("rdk.aio.Consumer: a coroutine rebalance callback needs the "
                                   "consumer's event loop, which is closed")
    assert ran == []
    import gc
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


def test_on_loop_refuses_another_awaitable_without_a_loop():
    class Awaitable:
        def __await__(self):
            yield from ()

    with pytest.raises(RuntimeError, match="which is closed"):
        _on_loop(lambda parts: Awaitable(), lambda: None)([])


def test_consumer_refuses_receive_callback_and_wraps_rebalance_callbacks(cluster, tmp_path):
    with pytest.raises(TypeError) as info:
        aio.Consumer(cluster.bootstrap_servers, "aio-unit", tmp_path, receive_callback=print)
    assert str(info.value) == ("rdk.aio.Consumer has no receive_callback: iterate it "
                               "(async for batch in consumer)")

    async def on_assign(parts):
        return None

    def on_revoke(parts):
        return "sync"

    c = aio.Consumer(cluster.bootstrap_servers, "aio-unit", group_id="aio-unit-g",
                     on_assign=on_assign, on_revoke=on_revoke)
    try:
        inner = c.consumer
        assert isinstance(inner, rdk.Consumer)
        assert inner._config.on_assign is not on_assign  # wrapped for the loop
        assert inner._config.on_revoke([("aio-unit", 0)]) == "sync"
    finally:
        asyncio.run(c.stop())


def test_consumer_batches_checks_its_timeout_and_stop_before_start(cluster, tmp_path):
    c = aio.Consumer(cluster.bootstrap_servers, "aio-unit", tmp_path)
    assert c._waker.wake in c.consumer._wakers
    assert c.paused is False and c.error is None
    assert repr(c) == f"<rdk.aio.Consumer {c.consumer!r}>"
    with pytest.raises(ValueError, match="timeout"):
        c.batches(-1)
    with pytest.raises(TypeError, match="timeout"):
        c.batches("5")  # type: ignore[arg-type]
    it = c.batches(2)
    assert isinstance(it, Batches) and it._timeout == 2.0 and it._next == c._next
    assert c.batches()._timeout is None and c.__aiter__()._timeout is None
    with pytest.raises(RuntimeError):
        c.seek(0, 5)

    async def main():
        async with c as entered:
            assert entered is c

    asyncio.run(main())
    assert c.consumer._state == "closed" and c._waker.wake not in c.consumer._wakers


def _produce(cluster, topic: str, values: list[bytes]) -> None:
    """``values`` into partition 0 of ``topic`` (made if missing), delivered."""
    with rdk.Producer(cluster.bootstrap_servers) as p:
        p.send(topic, 0, values)
        assert p.flush(10) == 0


def test_consumer_pause_resume_and_iteration_on_the_mock(cluster, tmp_path):
    cluster.create_topic("aio-unit-pr", 1)
    _produce(cluster, "aio-unit-pr", [b"a", b"b"])

    async def main():
        async with aio.Consumer(cluster.bootstrap_servers, "aio-unit-pr", tmp_path,
                                start_offset="earliest") as c:
            first = await c.batches(30).__anext__()
            c.pause()
            assert c.paused
            c.resume()
            assert not c.paused
            c.seek(0, 0)
            await first.commit()
            return [m.value for m in first], c

    values, c = asyncio.run(main())
    assert values == [b"a", b"b"]
    with pytest.raises(rdk.ClosedError):
        c.pause()
    with pytest.raises(rdk.ClosedError):
        c.resume()


def test_share_consumer_refuses_receive_callback_and_stops_before_start(cluster):
    with pytest.raises(TypeError) as info:
        aio.ShareConsumer(cluster.bootstrap_servers, "aio-unit", group_id="g",
                          receive_callback=print)
    assert str(info.value) == ("rdk.aio.ShareConsumer has no receive_callback: iterate it "
                               "(async for batch in consumer)")
    c = aio.ShareConsumer(cluster.bootstrap_servers, "aio-unit", group_id="aio-unit-share")
    assert isinstance(c.consumer, rdk.ShareConsumer) and c.error is None
    assert c._waker.wake in c.consumer._wakers
    assert repr(c) == f"<rdk.aio.ShareConsumer {c.consumer!r}>"
    with pytest.raises(ValueError, match="timeout"):
        c.batches(-1)
    assert c.batches(3)._timeout == 3.0 and c.batches()._timeout is None
    assert c.__aiter__()._timeout is None and c.batches()._next == c._next

    async def main():
        async with c as entered:
            assert entered is c

    asyncio.run(main())
    assert c._waker.wake not in c.consumer._wakers


def test_an_authentication_failure_fails_every_pending_send_naming_its_topic(cluster):
    async def main():
        p = aio.Producer(cluster.bootstrap_servers)
        try:
            assert p.producer._s.on_auth_failure[-1] == p._fail_pending
            loop = asyncio.get_running_loop()
            a = p._pending_future(loop, "orders")
            b = p._pending_future(loop, "refunds")
            err = KafkaError(_binding.ERROR_CODES["_AUTHENTICATION"], "SASL failed")
            threading.Thread(target=p._fail_pending, args=(err,)).start()
            results = await asyncio.gather(a, b, return_exceptions=True)
            assert p._pending == {}
            return results
        finally:
            await p.stop()

    results = asyncio.run(main())
    assert [(type(e), e.name, e.context, str(e)) for e in results] == [
        (KafkaError, "_AUTHENTICATION", topic,
         f"{topic}: _AUTHENTICATION: SASL failed; the send's messages stay queued (librdkafka "
         "retries them until message.timeout.ms; stop() fails them at once)")
        for topic in ("send to 'orders'", "send to 'refunds'")]


def test_sends_settle_and_leave_nothing_pending(cluster):
    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1) as p:
            assert repr(p) == f"<rdk.aio.Producer {p.producer!r}>"
            assert await p.partition_count("aio-unit") == 2
            first = await p.send("aio-unit", None, [b"a", b"b"])
            second = await p.send("aio-unit", 1, [b"c"], timeout=10)
            with pytest.raises(TypeError):
                await p.send("aio-unit", 0, [object()])
            assert p._pending == {} and p._room == {}
            flushed = await p.flush(10)
        return first, second, flushed, p

    first, second, flushed, p = asyncio.run(main())
    assert first == (2, []) and second == (1, []) and flushed == 0
    with pytest.raises(rdk.ClosedError):
        p.producer.send("aio-unit", 0, [b"late"])


def test_block_policy_sends_in_steps_and_a_refused_send_leaves_nothing_pending(cluster):
    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1,
                                on_queue_full="block") as p:
            assert await p.partition_count("aio-unit") == 2
            got = await p.send("aio-unit", 0, [b"x"] * 3, timeout=30)
            nothing = await p.send("aio-unit", 1, [], timeout=None)
            with pytest.raises(TypeError):
                await p.send("aio-unit", 0, [object()])
            assert p._pending == {} and p._room == {}
            return got, nothing

    with rdk.Admin(cluster.bootstrap_servers) as admin:
        before = [admin.watermarks("aio-unit", q)[1] for q in range(2)]
        got, nothing = asyncio.run(main())
        after = [admin.watermarks("aio-unit", q)[1] for q in range(2)]
    assert got == (3, []) and nothing == (0, [])
    assert [a - b for a, b in zip(after, before, strict=True)] == [3, 0]  # the partition given


def test_room_waiters_are_woken_by_delivery_reports(cluster):
    async def main():
        p = aio.Producer(cluster.bootstrap_servers)
        try:
            p._on_deliveries()  # nobody waiting: nothing to do
            loop = asyncio.get_running_loop()
            a, b = p._room_future(loop), p._room_future(loop)
            assert set(p._room) == {a, b}
            threading.Thread(target=p._on_deliveries).start()
            await asyncio.wait_for(asyncio.gather(a, b), 30)
            assert p._room == {}
            c = p._room_future(loop)
            p._forget_room(c)
            p._forget_room(c)
            assert p._room == {}
            d = p._pending_future(loop, "t")
            p._settler(loop, d)(4, [])
            assert await d == (4, []) and p._pending == {}
        finally:
            await p.stop()

    asyncio.run(main())


def test_documented_default_timeouts():
    import inspect

    def default(fn, name="timeout"):
        return inspect.signature(fn).parameters[name].default

    assert (default(aio.Producer.flush), default(aio.Producer.partition_count),
            default(aio.Producer.stop), default(aio.Consumer.stop),
            default(aio.ShareConsumer.stop)) == (15.0, 10.0, 15.0, 30.0, 30.0)


def test_share_consumer_iterators_go_to_its_next():
    c = aio.ShareConsumer("localhost:1", "aio-unit", group_id="aio-unit-g3")
    try:
        assert c.__aiter__()._next == c._next and c.batches(1)._next == c._next
    finally:
        asyncio.run(c.stop())


def test_a_block_send_that_finds_no_room_in_time_returns_the_rest_as_failures(cluster):
    """The queue holds 10; the leader is down, so no room comes within the send's timeout:
    the send ends with what it enqueued and the rest as _QUEUE_FULL failures (it neither
    raises TimeoutError nor waits on), to the partition given."""
    cluster.create_topic("aio-unit-room", 2)
    cluster.partition_set_leader("aio-unit-room", 1, 1)

    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_messages=10,
                                queue_buffering_max_ms=1, on_queue_full="block") as p:
            assert await p.send("aio-unit-room", 1, [b"warm-up"]) == (1, [])
            cluster.broker_set_down(1)
            send = asyncio.create_task(
                p.send("aio-unit-room", 1, [b"%02d" % i for i in range(25)], timeout=0.3))
            # (this task runs only while send() awaits: the room it waits for, then its
            # deliveries; so a room waiter seen and then gone means it stopped waiting)
            while not p._room:
                assert not send.done()
                await asyncio.sleep(0.005)
            waited = 0
            while p._room and waited < 4000:  # (20 s: only a send that never gives up)
                await asyncio.sleep(0.005)
                waited += 1
            assert not p._room, "the send still waits for room past its timeout"
            cluster.broker_set_up(1)  # the 10 enqueued are delivered, the send returns
            return await asyncio.wait_for(send, 60)

    try:
        result = asyncio.run(main())
    finally:
        cluster.broker_set_up(1)
    assert result.delivered == 10
    assert [(m.value, m.partition, e.name) for m, e in result.failures] == [
        (b"%02d" % i, 1, "_QUEUE_FULL") for i in range(10, 25)]


async def _fail_by_auth(cluster, p, send) -> KafkaError:
    """Fail ``p``'s pending sends by an authentication failure, bring broker 1 back up:
    the error ``send`` (a task) raises."""
    p._fail_pending(KafkaError(_binding.ERROR_CODES["_AUTHENTICATION"], "bad password"))
    cluster.broker_set_up(1)
    with pytest.raises(KafkaError) as info:
        await asyncio.wait_for(send, 60)
    return info.value


def _auth_error(cluster, main) -> KafkaError:
    try:
        return asyncio.run(main())
    finally:
        cluster.broker_set_up(1)


@pytest.mark.parametrize("policy", ["block", "drop"])
def test_a_send_without_timeout_failed_by_an_auth_failure_names_its_topic(cluster, policy):
    topic = f"aio-unit-auth-{policy}"
    cluster.create_topic(topic, 1)

    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_messages=5,
                                queue_buffering_max_ms=1, on_queue_full=policy) as p:
            assert await p.send(topic, 0, [b"warm-up"]) == (1, [])
            cluster.broker_set_down(1)
            send = asyncio.create_task(p.send(topic, 0, [b"x"] * (8 if policy == "block" else 3)))
            while p.producer.send_queue_length < 3 or (policy == "block" and not p._room):
                assert not send.done()
                await asyncio.sleep(0.005)
            return await _fail_by_auth(cluster, p, send)

    error = _auth_error(cluster, main)
    assert (error.name, error.context) == ("_AUTHENTICATION", f"send to {topic!r}")


def test_a_delivery_report_after_an_auth_failure_is_harmless(cluster):
    async def main():
        async with aio.Producer(cluster.bootstrap_servers) as p:
            loop = asyncio.get_running_loop()
            fut = p._pending_future(loop, "t")
            p._fail_pending(KafkaError(_binding.ERROR_CODES["_AUTHENTICATION"], "x"))
            p._settler(loop, fut)(1, [])  # the report of a send failed already: no KeyError
            with pytest.raises(KafkaError):
                await fut
            assert p._pending == {}

    asyncio.run(main())


def test_a_coroutine_rebalance_callback_on_a_loop_that_does_not_run_gives_up(monkeypatch):
    from rdk.aio import _consumer as aio_consumer

    monkeypatch.setattr(aio_consumer, "_CALLBACK_TIMEOUT", 0.2)
    idle = asyncio.new_event_loop()  # open, never run

    async def on_assign(parts):
        return parts

    try:
        with pytest.raises(TimeoutError):
            _on_loop(on_assign, lambda: idle)([("t", 0)])
        idle.run_until_complete(asyncio.sleep(0.01))  # the callback runs late, then ends
    finally:
        idle.close()


def test_asking_for_the_next_batch_records_the_one_before(cluster, tmp_path):
    cluster.create_topic("aio-unit-next", 1)
    _produce(cluster, "aio-unit-next", [b"a", b"b"])

    async def main():
        async with aio.Consumer(cluster.bootstrap_servers, "aio-unit-next", tmp_path,
                                start_offset="earliest") as c:
            it = c.batches(30)
            first = await it.__anext__()
            _produce(cluster, "aio-unit-next", [b"c"])
            second = await it.__anext__()  # asking for it records the first
            return [m.offset for m in first], [m.offset for m in second]

    first, second = asyncio.run(main())
    assert first[0] == 0 and second[0] == first[-1] + 1
    # the first batch is recorded; the second, never committed, is not
    assert rdk.offsets.FileOffsetStore(tmp_path, "aio-unit-next").read([0]) == {0: first[-1]}


def test_a_start_that_fails_raises_to_the_awaiting_task(cluster, tmp_path):
    async def main():
        c = aio.Consumer(cluster.bootstrap_servers, "aio-unit-missing", tmp_path)
        try:
            with pytest.raises(KafkaError) as info:
                await asyncio.wait_for(c.batches(5).__anext__(), 20)  # (a bound against hangs)
            return info.value
        finally:
            await c.stop()

    error = asyncio.run(main())
    assert (error.name, error.context) == ("UNKNOWN_TOPIC_OR_PART", "topic 'aio-unit-missing'")


def test_two_tasks_starting_one_consumer_start_it_once_and_raise_on_no_thread(
        cluster, tmp_path, monkeypatch):
    """Both tasks ask for a batch before the start ran: two starter threads, held on the
    consumer's state lock until both exist; one starts the consumer and goes on as its fetch
    thread, the other finds it started and ends, with nothing raised on either."""
    cluster.create_topic("aio-unit-two", 1)
    _produce(cluster, "aio-unit-two", [b"only"])
    raised: list = []
    monkeypatch.setattr(threading, "excepthook", raised.append)

    async def main():
        async with aio.Consumer(cluster.bootstrap_servers, "aio-unit-two", tmp_path,
                                start_offset="earliest") as c:
            name = c.consumer._threads.fetch_thread_name
            with c.consumer._state_lock:
                tasks = [asyncio.ensure_future(c.batches(1).__anext__()) for _ in range(2)]
                while sum(t.name == name for t in threading.enumerate()) < 2:
                    await asyncio.sleep(0.005)  # until both starters wait for the lock
            done = await asyncio.gather(*tasks, return_exceptions=True)
            starters = [t for t in threading.enumerate() if t.name == name]
            # daemon, as rdk.Consumer's own fetch thread: a consumer never stopped does
            # not keep the program from exiting
            assert starters and all(t.daemon for t in starters)
            return done, starters

    done, starters = asyncio.run(main())
    got = [[m.value for m in d] for d in done if not isinstance(d, BaseException)]
    assert got == [[b"only"]]
    assert [type(d) for d in done if isinstance(d, BaseException)] == [StopAsyncIteration]
    for t in starters:  # the fetch thread settles the stop's future just before it ends
        t.join(20)
    assert raised == [] and not any(t.is_alive() for t in starters)


def test_share_consumer_stop_hands_the_share_thread_and_its_first_stop_on(monkeypatch):
    """stop() hands stop_and_wait the timeout (30 s by default), the stop begun before, and
    where the stop's work runs: the share thread's after_loop once it exists."""
    from rdk.aio import _share as aio_share

    seen: list[tuple] = []

    async def spy(consumer, timeout, stopped, after_loop):
        seen.append((timeout, stopped, after_loop()))
        return f"stop {len(seen)}"

    monkeypatch.setattr(aio_share, "stop_and_wait", spy)
    c = aio.ShareConsumer("localhost:1", "aio-unit", group_id="aio-unit-g4")
    try:
        asyncio.run(c.stop())
        c.consumer._worker = type("Worker", (), {"after_loop": "the share thread's"})()
        asyncio.run(c.stop(5))
    finally:
        c.consumer._worker, c._stopped = None, None
        monkeypatch.undo()
        asyncio.run(c.stop())
    assert seen == [(30.0, None, None), (5, "stop 1", "the share thread's")]


def test_consumer_stop_hands_its_fetch_thread_and_its_first_stop_on(monkeypatch, tmp_path):
    """As ShareConsumer.stop: the timeout (30 s by default), the stop begun before, and the
    fetch thread's after_loop once the pipeline exists (None before the start)."""
    from rdk.aio import _consumer as aio_consumer

    seen: list[tuple] = []

    async def spy(consumer, timeout, stopped, after_loop):
        seen.append((timeout, stopped, after_loop()))
        return f"stop {len(seen)}"

    monkeypatch.setattr(aio_consumer, "stop_and_wait", spy)
    c = aio.Consumer("localhost:1", "aio-unit", tmp_path)
    threads = c.consumer._threads
    try:
        asyncio.run(c.stop())
        threads.pipeline = type("Pipeline", (), {"after_loop": "the fetch thread's"})()
        asyncio.run(c.stop(5))
    finally:
        threads.pipeline, c._stopped = None, None
        monkeypatch.undo()
        asyncio.run(c.stop())
    assert seen == [(30.0, None, None), (5, "stop 1", "the fetch thread's")]


def test_a_send_under_drop_goes_to_the_partition_given(cluster):
    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1,
                                balancer="round_robin") as p:
            return await p.send("aio-unit", 1, [b"p1"] * 3)

    with rdk.Admin(cluster.bootstrap_servers) as admin:
        before = [admin.watermarks("aio-unit", q)[1] for q in range(2)]
        got = asyncio.run(main())
        after = [admin.watermarks("aio-unit", q)[1] for q in range(2)]
    assert got == (3, [])
    assert [a - b for a, b in zip(after, before, strict=True)] == [0, 3]


class _StopsElsewhere:
    """Stands for an rdk consumer in stop_on_own_thread/stop_and_wait: ``_stop`` hands
    ``work`` on (as the consumer's stop does when it has work to do); the sync ``stop()``
    records the thread it ran on."""

    _describe = "c-1"

    def __init__(self, work=None, state: str = "running") -> None:
        self._work, self._state = work, state
        self.ran: list[tuple] = []

    def _stop(self, timeout, elsewhere) -> None:
        elsewhere(self._work)

    def stop(self, timeout) -> None:
        self.ran.append((timeout, threading.current_thread().name))


@pytest.mark.parametrize("own", ["none yet", "loop ended"])
def test_the_stops_work_gets_a_daemon_thread_of_its_own_once_the_consumers_thread_ended(own):
    """No consumer thread to run the stop's work (none, or its loop has ended): it runs on
    a daemon thread named after the consumer, which settles the returned future."""
    from rdk._lifecycle import AfterLoop
    from rdk.aio._consumer import stop_on_own_thread

    ended = AfterLoop()
    ended.loop_ended()
    ran: list[tuple] = []
    c = _StopsElsewhere(lambda: ran.append(
        (threading.current_thread().name, threading.current_thread().daemon)))
    done = stop_on_own_thread(c, 5.0, lambda: None if own == "none yet" else ended)
    assert done.result(20) is None
    assert ran == [("rdk-aio-stop-c-1", True)]


def test_a_failure_in_the_stops_work_is_raised_to_the_awaiting_tasks():
    from rdk.aio._consumer import stop_and_wait, stop_on_own_thread

    boom = RuntimeError("the stop's work failed")

    def work():
        raise boom
    done = stop_on_own_thread(_StopsElsewhere(work), 5.0, lambda: None)
    assert done.exception(20) is boom
    with pytest.raises(RuntimeError) as info:
        asyncio.run(stop_and_wait(_StopsElsewhere(), 5.0, done, lambda: None))
    assert info.value is boom


def test_an_aio_stop_while_the_sync_stop_is_under_way_waits_for_it_on_a_thread():
    """The consumer's synchronous stop() is under way on another thread ("stopping"): the
    aio stop calls stop(timeout) too (it waits for the first) on a thread of its own, and
    keeps no future (nothing was begun here)."""
    from rdk.aio._consumer import stop_and_wait

    c = _StopsElsewhere(state="stopping")
    assert asyncio.run(stop_and_wait(c, 7.0, None, lambda: None)) is None
    assert c.ran == [(7.0, "rdk-aio-stop-c-1")]


def test_a_block_send_that_waited_for_room_reports_every_attempts_failures():
    """on_queue_full="block" with room for one message: a send of three enqueues them in
    three attempts, each waiting for the report of the one before. The broker refuses each
    (INVALID_RECORD): all three failures are returned, none of the queue's _QUEUE_FULL."""
    with MockCluster(1) as mc:
        mc.create_topic("blk", 1)

        async def main():
            async with aio.Producer(mc.bootstrap_servers, queue_buffering_max_messages=1,
                                    queue_buffering_max_ms=1, on_queue_full="block") as p:
                assert await p.send("blk", 0, [b"warm-up"]) == (1, [])
                mc.push_request_errors("Produce", ["INVALID_RECORD"] * 3)
                return await asyncio.wait_for(p.send("blk", 0, [b"a", b"b", b"c"], timeout=20), 30)

        delivered, failures = asyncio.run(main())
    assert delivered == 0
    assert [(m.value, e.name) for m, e in failures] == [
        (b"a", "INVALID_RECORD"), (b"b", "INVALID_RECORD"), (b"c", "INVALID_RECORD")]
