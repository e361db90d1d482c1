"""Share groups beyond one consumer: Admin (group configs, delete, reset), ``rdk consume
--share``, WorkerPool processes as one share group, a member SIGKILLed mid-batch, and a
callback that outlives its acquisition lock.

The last two run on a KafkaCluster of their own whose acquisition lock lasts LOCK_MS (the
broker's floor is 1 s: group.share.min.record.lock.duration.ms >= 1000), so a lost lock
comes back in seconds. Every wait is bounded and waits for an event, never a fixed sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from helpers import kafka_unavailable, produce, values, wait_until

import rdk
from rdk import workers

pytestmark = pytest.mark.timeout(300)

LOCK_MS = 2000  # the dedicated cluster's group.share.record.lock.duration.ms


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


# ---- Admin ---------------------------------------------------------------------------------


def test_admin_alters_describes_and_deletes_a_share_group(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="sadm")
    produce(kafka_cluster, topic, 0, values(10))
    group = _group()
    with rdk.Admin(kafka_cluster.bootstrap_servers) as admin:
        with pytest.raises(rdk.KafkaError) as unknown:  # not the broker's defaults as the group's
            admin.describe_group_config(group)
        assert unknown.value.name == "GROUP_ID_NOT_FOUND" and repr(group) in str(unknown.value), \
            str(unknown.value)
        admin.alter_group_config(group, {"share.delivery.count.limit": 3,
                                         "share.auto.offset.reset": "earliest"})
        config = admin.describe_group_config(group)
        assert config["share.delivery.count.limit"] == "3"
        assert config["share.auto.offset.reset"] == "earliest"
        admin.alter_group_config(group, {"share.delivery.count.limit": None})  # back to default
        assert admin.describe_group_config(group)["share.delivery.count.limit"] == "5"
        with pytest.raises(rdk.KafkaError, match="INVALID_CONFIG"):
            admin.alter_group_config(group, {"share.no.such.property": 1})
        with pytest.raises(ValueError, match="group_id"):
            admin.alter_group_config("", {"share.auto.offset.reset": "earliest"})

        seen: list[bytes] = []
        member = rdk.ShareConsumer(kafka_cluster.bootstrap_servers, topic,
                                   lambda info: seen.extend(m.value for m in info.messages),
                                   group_id=group, start_offset="earliest")
        with member:
            member.start()
            wait_until(lambda: len(seen) >= 10, 60, "10 messages")
            with pytest.raises(rdk.KafkaError, match="NON_EMPTY_GROUP"):
                admin.delete_share_group(group)
        assert sorted(seen) == sorted(values(10))

        # the group's progress is past the 10 messages: reset it to the earliest, read again
        admin.reset_share_group(group, "earliest")
        again: list[bytes] = []
        with rdk.ShareConsumer(kafka_cluster.bootstrap_servers, topic,
                               lambda info: again.extend(m.value for m in info.messages),
                               group_id=group, start_offset="earliest") as member:
            member.start()
            wait_until(lambda: len(again) >= 10, 60, "the 10 messages again after the reset")
        assert sorted(again) == sorted(values(10))

        admin.delete_share_group(group)
        with pytest.raises(rdk.KafkaError, match="GROUP_ID_NOT_FOUND"):
            admin.delete_share_group(group)
        admin.delete_share_group(group, missing_ok=True)
        with pytest.raises(ValueError, match="by_duration"):
            admin.reset_share_group(group, "beginning")


def test_an_altered_group_config_is_described_at_once(kafka_cluster):
    """The controller acknowledges IncrementalAlterConfigs before the broker has applied the
    record, so a describe straight after could see the value before; alter_group_config
    returns once the broker shows the change (each value read back at once, 100 times)."""
    group = _group()
    with rdk.Admin(kafka_cluster.bootstrap_servers) as admin:
        for i in range(100):
            value = ("earliest", "latest")[i % 2]
            limit = (3, None)[i % 2]  # None: back to the broker's default (5)
            admin.alter_group_config(group, {"share.auto.offset.reset": value,
                                             "share.delivery.count.limit": limit})
            config = admin.describe_group_config(group)
            assert (config["share.auto.offset.reset"], config["share.delivery.count.limit"]) == \
                (value, "3" if limit else "5"), i


def test_refused_or_failed_reset_leaves_the_share_group_as_it_was(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="sreset")
    produce(kafka_cluster, topic, 0, values(10))
    group = _group()
    broker = kafka_cluster.bootstrap_servers
    seen: list[bytes] = []
    with rdk.Admin(broker) as admin:
        with rdk.ShareConsumer(broker, topic, lambda info: seen.extend(m.value for m in info.messages),
                               group_id=group, start_offset="earliest") as member:
            member.start()
            wait_until(lambda: len(seen) >= 10, 60, "the 10 messages")
            # a member: the deletion fails, the value set before it is put back
            with pytest.raises(rdk.KafkaError) as busy:
                admin.reset_share_group(group, "latest")
            assert busy.value.name == "NON_EMPTY_GROUP"
            assert admin.describe_group_config(group)["share.auto.offset.reset"] == "earliest"
        assert sorted(seen) == sorted(values(10))

        # a value the broker refuses: nothing changes, and the error names the reset
        with pytest.raises(rdk.KafkaError) as refused:
            admin.reset_share_group(group, "by_duration:1H")
        assert refused.value.name == "INVALID_CONFIG"
        assert str(refused.value).startswith(f"reset_share_group of group {group!r}")
        assert admin.describe_group_config(group)["share.auto.offset.reset"] == "earliest"

    # the group's progress is intact: the next member gets only what came after the 10
    # (a wiped group starting from the earliest would hand out value 0 first)
    produce(kafka_cluster, topic, 0, values(5, 10))
    after: list[bytes] = []
    with rdk.ShareConsumer(broker, topic, lambda info: after.extend(m.value for m in info.messages),
                           group_id=group) as member:
        member.start()
        wait_until(lambda: len(after) >= 5, 60, "the 5 new messages")
    assert sorted(after) == sorted(values(5, 10))


def test_reset_is_kept_by_the_next_members_default_and_a_replacing_value_warns(
        kafka_cluster, new_topic, caplog):
    topic = new_topic(kafka_cluster, 1, prefix="skeep")
    produce(kafka_cluster, topic, 0, values(10))
    group = _group()
    broker = kafka_cluster.bootstrap_servers
    with rdk.Admin(broker) as admin:
        admin.reset_share_group(group, "earliest")
        seen: list[bytes] = []
        with caplog.at_level("WARNING", logger="rdk"), \
                rdk.ShareConsumer(broker, topic, lambda info: seen.extend(m.value for m in info.messages),
                                  group_id=group) as member:  # start_offset: the group's
            member.start()
            wait_until(lambda: len(seen) >= 10, 60, "the 10 messages from the earliest")
        assert sorted(seen) == sorted(values(10))
        assert not [r for r in caplog.records if "share.auto.offset.reset" in r.getMessage()]

        admin.reset_share_group(group, "earliest")
        caplog.clear()
        member = rdk.ShareConsumer(broker, topic, lambda info: None, group_id=group,
                                   start_offset="latest")
        with caplog.at_level("WARNING", logger="rdk"), member:
            member.start()
        warned = [r.getMessage() for r in caplog.records
                  if "share.auto.offset.reset" in r.getMessage()]
        assert len(warned) == 1, warned
        assert "start_offset='latest'" in warned[0] and "'earliest'" in warned[0], warned
        assert admin.describe_group_config(group)["share.auto.offset.reset"] == "latest"


# ---- rdk consume --share -------------------------------------------------------------------


def _rdk(*args: str, code: str | None = None) -> subprocess.Popen:
    """``rdk`` (or ``code`` then rdk's main) in a subprocess, stdout and stderr piped."""
    prelude = code or ""
    script = f"import sys\n{prelude}\nfrom rdk.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _read_lines(proc: subprocess.Popen, n: int, timeout: float) -> list[bytes]:
    """The first n stdout lines of proc (a reader thread: readline() itself cannot time out)."""
    lines: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line.rstrip(b"\n"))
            if len(lines) >= n:
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(timeout), f"{len(lines)} of {n} lines within {timeout} s"
    return lines


def test_cli_consume_share_prints_messages_and_a_summary_on_sigint(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 2, prefix="scli")
    produce(kafka_cluster, topic, 0, values(10))
    produce(kafka_cluster, topic, 1, values(10, 10))
    group = _group()
    proc = _rdk("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic, "--share", group,
                "--start-offset", "earliest")
    try:
        lines = _read_lines(proc, 20, 120)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert sorted(lines) == sorted(values(20)) and out == b""
    assert (f"consumed 20 messages (share group {group}; accepted 20, released 0, rejected 0)"
            in err.decode()), err.decode()


def test_cli_share_count_releases_the_rest_once_and_the_group_keeps_it(kafka_cluster, new_topic):
    """--count 10 of 100: the member stops fetching at the count, so each record it did not
    write is released at most once (every release counts towards the broker's delivery limit,
    past which the record is archived); a second member then gets exactly the other 90."""
    topic = new_topic(kafka_cluster, 1, prefix="scount")
    produce(kafka_cluster, topic, 0, values(100))
    group = _group()
    proc = _rdk("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic, "--share", group,
                "--start-offset", "earliest", "--count", "10")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    written = out.split()
    assert len(written) == 10 and set(written) <= set(values(100))
    summary = err.decode()
    assert "accepted 10, released " in summary, summary
    released = int(summary.split("released ")[1].split(",")[0])

    rest: list[tuple[bytes, int]] = []  # every delivery, duplicates kept
    lock = threading.Lock()

    def take(info) -> None:
        with lock:
            rest.extend((m.value, m.delivery_count) for m in info.messages)

    with rdk.ShareConsumer(kafka_cluster.bootstrap_servers, topic, take, group_id=group) as c:
        c.start()
        wait_until(lambda: len(rest) >= 90, 60, "the 90 records not written")
    # exactly the 90 not written, each once
    assert sorted(v for v, _ in rest) == sorted(set(values(100)) - set(written))
    counts = Counter(count for _, count in rest)
    # the first member released each record it fetched beyond the count once: exactly
    # those come a second time, the others a first
    assert set(counts) <= {1, 2} and counts[2] == released, (counts, summary)


def test_cli_reject_on_error_rejects_the_record_it_cannot_write(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="srej")
    produce(kafka_cluster, topic, 0, [*values(4), b"bad", *values(4, 4)])
    # a format error for one record: the encoder refuses the value b"bad"
    hook = textwrap.dedent("""
        import rdk.cli._consume as c
        real = c.encode_messages
        def encode(rows, fmt):
            if any(r[0] == b"bad" for r in rows):
                raise ValueError("cannot encode b'bad'")
            return real(rows, fmt)
        c.encode_messages = encode
    """)
    proc = _rdk("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic, "--share",
                _group(), "--start-offset", "earliest", "--count", "8", "--reject-on-error",
                code=hook)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert sorted(out.split()) == sorted(values(8))
    # the count (8) cut the first batch of 9 before its last record, which was released and
    # written from its next delivery, taking the place the rejected record left
    assert "accepted 8, released 1, rejected 1" in err.decode(), err.decode()
    assert "cannot write" in err.decode()


def test_cli_reject_on_error_needs_share():
    proc = _rdk("consume", "-b", "127.0.0.1:9", "-t", "t", "--group", "g", "--reject-on-error")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and b"--reject-on-error needs --share" in err


# ---- WorkerPool: N share-consumer processes -----------------------------------------------


def record(outdir: str, hold_value: bytes | None, info) -> None:
    """receive_callback of the pool's share consumers: log (pid, value, delivery count) of
    what was processed. A first delivery of a batch holding ``hold_value`` is held forever
    instead (its records are logged to held-<pid>.txt), so that the test can kill it."""
    pid = os.getpid()
    if hold_value is not None and any(m.value == hold_value and m.delivery_count == 1
                                      for m in info.messages):
        _append(outdir, f"held-{pid}.txt",
                "".join(f"{m.value.decode()}\n" for m in info.messages))
        threading.Event().wait()  # until SIGKILL
    time.sleep(0.05)  # a little work, so that the other members get their share
    _append(outdir, f"processed-{pid}.txt",
            "".join(f"{pid} {m.value.decode()} {m.delivery_count}\n" for m in info.messages))


def _append(outdir: str, name: str, text: str) -> None:
    fd = os.open(os.path.join(outdir, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def processed(outdir: Path) -> list[tuple[int, bytes, int]]:
    rows = []
    for f in outdir.glob("processed-*.txt"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                rows.append((int(parts[0]), parts[1].encode(), int(parts[2])))
    return rows


def _share_factory(bootstrap: str, topic: str, outdir: Path, hold_value: bytes | None = None):
    return partial(rdk.ShareConsumer, bootstrap, topic, partial(record, str(outdir), hold_value),
                   start_offset="earliest", max_messages_per_callback=10)


def _produce_until_three_members(cluster, topic: str, outdir: Path, sent: list[bytes]) -> None:
    """Produce rounds of 50 until three processes have processed messages (a member that
    fetches first may acquire a whole round: the members join and fetch at their own pace)."""
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        batch = values(50, start=len(sent))
        produce(cluster, topic, 0, batch)
        sent += batch
        total = len(sent)
        wait_until(lambda total=total: len(processed(outdir)) >= total, 120,
                   "every message so far")
        if len({pid for pid, _, _ in processed(outdir)}) >= 3:
            return
    raise AssertionError(f"only {Counter(p for p, _, _ in processed(outdir))} processed")


def test_pool_of_three_share_consumers_on_one_partition(kafka_cluster, new_topic, tmp_path):
    topic = new_topic(kafka_cluster, 1, prefix="spool")
    stats: list[workers.PoolStats] = []
    sent: list[bytes] = []
    pool = workers.WorkerPool(3, _share_factory(kafka_cluster.bootstrap_servers, topic, tmp_path),
                              group_id=_group(), stop_timeout=30, stats_callback=stats.append)
    with pool:
        assert pool.wait_started(120), "3 share consumers started"
        assert pool.partitions == {0: [], 1: [], 2: []}  # records are shared, not partitions
        _produce_until_three_members(kafka_cluster, topic, tmp_path, sent)
    rows = processed(tmp_path)
    assert Counter(v for _, v, _ in rows) == Counter(sent)  # every message, each once
    assert all(count == 1 for _, _, count in rows)
    assert len({pid for pid, _, _ in rows}) == 3
    assert pool.error is None


# ---- a cluster with a short acquisition lock -----------------------------------------------


@pytest.fixture(scope="module")
def short_lock_cluster():
    why = kafka_unavailable()
    if why:
        pytest.skip(why)
    from rdk.testing import KafkaCluster

    cluster = KafkaCluster(config={"group.share.record.lock.duration.ms": LOCK_MS,
                                   "group.share.min.record.lock.duration.ms": 1000})
    try:
        yield cluster
    finally:
        cluster.close()


def test_sigkilled_member_mid_batch_loses_nothing(short_lock_cluster, tmp_path):
    cluster = short_lock_cluster
    topic = f"skill-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1)
    hold = b"m60"  # of the second round: the member that gets it holds its batch
    pool = workers.WorkerPool(3, _share_factory(cluster.bootstrap_servers, topic, tmp_path, hold),
                              group_id=_group(), stop_timeout=30, restart_backoff=0.2)
    with pool:
        assert pool.wait_started(120)
        produce(cluster, topic, 0, values(50))
        wait_until(lambda: len(processed(tmp_path)) >= 50, 120, "the first round")
        produce(cluster, topic, 0, values(50, 50))
        wait_until(lambda: list(tmp_path.glob("held-*.txt")), 120, "a member holding a batch")
        held_file = next(tmp_path.glob("held-*.txt"))
        victim = int(held_file.name[5:-4])
        held = set(held_file.read_text().split())
        os.kill(victim, signal.SIGKILL)
        produce(cluster, topic, 0, values(50, 100))
        wait_until(lambda: {v for _, v, _ in processed(tmp_path)} >= set(values(150)), 180,
                   "every message processed after the kill")
    rows = processed(tmp_path)
    assert {v for _, v, _ in rows} == set(values(150))  # nothing lost
    again = [(v, c) for _, v, c in rows if v.decode() in held]  # duplicates kept
    assert sorted(v for v, _ in again) == sorted(h.encode() for h in held)  # each once more
    assert all(c >= 2 for _, c in again)  # the killed member's batch came back
    assert all(pid != victim for pid, v, _ in rows if v.decode() in held)
    others = Counter(v for _, v, _ in rows if v.decode() not in held)
    assert others and set(others.values()) == {1}  # the rest exactly once


def test_callback_outliving_its_lock_is_counted_and_redelivered(short_lock_cluster):
    cluster = short_lock_cluster
    topic = f"slock-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1)
    group = _group()
    first: list = []
    second: list = []
    slow_holding, may_return = threading.Event(), threading.Event()

    def slow(info):
        first.extend(info.messages)
        slow_holding.set()
        may_return.wait(120)  # outlives the lock: returns after `fast` had the records

    slow_member = rdk.ShareConsumer(cluster.bootstrap_servers, topic, slow, group_id=group,
                                    start_offset="earliest")
    fast_member = rdk.ShareConsumer(cluster.bootstrap_servers, topic,
                                    lambda info: second.extend(info.messages), group_id=group,
                                    start_offset="earliest")
    with slow_member, fast_member:
        slow_member.start()
        produce(cluster, topic, 0, values(5))
        assert slow_holding.wait(120), "the slow member got the batch"
        fast_member.start()
        wait_until(lambda: {m.value for m in second} >= {m.value for m in first}, 120,
                   "the slow member's records redelivered to the other member")
        may_return.set()
        wait_until(lambda: slow_member.stats().lock_expired_batches == 1, 60,
                   "the slow member's batch counted as past its lock")
        wait_until(lambda: fast_member.stats().accepted >= len(first), 60, "the redelivery accepted")
    stats = slow_member.stats()
    assert {m.value for m in first} == set(values(len(first)))
    assert {m.value for m in second} == {m.value for m in first}  # nothing lost...
    assert all(m.delivery_count == 2 for m in second)  # ...delivered again, to the other member
    # librdkafka 2.15.1 reports the late acknowledgement only sometimes (INVALID_RECORD_STATE
    # through the acknowledgement-commit callback, counted in ack_errors), so rdk measures the
    # callback against the group's lock: counted as expired, not as accepted
    assert stats.delivered == len(first) and stats.in_flight_batches == 0
    assert stats.lock_expired_batches == 1 and stats.accepted == 0
