"""rdk.aio waits on file descriptors and thread-settled futures, never on the loop's executor.

Every claim is an event: the executor's threads all run at once (a barrier of its size)
while the consumers wait; a waiting consumer is one whose wake-up fd is registered with the
loop. Time bounds are deadlines against hangs only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest

import rdk
import rdk.aio
from rdk.testing import MockCluster

EXECUTOR_THREADS = 4
DEADLINE = 60.0


def run(coro_fn, loop_kind="asyncio"):
    """Run ``coro_fn()`` on a new loop of ``loop_kind`` with a small default executor."""
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(
        EXECUTOR_THREADS, thread_name_prefix="loop-executor"))
    try:
        return loop.run_until_complete(asyncio.wait_for(coro_fn(), 300))
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


async def waiting(consumers):
    """Until every consumer's task waits on its wake-up fd (registered with the loop)."""
    while not all(c._waker._waiting for c in consumers):
        await asyncio.sleep(0.01)  # a poll of state, not a claim: the claim is checked after


async def executor_is_free():
    """Every thread of the loop's default executor runs at once: none is held."""
    loop = asyncio.get_running_loop()
    barrier = threading.Barrier(EXECUTOR_THREADS)
    await asyncio.gather(*(loop.run_in_executor(None, barrier.wait, DEADLINE)
                           for _ in range(EXECUTOR_THREADS)))
    assert await asyncio.wait_for(loop.getaddrinfo("localhost", 80), DEADLINE)
    assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), DEADLINE) == 42


def os_threads():
    """The process's threads, librdkafka's included (threading sees only Python's)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def executor_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("loop-executor")]


def produce(bootstrap, topic, payloads, partition=0):
    p = rdk.Producer(bootstrap, queue_buffering_max_ms=5)
    assert p.send(topic, partition, payloads).enqueued == len(payloads)
    assert p.stop(30) == 0


@pytest.fixture
def cluster():
    with MockCluster(1) as mc:
        yield mc


def test_a_hundred_idle_consumers_leave_the_executor_free_and_stop_promptly(cluster, tmp_path):
    n = 100
    for i in range(n):
        cluster.create_topic(f"idle-{i}", 1)

    async def main():
        consumers = [rdk.aio.Consumer(cluster.bootstrap_servers, f"idle-{i}", tmp_path / str(i),
                                      statistics_interval_ms=0) for i in range(n)]

        async def read(c):
            return [b async for b in c]

        before = os_threads()
        tasks = [asyncio.create_task(read(c)) for c in consumers]
        await asyncio.wait_for(waiting(consumers), DEADLINE)
        per_consumer = (os_threads() - before) / n
        held = executor_threads()  # none: no consumer ever used the loop's executor
        t0 = time.monotonic()
        await executor_is_free()
        answered = time.monotonic() - t0
        t0 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(c.stop() for c in consumers)), DEADLINE)
        got = await asyncio.wait_for(asyncio.gather(*tasks), DEADLINE)
        stopped = time.monotonic() - t0
        return per_consumer, held, got, answered, stopped

    per_consumer, held, got, answered, stopped = run(main)
    # figures for the record (the deadlines above are the only time bounds)
    print(f"executor barrier + getaddrinfo + to_thread answered in {answered:.3f} s; "
          f"{n} consumers stopped in {stopped:.2f} s")
    assert got == [[]] * n  # every iteration ended at stop(), empty
    assert held == []
    print(f"threads per idle aio consumer (librdkafka's and rdk's own): {per_consumer:.1f}")
    assert per_consumer <= 12  # librdkafka: main, internal, broker threads; rdk: fetch, committer...


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_busy_and_an_idle_consumer_side_by_side(cluster, tmp_path, loop_kind):
    cluster.create_topic("busy", 1)
    cluster.create_topic("quiet", 1)
    payloads = [b"b%d" % i for i in range(3000)]
    produce(cluster.bootstrap_servers, "busy", payloads)

    async def main():
        busy = rdk.aio.Consumer(cluster.bootstrap_servers, "busy", tmp_path / "b",
                                max_messages_per_callback=100)
        idle = rdk.aio.Consumer(cluster.bootstrap_servers, "quiet", tmp_path / "q")
        quiet_it = idle.batches()
        quiet = asyncio.create_task(quiet_it.__anext__())
        await asyncio.wait_for(waiting([idle]), DEADLINE)
        got = []
        async for batch in busy:
            got.extend(m.value for m in batch)
            await batch.commit()
            if len(got) >= len(payloads):
                break
        assert not quiet.done() and idle._waker._waiting  # still waiting, nothing invented
        assert executor_threads() == []  # neither consumer used the loop's executor
        await executor_is_free()
        await asyncio.to_thread(produce, cluster.bootstrap_servers, "quiet", [b"now"])
        first = await asyncio.wait_for(quiet, DEADLINE)
        await busy.stop()
        await idle.stop()
        return got, [m.value for m in first]

    got, first = run(main, loop_kind)
    assert got == payloads and first == [b"now"]


def test_a_kept_iterator_goes_on_after_a_cancelled_anext(cluster, tmp_path):
    cluster.create_topic("cancel", 1)

    async def main():
        consumer = rdk.aio.Consumer(cluster.bootstrap_servers, "cancel", tmp_path)
        it = consumer.batches()
        pending = asyncio.create_task(it.__anext__())
        await asyncio.wait_for(waiting([consumer]), DEADLINE)
        # the loop runs other tasks while the wait is pending (it holds no loop time)
        other = asyncio.Event()
        asyncio.get_running_loop().call_soon(other.set)
        await asyncio.wait_for(other.wait(), DEADLINE)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert not consumer._waker._waiting  # the fd left the loop with the cancelled wait
        await asyncio.to_thread(produce, cluster.bootstrap_servers, "cancel", [b"after"])
        batch = await asyncio.wait_for(it.__anext__(), DEADLINE)  # the same iterator
        await consumer.stop()
        return [m.value for m in batch]

    assert run(main) == [b"after"]


def test_several_loops_in_several_threads(cluster, tmp_path):
    k = 3
    for i in range(k):
        cluster.create_topic(f"loop-{i}", 1)
        produce(cluster.bootstrap_servers, f"loop-{i}", [b"x%d" % i] * 10)
    results: dict[int, object] = {}

    def thread_main(i):
        async def main():
            async with rdk.aio.Consumer(cluster.bootstrap_servers, f"loop-{i}",
                                        tmp_path / str(i)) as c:
                got = []
                async for batch in c:
                    got.extend(m.value for m in batch)
                    if len(got) >= 10:
                        return got
        try:
            results[i] = run(main, "uvloop" if i == 1 and _has_uvloop() else "asyncio")
        except BaseException as e:  # surfaced in the test thread
            results[i] = e

    threads = [threading.Thread(target=thread_main, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE * 2)
    assert results == {i: [b"x%d" % i] * 10 for i in range(k)}


def _has_uvloop():
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def test_two_tasks_waiting_on_one_consumer_each_get_a_batch(cluster, tmp_path):
    cluster.create_topic("two", 1)

    async def main():
        consumer = rdk.aio.Consumer(cluster.bootstrap_servers, "two", tmp_path)
        it = consumer.batches()
        tasks = {asyncio.create_task(it.__anext__()) for _ in range(2)}
        while consumer._waker._waiting < 2:  # both wait on the one fd
            await asyncio.sleep(0.01)
        await asyncio.to_thread(produce, cluster.bootstrap_servers, "two", [b"1"])
        done, pending = await asyncio.wait(tasks, timeout=DEADLINE,
                                           return_when=asyncio.FIRST_COMPLETED)
        await asyncio.to_thread(produce, cluster.bootstrap_servers, "two", [b"2"])
        rest = await asyncio.wait_for(pending.pop(), DEADLINE)
        await consumer.stop()
        return [m.value for m in done.pop().result()], [m.value for m in rest]

    assert run(main) == ([b"1"], [b"2"])


@pytest.mark.parametrize("on_queue_full", ["block", "raise"])
def test_one_producer_serves_loops_in_several_threads(cluster, on_queue_full):
    cluster.create_topic("loops-p", 2)
    producer = rdk.aio.Producer(cluster.bootstrap_servers, on_queue_full=on_queue_full,
                                queue_buffering_max_ms=1)
    results: dict[int, object] = {}

    def thread_main(i):
        async def main():
            return await producer.send("loops-p", i % 2, [b"t%d-%d" % (i, j) for j in range(200)])
        try:
            results[i] = run(main, "uvloop" if i == 1 and _has_uvloop() else "asyncio")
        except BaseException as e:  # surfaced in the test thread
            results[i] = e

    threads = [threading.Thread(target=thread_main, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE * 2)
    assert producer.producer.stop(30) == 0
    assert results == {i: (200, []) for i in range(3)}


# ---- flush, stop and partition_count: futures the producer's event thread settles ----------

FAST_RECONNECT = {"reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100}


def no_thread_for_the_call(before):
    """No thread of rdk.aio's calls, of asyncio's or the loop's executor exists, and no thread
    at all was started since ``before`` (the call waits in no thread)."""
    named = [t.name for t in threading.enumerate()
             if t.name.startswith(("rdk-aio", "asyncio", "loop-executor"))]
    assert named == []
    assert set(threading.enumerate()) <= before, "a thread was started for the call"


async def the_loop_runs_another_task():
    """A task created now completes while the call is pending (the loop is not held)."""
    ran = asyncio.Event()

    async def other():
        ran.set()

    task = asyncio.create_task(other())
    await asyncio.wait_for(ran.wait(), DEADLINE)
    await task


async def until(condition):
    async def poll():
        while not condition():
            await asyncio.sleep(0.01)  # a poll of state; the claims are checked after it
    await asyncio.wait_for(poll(), DEADLINE)


async def pending(waiting, before):
    """Until the call waits (``waiting()``), or a thread was started for it (which
    no_thread_for_the_call then reports)."""
    await until(lambda: waiting() or not set(threading.enumerate()) <= before)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_flush_waits_in_no_thread_and_the_loop_ends_it(cluster, loop_kind):
    """The leader is down, so the flush cannot finish until the loop itself brings it up:
    the loop runs other tasks meanwhile and no thread waits for the flush."""
    cluster.create_topic("aio-flush", 1)

    async def main():
        async with rdk.aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1,
                                    driver_options=FAST_RECONNECT) as p:
            assert await p.send("aio-flush", 0, [b"warm-up"]) == (1, [])
            cluster.broker_set_down(1)
            before = set(threading.enumerate())
            send = asyncio.create_task(p.send("aio-flush", 0, [b"a", b"b"]))
            await until(lambda: p.producer.send_queue_length == 2)
            flush = asyncio.create_task(p.flush(DEADLINE))
            await pending(lambda: p._work._flushes, before)  # the flush waits
            await the_loop_runs_another_task()
            assert not flush.done()
            no_thread_for_the_call(before)
            cluster.broker_set_up(1)  # runs only because the loop is free
            result = await asyncio.wait_for(flush, DEADLINE)
            return result, result.failed, await send

    result, failed, delivery = run(main, loop_kind)
    assert (result, failed, delivery) == (0, 0, (2, []))


def test_partition_count_waits_in_no_thread_and_the_loop_ends_it(cluster):
    cluster.create_topic("aio-count", 3)

    async def main():
        async with rdk.aio.Producer(cluster.bootstrap_servers,
                                    driver_options=FAST_RECONNECT) as p:
            cluster.broker_set_down(1)
            before = set(threading.enumerate())
            lookup = asyncio.create_task(p.partition_count("aio-count", DEADLINE))
            await pending(lambda: p._work._calls, before)  # the lookup waits
            await the_loop_runs_another_task()
            assert not lookup.done()
            no_thread_for_the_call(before)
            cluster.broker_set_up(1)
            return await asyncio.wait_for(lookup, DEADLINE)

    assert run(main) == 3


def test_stop_waits_in_no_thread_and_frees_the_handle_on_the_event_thread(cluster):
    cluster.create_topic("aio-stop", 1)

    async def main():
        p = rdk.aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1,
                             driver_options=FAST_RECONNECT)
        assert await p.send("aio-stop", 0, [b"warm-up"]) == (1, [])
        cluster.broker_set_down(1)
        events = p.producer._client.event_thread
        before = set(threading.enumerate())
        send = asyncio.create_task(p.send("aio-stop", 0, [b"x", b"y", b"z"]))
        await until(lambda: p.producer.send_queue_length == 3)
        stop = asyncio.create_task(p.stop(DEADLINE))
        await pending(lambda: p._work._stop is not None, before)  # the stop waits
        await the_loop_runs_another_task()
        assert not stop.done()
        no_thread_for_the_call(before)
        cluster.broker_set_up(1)
        result = await asyncio.wait_for(stop, DEADLINE)
        return result, await send, events

    result, delivery, events = run(main)
    assert (result, result.failed, delivery) == (0, 0, (3, []))
    events.join(DEADLINE)  # the handle was freed on the event thread, which then ended
    assert not events.is_alive()


def test_flush_sends_lingering_messages_at_once(cluster):
    """A linger far beyond the flush's deadline: the flush returns 0 only because it lifts
    the linger (the event thread's short rd_kafka_flush calls), as rdk.Producer.flush does."""
    cluster.create_topic("aio-linger", 1)

    async def main():
        async with rdk.aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=600_000,
                                    topic_options={"message.timeout.ms": 900_000}) as p:
            send = asyncio.create_task(p.send("aio-linger", 0, [b"lingering"]))
            await until(lambda: p.producer.send_queue_length == 1)
            result = await p.flush(DEADLINE)
        return result, await send  # (after the stop, which would fail it if still queued)

    assert run(main) == (0, (1, []))


def test_a_first_round_robin_send_looks_the_count_up_in_no_thread(cluster):
    cluster.create_topic("aio-rr", 2)

    async def main():
        async with rdk.aio.Producer(cluster.bootstrap_servers, balancer="round_robin",
                                    queue_buffering_max_ms=1, driver_options=FAST_RECONNECT) as p:
            cluster.broker_set_down(1)
            before = set(threading.enumerate())
            send = asyncio.create_task(p.send("aio-rr", None, [b"1", b"2"], timeout=DEADLINE))
            await pending(lambda: p._work._calls, before)  # the count is looked up
            await the_loop_runs_another_task()
            assert not send.done()
            no_thread_for_the_call(before)
            cluster.broker_set_up(1)
            return await asyncio.wait_for(send, DEADLINE)

    assert run(main) == (2, [])


class GatedStore:
    """An offset store whose commit waits until the test opens ``gate`` (from the loop)."""

    def __init__(self):
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.committed = {}

    def read(self, partitions):
        return {}

    def commit(self, offsets):
        self.entered.set()
        assert self.gate.wait(DEADLINE)
        self.committed.update(offsets)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_consumer_stop_waits_in_no_thread_and_runs_on_the_fetch_thread(cluster, loop_kind):
    """The stop must wait for the committer, held in the store's commit until the loop
    opens the gate: the loop runs other tasks meanwhile, no thread is started for the stop
    (its work runs on the consumer's fetch thread, which then ends)."""
    cluster.create_topic("aio-cstop", 1)
    produce(cluster.bootstrap_servers, "aio-cstop", [b"a", b"b", b"c"])
    store = GatedStore()

    async def main():
        c = rdk.aio.Consumer(cluster.bootstrap_servers, "aio-cstop", offset_store=store)
        got = []
        async for batch in c:
            got.extend(m.value for m in batch)
            await batch.commit()  # the committer takes it into the gated store
            if len(got) == 3:
                break
        await until(store.entered.is_set)
        fetch = c.consumer._threads.pipeline.fetch_thread
        before = set(threading.enumerate())
        stop = asyncio.create_task(c.stop(DEADLINE))
        await pending(lambda: c.consumer._state == "stopping", before)
        await the_loop_runs_another_task()
        assert not stop.done()
        no_thread_for_the_call(before)
        store.gate.set()  # runs only because the loop is free
        await asyncio.wait_for(stop, DEADLINE)
        return got, fetch, c.consumer.closed

    got, fetch, closed = run(main, loop_kind)
    assert got == [b"a", b"b", b"c"] and closed
    assert store.committed == {0: 2}
    fetch.join(DEADLINE)
    assert not fetch.is_alive()


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_consumer_start_runs_on_the_thread_that_becomes_its_fetch_thread(cluster, tmp_path, loop_kind):
    """The broker is down, so the start (its metadata lookup) waits until the loop brings it
    up: meanwhile the loop runs other tasks, and the only thread started is the one that
    then fetches for the consumer (none of rdk.aio's, asyncio's or the executor's)."""
    cluster.create_topic("aio-start", 1)
    produce(cluster.bootstrap_servers, "aio-start", [b"first"])

    async def main():
        c = rdk.aio.Consumer(cluster.bootstrap_servers, "aio-start", tmp_path,
                             driver_options=FAST_RECONNECT)
        cluster.broker_set_down(1)
        before = set(threading.enumerate())
        first = asyncio.create_task(c.batches().__anext__())
        await until(lambda: not set(threading.enumerate()) <= before)  # the start began
        await the_loop_runs_another_task()
        assert not first.done() and c.consumer._state == "new"
        starter = [t for t in set(threading.enumerate()) - before
                   if not t.name.startswith("rdk-events-")]  # (the client's, once made)
        assert [t.name for t in starter] == ["rdk-fetch-aio-start"]
        assert [t.name for t in threading.enumerate()
                if t.name.startswith(("rdk-aio", "asyncio", "loop-executor"))] == []
        cluster.broker_set_up(1)  # runs only because the loop is free
        batch = await asyncio.wait_for(first, DEADLINE)
        fetch = c.consumer._threads.pipeline.fetch_thread
        await c.stop()
        return [m.value for m in batch], starter, fetch

    values, starter, fetch = run(main, loop_kind)
    assert values == [b"first"]
    assert starter == [fetch]  # the thread that ran the start is the consumer's fetch thread


def test_a_cancelled_flush_loses_nothing(cluster):
    """A flush cancelled while it waits takes no count: the messages it waited for are
    reported by the next result (here the stop's, which purges them)."""
    cluster.create_topic("aio-cancel-flush", 1)

    async def main():
        p = rdk.aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1)
        assert await p.send("aio-cancel-flush", 0, [b"warm-up"]) == (1, [])
        cluster.broker_set_down(1)
        send = asyncio.create_task(p.send("aio-cancel-flush", 0, [b"a", b"b"]))
        await until(lambda: p.producer.send_queue_length == 2)
        flush = asyncio.create_task(p.flush(DEADLINE))
        await until(lambda: p._work._flushes)
        flush.cancel()
        with pytest.raises(asyncio.CancelledError):
            await flush
        assert not p._work._flushes  # it left nothing behind
        result = await p.stop(1)  # purges what the leader never took
        delivery = await send
        return result, result.queued, result.failed, delivery

    result, queued, failed, delivery = run(main)
    assert (result, queued, failed) == (2, 0, 2)
    assert delivery.delivered == 0 and [e.name for _, e in delivery.failures] == ["_PURGE_QUEUE"] * 2
