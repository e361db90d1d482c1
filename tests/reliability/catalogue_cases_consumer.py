"""Bad-input catalogue: the Consumer's cases from issue 14 (numbers beyond C, the bootstrap
rule, dead event loops, callbacks that exit, slow-failing start())."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

from catalogue_core import Env, case, table

from rdk import ConfigError, Consumer, KafkaError

_topics = iter(range(1_000_000))


def _topic_with_messages(e: Env, n: int = 3) -> str:
    """A new one-partition topic holding ``n`` messages."""
    name = f"cc{next(_topics)}"
    e.mc.create_topic(name, 1)
    e.producer.send(name, 0, [b"x%d" % i for i in range(n)])
    e.producer.flush(10)
    return name


def _fails_with(c: Consumer, within: float) -> None:
    """Start ``c``; raise the error that stops it (the case fails if none within ``within`` s)."""
    with c:
        c.start()
        deadline = time.monotonic() + within
        while c.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if c.error is not None:
            raise c.error


class _Store:
    def __init__(self, offsets: Any) -> None:
        self.offsets = offsets

    def read(self, partitions: Any) -> Any:
        return self.offsets

    def commit(self, offsets: Any) -> None:
        return None


def _closed_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.close()
    return loop


def _stopped_consumer_call(e: Env, **stop_kw: Any) -> None:
    c = e.consumer()
    try:
        c.stop(**stop_kw)
    finally:
        c.stop(1)


# ---- numbers beyond what C takes -------------------------------------------------------
table(ValueError, [
    ("Consumer: num_workers of 2**31", lambda e: e.consumer(num_workers=2**31), r"num_workers"),
    ("Consumer: worker_slot of 2**63", lambda e: e.consumer(num_workers=2, worker_slot=2**63),
     r"worker_slot"),
    ("Consumer: max_messages_per_callback of 2**63",
     lambda e: e.consumer(max_messages_per_callback=2**63), r"max_messages_per_callback"),
    ("Consumer: statistics_interval_ms of 2**31",
     lambda e: e.consumer(statistics_interval_ms=2**31), r"statistics_interval_ms"),
    ("Consumer: queued_max_messages_kbytes of 2**63",
     lambda e: e.consumer(queued_max_messages_kbytes=2**63), r"queued_max_messages_kbytes"),
    ("Consumer: stop(timeout=-1)", lambda e: _stopped_consumer_call(e, timeout=-1), r"timeout.*-1"),
    ("Consumer: stop(timeout=nan)", lambda e: _stopped_consumer_call(e, timeout=float("nan")),
     r"timeout.*nan"),
    ("Consumer: batches(timeout=nan)", lambda e: e.consumer().batches(timeout=float("nan")),
     r"timeout.*nan"),
    ("Consumer: offset_store.read() gives 2**63",
     lambda e: e.consumer(topic="solo", offset_store=_Store({0: 2**63})).start(),
     r"_Store.*2\*\*63|_Store.*9223372036854775808.*partition 0"),
], kind="beyond C range")


@case("stop(timeout=inf) and stop(1e20) wait for the callbacks and return normally", None,
      kind="beyond C range")
def _stop_huge_timeouts(e: Env) -> None:
    for timeout in (float("inf"), 1e20):
        c = e.consumer()
        c.start()
        c.stop(timeout)
        assert c.closed

table(TypeError, [
    ("Consumer: offset_store.read() gives a list",
     lambda e: e.consumer(topic="solo", offset_store=_Store([5])).start(),
     r"offset_store\.read\(\) of _Store.*list"),
], kind="wrong type")

# ---- one bootstrap rule for Producer and Consumer ----------------------------------------
table(ConfigError, [
    ("Consumer: driver_options bootstrap.servers disagrees with broker",
     lambda e: e.consumer(driver_options={"bootstrap.servers": "other:9092"}),
     r"bootstrap\.servers.*other:9092.*broker"),
    ("Consumer: driver_options metadata.broker.list disagrees with broker",
     lambda e: e.consumer(driver_options={"metadata.broker.list": "other:9092"}),
     r"metadata\.broker\.list.*other:9092"),
], kind="wrong value")


# ---- event loops ------------------------------------------------------------------------
@case("Consumer: a closed loop is refused at construction", ValueError, r"loop is closed",
      kind="process or thread misuse")
def _closed_loop_construct(e: Env) -> None:
    e.consumer(loop=_closed_loop())


@case("Consumer: a loop closed before start() is refused", ValueError, r"loop is closed",
      kind="process or thread misuse")
def _closed_loop_start(e: Env) -> None:
    loop = asyncio.new_event_loop()
    c = e.consumer(loop=loop)
    loop.close()
    with c:
        c.start()


@case("Consumer: awaitables on a loop that never runs fail the consumer", KafkaError,
      r"_FAIL.*loop is not running", kind="silent loss or hang", timeout=25)
def _idle_loop(e: Env) -> None:
    async def work() -> None:
        return None

    loop = asyncio.new_event_loop()
    try:
        _fails_with(e.consumer(topic=_topic_with_messages(e), loop=loop,
                               receive_callback=lambda b: work()), within=15)
    finally:
        loop.close()


# ---- callbacks that exit or are cancelled -------------------------------------------------
@case("Consumer: SystemExit in receive_callback ends run() with _FAIL", KafkaError,
      r"_FAIL.*receive_callback raised SystemExit", kind="callback misbehaves", timeout=20)
def _systemexit_run(e: Env) -> None:
    def exits(batch: Any) -> None:
        raise SystemExit(2)

    e.consumer(topic=_topic_with_messages(e), receive_callback=exits).run()


def _future_with(exc: BaseException | None) -> concurrent.futures.Future:
    f: concurrent.futures.Future = concurrent.futures.Future()
    if exc is None:
        f.cancel()
    else:
        f.set_exception(exc)
    return f


@case("Consumer: a Future ending with KeyboardInterrupt fails the consumer", KafkaError,
      r"_FAIL.*KeyboardInterrupt", kind="callback misbehaves", timeout=20)
def _future_interrupt(e: Env) -> None:
    _fails_with(e.consumer(topic=_topic_with_messages(e),
                           receive_callback=lambda b: _future_with(KeyboardInterrupt())), within=10)


@case("Consumer: a cancelled Future fails the consumer, its batch unrecorded", KafkaError,
      r"_FAIL.*cancelled", kind="callback misbehaves", timeout=20)
def _future_cancelled(e: Env) -> None:
    _fails_with(e.consumer(topic=_topic_with_messages(e),
                           receive_callback=lambda b: _future_with(None)), within=10)


# ---- start() against a missing topic or a dead broker --------------------------------------
@case("Consumer: unknown topic fails start() at once", KafkaError, r"UNKNOWN_TOPIC_OR_PART",
      kind="broker refusal", timeout=5)
def _unknown_topic(e: Env) -> None:
    with e.consumer(topic="no-such-topic-here") as c:
        c.start()


@case("Consumer: a dead bootstrap server names the broker and the wait", KafkaError,
      r"127\.0\.0\.1:1.*waiting .* s", kind="silent loss or hang", timeout=20)
def _dead_broker(e: Env) -> None:
    c = Consumer("127.0.0.1:1", "cat", e.dir(), lambda b: None, driver_options={"log_level": 0})
    with c:
        c.start()
