"""rdk.aio.Producer's work on its event thread (rdk/aio/_event_work.py), on librdkafka's
in-process mock cluster: what a flush, a lookup and a stop return when that thread cannot
answer (a user callback holds it: a flush's timeout, the stop closing without it, a lookup
that gets no answer), a reported authentication failure ending a flush, and the lookups'
retries until their deadline. Each holds the event thread by an ``on_delivery`` callback
waiting for an event the test sets, so "the event thread is busy" holds by construction."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import pytest

from rdk import _binding, aio
from rdk.aio import _event_work
from rdk.errors import ClosedError, KafkaError
from rdk.testing import MockCluster

DEADLINE = 20.0  # against hangs only: the mock cluster answers in milliseconds
QUEUED_TEXT = ("; 2 message(s) still queued (librdkafka retries them until message.timeout.ms; "
               "stop() fails them at once)")


@pytest.fixture(scope="module")
def cluster():
    with MockCluster(1) as mc:
        mc.create_topic("ew", 1)
        yield mc


def _auth(text: str = "bad password") -> KafkaError:
    return KafkaError(_binding.ERROR_CODES["_AUTHENTICATION"], text)


async def _until(condition) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.005)  # a poll of state; the claims are checked after it
    await asyncio.wait_for(poll(), DEADLINE)


def _hold_event_thread(p, gate: threading.Event) -> None:
    """Hold ``p``'s event thread inside an ``on_delivery`` callback until ``gate`` is set."""
    entered = threading.Event()

    def held(delivered, failures):
        entered.set()
        gate.wait(DEADLINE)
    p.producer.send("ew", 0, [b"m0"], on_delivery=held)
    assert entered.wait(DEADLINE)


@contextlib.asynccontextmanager
async def _two_queued(cluster, *, hold: bool):
    """An aio producer with two messages queued for a leader that is down (the send a task),
    its event thread held inside an ``on_delivery`` callback if ``hold``. Yields
    ``(producer, send task, gate)``; on leaving, the gate is opened and the leader is up."""
    gate = threading.Event()
    p = aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1)
    try:
        if hold:
            _hold_event_thread(p, gate)
        else:
            assert await p.send("ew", 0, [b"m0"]) == (1, [])
        cluster.broker_set_down(1)
        send = asyncio.create_task(p.send("ew", 0, [b"a", b"b"]))
        await _until(lambda: p.producer.send_queue_length == 2)
        yield p, send, gate
    finally:
        gate.set()
        cluster.broker_set_up(1)


async def _deliver_and_stop(cluster, p, send, gate) -> None:
    """The held callback returns and the leader is up: the two messages are delivered."""
    gate.set()
    cluster.broker_set_up(1)
    assert await asyncio.wait_for(send, DEADLINE) == (2, [])
    assert await p.stop() == 0


def test_a_flush_timing_out_returns_what_is_still_queued(cluster):
    """The event thread never looks (held): the loop's timer ends the flush with the count."""
    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            result = await p.flush(0.2)
            assert p._work._flushes == {}  # nothing left behind
            await _deliver_and_stop(cluster, p, send, gate)
            return result

    result = asyncio.run(main())
    assert (result, result.queued, result.failed) == (2, 2, 0)


def test_a_flush_timing_out_after_an_auth_failure_raises_it_with_the_queued_count(cluster):
    """At the timeout, an authentication failure librdkafka reported is raised without a new
    probe (the held event thread could not make one), naming the messages still queued."""
    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            p.producer._client.auth_failure = _auth()
            with pytest.raises(KafkaError) as info:
                await p.flush(0.2)
            p.producer._client.auth_failure = None
            await _deliver_and_stop(cluster, p, send, gate)
            return info.value

    error = asyncio.run(main())
    assert (error.name, error.context) == ("_AUTHENTICATION", "flush()")
    assert str(error) == "flush(): _AUTHENTICATION: bad password" + QUEUED_TEXT


def test_a_reported_auth_failure_ends_a_waiting_flush_once_no_broker_answers(cluster):
    """The event thread probes (a short metadata request) after its polls: no broker
    answers, so the flush ends at once with the failure, long before its timeout."""
    async def main():
        async with _two_queued(cluster, hold=False) as (p, send, gate):
            flush = asyncio.create_task(p.flush(DEADLINE * 10))
            await _until(lambda: p._work._flushes)
            p.producer._client.auth_failure = _auth()
            with pytest.raises(KafkaError) as info:
                await asyncio.wait_for(flush, DEADLINE)
            assert p._work._flushes == {}
            p.producer._client.auth_failure = None
            await _deliver_and_stop(cluster, p, send, gate)
            return info.value, cluster.bootstrap_servers

    error, bootstrap = asyncio.run(main())
    assert (error.name, error.context) == ("_AUTHENTICATION", "flush()")
    assert str(error) == (f"flush(): _AUTHENTICATION: authentication with broker {bootstrap} "
                          "failed: bad password" + QUEUED_TEXT)


def test_a_stop_whose_event_thread_is_held_closes_without_it(cluster, caplog):
    """A callback holds the event thread past the stop's timeout: the loop purges and
    closes, returns the queued count, and says why; the event thread ends once the
    callback returns (it freed the handle)."""
    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            events = p.producer._client.event_thread
            flush = asyncio.create_task(p.flush(DEADLINE))  # still waiting at the close
            await _until(lambda: p._work._flushes)
            with caplog.at_level(logging.WARNING, "rdk"):
                result = await asyncio.wait_for(p.stop(0.2), DEADLINE)
            flushed = await asyncio.wait_for(flush, DEADLINE)
            assert (flushed, flushed.queued, flushed.failed) == (2, 2, 0)
            assert p.producer._client.closed
            with pytest.raises(ClosedError):
                await p.flush(1)
            assert events.is_alive()  # the stop did not wait for the callback
            gate.set()
            await asyncio.to_thread(events.join, DEADLINE)
            assert not events.is_alive()
            send.cancel()
            return result

    result = asyncio.run(main())
    assert (result, result.queued, result.failed) == (2, 2, 0)
    assert [r.getMessage() for r in caplog.records if "deadline" in r.getMessage()] == [
        "rdk.aio.Producer.stop(): the producer's event thread is still in a callback at the "
        "0.2 s deadline; closing without it"]


def test_a_send_pending_when_the_stop_closes_without_the_event_thread_ends(cluster):
    """Found by the mutation run of 2026-11-29: after a stop that closed without the held
    event thread, the purged messages' reports are never served, so a send awaiting them
    waited forever. It now raises ClosedError saying so when the stop returns."""
    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            events = p.producer._client.event_thread
            await p.stop(0.2)
            gate.set()
            await asyncio.to_thread(events.join, DEADLINE)  # nothing can report after this
            with pytest.raises(ClosedError) as info:
                await asyncio.wait_for(send, DEADLINE)
            return info.value

    assert str(asyncio.run(main())) == (
        "send to 'ew': the producer stopped before its messages' delivery reports came "
        "(stop() reached its timeout while a callback held the event thread); they may or may "
        "not have been delivered")


def test_a_lookup_the_held_event_thread_does_not_answer_fails_with_timed_out(cluster, monkeypatch):
    monkeypatch.setattr(_event_work, "_STEP", 0.05)  # waits timeout + _STEP + 1 s in all

    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            with pytest.raises(KafkaError) as info:
                await p.partition_count("ew", 0.1)
            assert p._work._calls == []  # the abandoned job is gone
            await _deliver_and_stop(cluster, p, send, gate)
            return info.value

    error = asyncio.run(main())
    assert (error.name, error.context) == ("_TIMED_OUT", "metadata for 'ew'")
    assert str(error) == ("metadata for 'ew': _TIMED_OUT: the producer's event thread did not "
                          "answer (stopped, or held by a callback)")


def test_a_lookup_is_retried_on_timed_out_and_transport_until_its_deadline(cluster):
    """``fn(step)`` runs on the event thread; _TIMED_OUT/_TRANSPORT with time left: again at
    the next poll; any other error, or the deadline passed: raised to the awaiting task."""
    codes = _binding.ERROR_CODES
    steps: list[float] = []
    threads: set[str] = set()

    def failing(*names):
        todo = list(names)

        def fn(step):
            steps.append(step)
            threads.add(threading.current_thread().name)
            if todo:
                name = todo.pop(0)
                raise ValueError("bad") if name == "ValueError" else KafkaError(codes[name], name)
            return 7
        return fn

    async def main():
        async with aio.Producer(cluster.bootstrap_servers) as p:
            w = p._work
            got = [await w.call(failing("_TIMED_OUT", "_TRANSPORT"), 30, "x")]
            calls = [len(steps)]
            for fn in (failing("UNKNOWN_TOPIC_OR_PART", "_TIMED_OUT"), failing("ValueError")):
                steps.clear()
                with pytest.raises((KafkaError, ValueError)) as info:
                    await w.call(fn, 30, "x")
                got.append(type(info.value).__name__ + ":" + str(info.value))
                calls.append(len(steps))
            steps.clear()
            with pytest.raises(KafkaError) as info:  # always _TIMED_OUT: until the deadline
                await w.call(failing(*["_TIMED_OUT"] * 10_000), 0.3, "x")
            got.append(str(info.value))  # fn's own error, not the wait's
            short = list(steps)
            assert w._calls == []
            return got, calls, short

    got, calls, short = asyncio.run(main())
    assert got == [7, "KafkaError:UNKNOWN_TOPIC_OR_PART: UNKNOWN_TOPIC_OR_PART", "ValueError:bad",
                   "_TIMED_OUT: _TIMED_OUT"]
    assert calls == [3, 1, 1]
    assert len(threads) == 1 and next(iter(threads)).startswith("rdk-events-")
    # each attempt may take the time left, at most a second, never nothing
    assert short and all(0.001 <= s <= 0.3 for s in short) and short[-1] < short[0]


def test_a_lookup_asked_once_the_stop_began_is_refused(cluster):
    async def main():
        async with _two_queued(cluster, hold=True) as (p, send, gate):
            stop = asyncio.create_task(p.stop(DEADLINE))
            await _until(lambda: p._work._stop is not None)
            with pytest.raises(ClosedError, match=r"^Producer is stopped: it cannot be used "
                                                   r"after stop\(\)$"):
                await p._work.call(lambda step: 1, 1.0, "x")
            with pytest.raises(ClosedError):  # nor a send, while the stop is under way
                await p.send("ew", 0, [b"late"])
            assert p._work._calls == []
            gate.set()
            cluster.broker_set_up(1)
            result = await asyncio.wait_for(stop, DEADLINE)
            return result, await asyncio.wait_for(send, DEADLINE)

    result, delivery = asyncio.run(main())
    assert (result, delivery) == (0, (2, []))


def test_a_stop_ends_the_flushes_and_lookups_still_waiting(cluster):
    """The stop's last step settles what still waits: a flush with the count left, a lookup
    with ClosedError. The two purged messages are failures counted once: by the flush (it
    settles once their reports are in) or by the stop (if it takes them first)."""
    async def main():
        async with _two_queued(cluster, hold=False) as (p, send, _gate):
            flush = asyncio.create_task(p.flush(DEADLINE))
            lookup = asyncio.create_task(p._work.call(_never_answers, DEADLINE, "x"))
            await _until(lambda: p._work._flushes and p._work._calls)
            result = await p.stop(0.5)  # the leader stays down: the stop purges
            flushed = await asyncio.wait_for(flush, DEADLINE)
            with pytest.raises(ClosedError, match=r"^Producer is stopped: it cannot be used "
                                                   r"after stop\(\)$"):
                await asyncio.wait_for(lookup, DEADLINE)
            delivery = await asyncio.wait_for(send, DEADLINE)
            return result, flushed, delivery

    result, flushed, delivery = asyncio.run(main())
    assert (result.queued, flushed.queued, result.failed + flushed.failed) == (0, 0, 2)
    assert delivery.delivered == 0 and [e.name for _, e in delivery.failures] == ["_PURGE_QUEUE"] * 2


def _never_answers(step: float) -> None:
    raise KafkaError(_binding.ERROR_CODES["_TRANSPORT"], "no broker")


def test_flush_and_stop_are_answered_at_once_when_there_is_nothing_to_do(cluster):
    async def main():
        p = aio.Producer(cluster.bootstrap_servers)
        flushed = await p.flush(0)  # settled already: no wait, not even for a timer
        first = await p.stop(1)
        second = await p._work.stop(1)  # closing already: nothing to do
        return flushed, first, second, p

    flushed, first, second, p = asyncio.run(main())
    assert (flushed, first, second) == (0, 0, 0) and p.producer._client.closed


def test_a_send_while_an_auth_failure_is_current_raises_it_naming_the_send(cluster):
    """The event thread probes the failure before the send (a metadata request, never on
    the loop; no broker answers): the send raises it with its topic, and enqueues nothing."""
    probes: list[str] = []

    async def main():
        async with _two_queued(cluster, hold=False) as (p, send, gate):
            real = p.producer._closer.auth_failed

            def spy(what):
                probes.append(threading.current_thread().name)
                return real(what)
            p.producer._closer.auth_failed = spy
            p.producer._client.auth_failure = _auth()
            with pytest.raises(KafkaError) as info:
                await p.send("ew", 0, [b"refused"])
            queued = p.producer.send_queue_length
            p.producer._client.auth_failure = None
            await _deliver_and_stop(cluster, p, send, gate)
            return info.value, queued

    error, queued = asyncio.run(main())
    assert (error.name, error.context, queued) == ("_AUTHENTICATION", "send to 'ew'", 2)
    # (once, here; under load a second probe was seen once: the claim is where they run)
    assert probes and all(name.startswith("rdk-events-") for name in probes)
    assert str(error) == (f"send to 'ew': _AUTHENTICATION: authentication with broker "
                          f"{cluster.bootstrap_servers} failed: bad password")


def test_a_waiting_flush_reports_the_failures_its_wait_saw(cluster):
    """The report of a refused message comes while the flush waits (the event thread is
    held until the flush is registered): the flush counts it as failed, nothing queued."""
    gate = threading.Event()

    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1) as p:
            try:
                _hold_event_thread(p, gate)
                cluster.push_request_errors("Produce", ["INVALID_RECORD"])
                send = asyncio.create_task(p.send("ew", 0, [b"bad"]))
                flush = asyncio.create_task(p.flush(DEADLINE))
                await _until(lambda: p._work._flushes)
            finally:
                gate.set()
            result = await asyncio.wait_for(flush, DEADLINE)
            delivery = await asyncio.wait_for(send, DEADLINE)
            # reported before the flush: its fast path (nothing outstanding) counts it too
            cluster.push_request_errors("Produce", ["INVALID_RECORD"])
            assert (await p.send("ew", 0, [b"bad2"])).failures
            await _until(p.producer._s.ledger.settled)  # (its callback has returned)
            later = await p.flush(DEADLINE)
            return result, delivery, later

    result, delivery, later = asyncio.run(main())
    assert (result, result.queued, result.failed) == (1, 0, 1)
    assert [e.name for _, e in delivery.failures] == ["INVALID_RECORD"]
    assert (later, later.queued, later.failed) == (1, 0, 1)


def test_the_documented_default_timeouts_are_the_ones_handed_on(cluster, monkeypatch):
    """partition_count's 10 s and flush's and stop's 15 s reach the event thread's work."""
    handed: list[tuple] = []

    async def main():
        p = aio.Producer(cluster.bootstrap_servers)
        w = p._work
        for name in ("call", "flush", "stop"):
            real = getattr(w, name)

            def spy(*args, _real=real, _name=name):
                handed.append((_name, args[1] if _name == "call" else args[0]))
                return _real(*args)
            monkeypatch.setattr(w, name, spy)
        assert await p.partition_count("ew") == 1
        assert await p.flush() == 0
        assert await p.stop() == 0

    asyncio.run(main())
    assert handed == [("call", 10.0), ("flush", 15.0), ("stop", 15.0)]


def test_a_flush_whose_loop_was_closed_meanwhile_is_dropped_quietly(cluster, caplog):
    """The loop a flush waited on is closed before the event thread settles it: nothing is
    handed to that loop, nothing is logged, and the producer goes on for another loop."""
    gate = threading.Event()

    p = aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1)
    _hold_event_thread(p, gate)
    gone = asyncio.new_event_loop()
    try:
        flush = gone.create_task(p.flush(DEADLINE))
        gone.run_until_complete(_until(lambda: p._work._flushes))
    finally:
        gone.close()  # (the flush task is left pending: its loop is gone)
    with caplog.at_level(logging.WARNING, "rdk"):
        gate.set()  # the callback returns: the flush's future is settled on a closed loop

        async def main():
            assert await p.send("ew", 0, [b"later"]) == (1, [])
            assert await p.flush(DEADLINE) == 0
            return await p.stop()

        assert asyncio.run(main()) == 0
    assert not flush.done()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_flush_timing_out_with_nothing_queued_returns_zero_despite_an_auth_failure(cluster):
    """Only a callback is still running (nothing queued): the timeout's result is 0, and a
    reported authentication failure is not raised (it concerns queued messages only)."""
    gate = threading.Event()

    async def main():
        async with aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1) as p:
            try:
                _hold_event_thread(p, gate)
                p.producer._client.auth_failure = _auth()
                return await p.flush(0.2)
            finally:
                p.producer._client.auth_failure = None
                gate.set()

    result = asyncio.run(main())
    assert (result, result.queued, result.failed) == (0, 0, 0)


class _YieldPausedOnTheLoop:
    """Stands for ``_binding.lib``: the loop thread's first ``rd_kafka_queue_yield`` once
    ``armed()`` waits inside the call until the event thread has entered ``close()``, then
    up to half a second more for the handle to be freed. Freed meanwhile (the real call
    would touch freed memory: it crashed the interpreter) -> ``raced`` is [True], and the
    real call is skipped."""

    def __init__(self, real, armed, closing: threading.Event) -> None:
        self._real, self._armed, self._closing = real, armed, closing
        self.freed = threading.Event()
        self.raced: list[bool] = []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def rd_kafka_queue_destroy(self, q):
        self.freed.set()  # _free destroys the queues first, the handle last
        self._real.rd_kafka_queue_destroy(q)

    def rd_kafka_queue_yield(self, q):
        if not self.raced and threading.current_thread() is threading.main_thread() \
                and self._armed():
            assert self._closing.wait(DEADLINE)
            self.raced.append(self.freed.wait(0.5))
            if self.raced[-1]:
                return
        self._real.rd_kafka_queue_yield(q)


def test_the_stop_never_wakes_the_event_thread_after_that_thread_freed_the_handle(
        cluster, monkeypatch):
    """The event thread may step the stop to its end (and free the handle) between the
    loop's stop publishing its work and the loop waking it. That wake must hold off the
    free until it is out of librdkafka (a clean run of the mutation tests crashed there)."""
    async def main():
        p = aio.Producer(cluster.bootstrap_servers, queue_buffering_max_ms=1)
        assert await p.send("ew", 0, [b"m"]) == (1, [])
        client = p.producer._client
        closing = threading.Event()
        real_close = client.close

        def close(timeout: float = 5.0) -> None:
            closing.set()
            real_close(timeout)
        monkeypatch.setattr(client, "close", close)
        lib = _YieldPausedOnTheLoop(_binding.lib, lambda: p._work._stop is not None, closing)
        monkeypatch.setattr(_binding, "lib", lib)
        result = await asyncio.wait_for(p.stop(), DEADLINE)
        return lib, result

    lib, result = asyncio.run(main())
    assert lib.raced == [False]
    assert result == 0 and lib.freed.is_set()


def test_a_stop_while_a_transaction_call_is_in_librdkafka_leaves_the_handle_to_it(caplog):
    """A transaction call (here init_transactions, its coordinator down) is still inside
    librdkafka when the aio stop ends: the stop says so and does not free the handle under
    it; the call frees it when it returns (once the broker is back)."""
    with MockCluster(1) as mc:
        p = aio.Producer(mc.bootstrap_servers, transactional_id="tx-aio-stop")
        mc.broker_set_down(1)

        def init() -> None:
            with contextlib.suppress(KafkaError):  # refused or fenced once the stop began
                p.producer.init_transactions(DEADLINE)
        caller = threading.Thread(target=init)
        caller.start()
        try:
            asyncio.run(_until(lambda: p.producer._txn.calls == 1))
            with caplog.at_level(logging.WARNING, "rdk"):
                result = asyncio.run(p.stop(0.5))
            assert not p.producer._client.closed  # left to the call inside librdkafka
        finally:
            mc.broker_set_up(1)
            caller.join(DEADLINE)
        assert not caller.is_alive()
        assert p.producer._client.closed  # freed by that call on its return
    assert result == 0
    assert [r.getMessage() for r in caplog.records if "transaction" in r.getMessage()] == [
        "rdk.Producer.stop(): a transaction call is still running; the librdkafka handle is "
        "freed when it returns"]


def test_a_stop_during_a_current_auth_failure_purges_at_once_and_logs_it(cluster, caplog):
    """An authentication failure is current (reported, no broker answers the probe): the
    stop does not drain until its deadline; it purges the queued messages at once (they
    fail) and logs the failure with their count."""
    async def main():
        async with _two_queued(cluster, hold=False) as (p, send, _gate):
            p.producer._client.auth_failure = _auth()
            with caplog.at_level(logging.ERROR, "rdk"):
                result = await asyncio.wait_for(p.stop(DEADLINE * 10), DEADLINE)
            sent = await asyncio.wait_for(send, DEADLINE)
            return result, sent

    result, (delivered, failures) = asyncio.run(main())
    assert (result, result.queued, result.failed, delivered) == (2, 0, 2, 0)
    assert [e.name for _, e in failures] == ["_PURGE_QUEUE"] * 2
    assert [r.getMessage() for r in caplog.records if "stop()" in r.getMessage()] == [
        f"rdk.Producer.stop(): 2 message(s) not delivered: stop(): _AUTHENTICATION: "
        f"authentication with broker {cluster.bootstrap_servers} failed: bad password"]


def test_a_stop_drains_while_a_reported_auth_failure_is_answered_by_a_broker():
    """A reported authentication failure that a broker's answer contradicts (the probe
    succeeds) does not purge: the stop drains, and the leader's return delivers the rest."""
    with MockCluster(2) as mc:
        mc.create_topic("two", 1)
        mc.partition_set_leader("two", 0, 1)
        probes: list[tuple[str, object]] = []

        async def main():
            async with aio.Producer(mc.bootstrap_servers, queue_buffering_max_ms=1) as p:
                assert await p.send("two", 0, [b"m0"]) == (1, [])
                mc.broker_set_down(1)
                send = asyncio.create_task(p.send("two", 0, [b"a", b"b"]))
                await _until(lambda: p.producer.send_queue_length == 2)
                real = p.producer._closer.auth_failed

                def spy(what):
                    probes.append((what, found := real(what)))
                    return found
                p.producer._closer.auth_failed = spy
                p.producer._client.auth_failure = _auth()  # broker 2 answers the probe
                stop = asyncio.create_task(p.stop(DEADLINE))
                await _until(lambda: ("flush", None) in probes)
                mc.broker_set_up(1)
                return await asyncio.wait_for(stop, DEADLINE), await send

        result, sent = asyncio.run(main())
    assert (result, result.queued, result.failed) == (0, 0, 0)
    assert sent == (2, [])


def test_a_sends_first_lookup_gets_the_sends_timeout_and_names_the_send(cluster, monkeypatch):
    """A send whose balancer needs the partition count (round_robin) looks it up on the
    event thread within the send's own timeout (10 s if None), named after the send in its
    errors."""
    handed: list[tuple] = []

    def spied(p):
        real = p._work.call

        def spy(fn, timeout, what):
            handed.append((timeout, what))
            return real(fn, timeout, what)
        monkeypatch.setattr(p._work, "call", spy)
        return p

    async def main():
        async with spied(aio.Producer(cluster.bootstrap_servers, balancer="round_robin")) as p:
            assert await p.send("ew", None, [b"a"], timeout=2.5) == (1, [])
        async with spied(aio.Producer(cluster.bootstrap_servers, balancer="round_robin")) as p:
            assert await p.send("ew", None, [b"b"]) == (1, [])

    asyncio.run(main())
    assert handed == [(2.5, "send to 'ew'"), (10.0, "send to 'ew'")]
