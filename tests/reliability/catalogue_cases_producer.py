"""Catalogue cases of the Producer under misuse (issue 14): numbers beyond C, the bootstrap
rule, failures that flush()/stop() must report, callbacks that exit or re-enter."""

from __future__ import annotations

import math
import time
from typing import Any

from catalogue_core import Env, case, table

from rdk import ConfigError, Message, Producer, QueueFullError

QUIET = {"log_level": 3}


def _ts(*stamps: Any) -> Any:
    return lambda e: e.producer.send("cat", 0, [Message(b"v", timestamp=t) for t in stamps])


# ---- numbers beyond what C takes -------------------------------------------------------------
table(ValueError, [
    ("send: timestamp 2**63 (beyond int64)", _ts(2**63), r"payloads\[0\]: timestamp"),
    ("send: timestamp 2**80 after a good one", _ts(1, 2**80), r"payloads\[1\]: timestamp"),
    ("flush: timeout nan", lambda e: e.producer.flush(math.nan), r"timeout"),
    ("send: timeout nan", lambda e: e.producer.send("cat", 0, [b"x"], timeout=math.nan), r"timeout"),
    ("Producer: queue_buffering_max_ms nan",
     lambda e: Producer(e.b, queue_buffering_max_ms=math.nan), r"queue_buffering_max_ms"),
    ("Producer: queue_buffering_max_messages 2**70",
     lambda e: Producer(e.b, queue_buffering_max_messages=2**70),
     r"queue_buffering_max_messages.*" + str(2**70)),
    ("Producer: statistics_interval_ms 2**70",
     lambda e: Producer(e.b, statistics_interval_ms=2**70), r"statistics_interval_ms.*" + str(2**70)),
    ("Producer: driver_options linger.ms nan",
     lambda e: Producer(e.b, driver_options={"linger.ms": math.nan}), r"linger\.ms.*nan"),
    ("Producer: driver_options linger.ms inf",
     lambda e: Producer(e.b, driver_options={"linger.ms": math.inf}), r"linger\.ms.*inf"),
], kind="beyond C range")


@case("flush(1e20): a huge timeout waits without a practical limit", None, kind="beyond C range")
def _(e: Env) -> None:
    assert e.producer.flush(1e20) == 0


@case("flush(inf) and partition_count(timeout=inf) return normally", None, kind="beyond C range")
def _(e: Env) -> None:
    assert e.producer.flush(math.inf) == 0
    assert e.producer.partition_count("cat", math.inf) == 2


@case("stop(inf) drains and returns normally", None, kind="beyond C range")
def _(e: Env) -> None:
    p = Producer(e.b, driver_options=QUIET)
    p.send("cat", 0, [b"x"])
    assert p.stop(math.inf) == 0


@case("send(timeout=1e20) with round_robin's first lookup", None, kind="beyond C range")
def _(e: Env) -> None:
    with Producer(e.b, balancer="round_robin", driver_options=QUIET) as p:
        assert p.send("cat", None, [b"x"], timeout=1e20).enqueued == 1
        assert p.flush(10) == 0


# ---- one bootstrap rule ------------------------------------------------------------------
table(ConfigError, [
    ("Producer: driver_options bootstrap.servers disagrees with broker",
     lambda e: Producer(e.b, driver_options={"bootstrap.servers": "elsewhere:9092"}),
     r"bootstrap\.servers.*elsewhere:9092.*broker"),
    ("Producer: driver_options metadata.broker.list disagrees with broker",
     lambda e: Producer(e.b, driver_options={"metadata.broker.list": "elsewhere:9092"}),
     r"metadata\.broker\.list.*elsewhere:9092"),
], kind="wrong value")


@case("Producer: driver_options repeating broker's bootstrap.servers is accepted", None,
      kind="wrong value")
def _(e: Env) -> None:
    Producer(e.b, driver_options={"bootstrap.servers": e.b, **QUIET}).stop(5)


# ---- failures flush()/stop() must report -------------------------------------------------
@case("partition 99 of a 2-partition topic, no callbacks: flush() counts it failed", None,
      kind="silent loss or hang")
def _(e: Env) -> None:
    with Producer(e.b, driver_options=QUIET) as p:
        p.send("cat", 99, [b"x"])
        r = p.flush(10)
        assert r == 1 and r.failed == 1 and r.queued == 0, repr(r)


@case("partition beyond a partition count the producer knows: ValueError at send()", ValueError,
      r"partition 5 of topic 'cat'.*2 partition", kind="wrong value")
def _(e: Env) -> None:
    with Producer(e.b, balancer="round_robin", driver_options=QUIET) as p:
        p.send("cat", None, [b"x"])
        p.send("cat", 5, [b"x"])


@case("stop() with the only broker down: returns the failed count, not 0", None,
      kind="silent loss or hang")
def _(e: Env) -> None:
    from rdk.mock import MockCluster

    mc = MockCluster(1)
    try:
        mc.create_topic("t", 1)
        p = Producer(mc.bootstrap_servers, queue_buffering_max_ms=5,
                     driver_options={"message.timeout.ms": 300, "log_level": 0})
        mc.broker_set_down(1)
        p.send("t", 0, [b"x"] * 30)
        r = p.stop(10)
        assert r == 30 and r.failed == 30, repr(r)
    finally:
        mc.close()


@case("flush() waits for a slow on_delivery of the flushed messages", None,
      kind="callback misbehaves")
def _(e: Env) -> None:
    done = []

    def slow(delivered: int, failures: list) -> None:
        time.sleep(0.3)
        done.append(delivered)

    e.producer.send("cat", 0, [b"x"], on_delivery=slow)
    assert e.producer.flush(10) == 0 and done == [1], done


# ---- callbacks that exit or re-enter -----------------------------------------------------
@case("delivery_report_callback raises SystemExit: on_delivery still runs, flush() counts it",
      None, kind="callback misbehaves")
def _(e: Env) -> None:
    calls = []

    def exiting(info: Any) -> None:
        raise SystemExit(2)

    with Producer(e.b, delivery_report_callback=exiting, driver_options=QUIET) as p:
        p.send("cat", 99, [b"x"], on_delivery=lambda d, f: calls.append((d, len(f))))
        assert p.flush(10) == 1 and calls == [(0, 1)], calls
        assert p.send("cat", 0, [b"ok"]).enqueued == 1 and p.flush(10) == 0


@case("on_delivery raises SystemExit: logged, the producer goes on", None, kind="callback misbehaves")
def _(e: Env) -> None:
    calls = []

    def exiting(delivered: int, failures: list) -> None:
        calls.append(delivered)
        raise SystemExit(1)

    with Producer(e.b, driver_options=QUIET) as p:
        for _ in range(3):
            p.send("cat", 0, [b"x"], on_delivery=exiting)
            assert p.flush(10) == 0
        assert calls == [1, 1, 1]


@case("stats_callback raises SystemExit: stats keep coming", None, kind="callback misbehaves")
def _(e: Env) -> None:
    calls = []

    def exiting(info: Any) -> None:
        calls.append(info)
        raise SystemExit(1)

    p = Producer(e.b, stats_callback=exiting, statistics_interval_ms=50, driver_options=QUIET)
    deadline = time.monotonic() + 10
    while len(calls) < 3:
        assert time.monotonic() < deadline, "stats stopped after a SystemExit"
        time.sleep(0.01)
    assert p.stop(5) == 0


@case("send(on_queue_full='block') from on_delivery with a full queue: QueueFullError, no deadlock",
      None, kind="process or thread misuse", timeout=20)
def _(e: Env) -> None:
    got = []
    p = Producer(e.b, on_queue_full="block", queue_buffering_max_messages=5, driver_options=QUIET)

    def resend(delivered: int, failures: list) -> None:
        try:
            p.send("cat", 0, [b"m"] * 20)
        except QueueFullError as ex:
            got.append(str(ex))

    p.send("cat", 0, [b"x"], on_delivery=resend)
    assert p.flush(10) == 0 and len(got) == 1 and "callback" in got[0], got
    p.stop(10)
