"""Catalogue cases of the tools (issue 14): offset files, worker pools, the mock cluster,
Admin and the command line. Imported by bad_input_catalogue.py."""

from __future__ import annotations

import os
from typing import Any

from catalogue_core import CliExit, Env, case, cli, table

from rdk import Admin, OffsetFileError
from rdk.mock import MockCluster, MockClusterProcess
from rdk.offsets import (
    BrokerOffsetStore,
    FileOffsetStore,
    lock_partitions,
    offset_file_path,
    read_offset_file,
    write_offset_file,
)
from rdk.workers import WorkerPool

BIG = 2**63
INT32_OVER = 2**31


def _admin(e: Env) -> Admin:
    admin = getattr(e, "_tools_admin", None)
    if admin is None:
        admin = Admin(e.b, driver_options={"log_level": 3})
        e._tools_admin = admin  # type: ignore[attr-defined]
    return admin


def _file_holding(e: Env, text: bytes) -> Any:
    path = offset_file_path(e.dir(), "t", 0)
    path.write_bytes(text)
    return read_offset_file(path)


def _symlinked(e: Env, write: bool) -> Any:
    d = e.dir()
    target = os.path.join(d, "target")
    with open(target, "w") as f:
        f.write("5\n")
    os.symlink(target, offset_file_path(d, "t", 0))
    return write_offset_file(d, "t", 0, 9) if write else read_offset_file(offset_file_path(d, "t", 0))


def _dangling(e: Env) -> Any:
    link = os.path.join(e.dir(), "gone")
    os.symlink(os.path.join(e.dir(), "missing"), link)
    return e.consumer(offset_directory=link)


# ---- numbers beyond what C takes ---------------------------------------------------------------
table(ValueError, [
    ("write_offset_file: offset 2**63", lambda e: write_offset_file(e.dir(), "t", 0, BIG),
     r"offset of topic 't' partition 0 \(.*t-0\.offset\)"),
    ("FileOffsetStore.commit: offset 2**63",
     lambda e: FileOffsetStore(e.dir(), "t").commit({1: BIG}), r"partition 1 .*must be <="),
    ("BrokerOffsetStore: timeout nan",
     lambda e: BrokerOffsetStore("g", timeout=float("nan")), r"timeout"),
    ("Admin.list_topics: timeout nan", lambda e: _admin(e).list_topics(timeout=float("nan")),
     r"timeout must be >= 0"),
    ("Admin.offsets_for_times: timestamp 2**63",
     lambda e: _admin(e).offsets_for_times("cat", {0: BIG}), r"timestamp of partition 0"),
    ("Admin.offsets_for_times: partition 2**31",
     lambda e: _admin(e).offsets_for_times("cat", {INT32_OVER: 0}), r"partition must be <="),
    ("Admin.create_topics: partitions 2**31",
     lambda e: _admin(e).create_topics({"huge": INT32_OVER}), r"'huge': partitions"),
    ("MockCluster.create_topic: partitions 2**31",
     lambda e: e.mc.create_topic("huge", INT32_OVER), r"partitions must be <="),
    ("MockCluster.broker_set_rtt: rtt 2**31", lambda e: e.mc.broker_set_rtt(1, INT32_OVER), r"rtt_ms"),
    ("MockCluster: num_brokers 10**6", lambda e: MockCluster(10**6), r"num_brokers"),
    ("MockClusterProcess: partitions 2**31",
     lambda e: MockClusterProcess({"t": INT32_OVER}), r"partitions of 't'"),
], kind="beyond C range")

# ---- offset files rdk cannot use ---------------------------------------------------------------
table(OffsetFileError, [
    ("read_offset_file: value 2**63", lambda e: _file_holding(e, b"%d\n" % BIG),
     r"t-0\.offset holds 9223372036854775808"),
], kind="beyond C range")
table(OffsetFileError, [
    ("read_offset_file: 5000 leading spaces", lambda e: _file_holding(e, b" " * 5000 + b"1\n"),
     r"t-0\.offset is larger than 4096 bytes"),
    ("read_offset_file: symlinked file", lambda e: _symlinked(e, write=False),
     r"t-0\.offset is a symbolic link"),
    ("write_offset_file: symlinked file", lambda e: _symlinked(e, write=True),
     r"t-0\.offset is a symbolic link"),
    ("Consumer: offset_directory is a regular file",
     lambda e: e.consumer(offset_directory=str(e.file)), r"a-regular-file is not a directory"),
    ("Consumer: offset_directory is a dangling symlink", _dangling,
     r"gone is not a directory: it is a symbolic link"),
], kind="unusable file")
table(ValueError, [
    ("FileOffsetStore: 247-character topic", lambda e: FileOffsetStore(e.dir(), "t" * 247),
     r"too long for offset files.*255"),
    ("Consumer: 249-character topic with offset files", lambda e: e.consumer(topic="t" * 249),
     r"'t{249}'.*255 bytes"),
    ("lock_partitions: name past 255 bytes", lambda e: lock_partitions(e.dir(), "t" * 240, [10**9]),
     r"partition 1000000000 .*255"),
], kind="unusable file")


@case("write_offset_file: 240-character topic works (short temp name)", None, kind="unusable file")
def _long_topic_writes(e: Env) -> None:
    d = e.dir()
    write_offset_file(d, "x" * 240, 3, 17)
    assert read_offset_file(offset_file_path(d, "x" * 240, 3)) == 17
    assert os.listdir(d) == [f"{'x' * 240}-3.offset"]


@case("Admin and BrokerOffsetStore: timeout inf or 1e20 waits without a practical limit", None,
      kind="beyond C range")
def _admin_huge_timeouts(e: Env) -> None:
    admin = _admin(e)
    assert "cat" in {t.name for t in admin.list_topics(timeout=float("inf"))}
    assert admin.partition_count("cat", timeout=1e20) == 2
    assert admin.query_watermarks("cat", 0, timeout=1e20)[0] == 0
    store = BrokerOffsetStore("g", broker=e.b, topic="cat", timeout=float("inf"))
    try:
        assert store.timeout == 2_000_000
        assert store.read([0]) == {}
    finally:
        store.close()


# ---- worker pools ------------------------------------------------------------------------------
table(ValueError, [
    ("WorkerPool: restart_backoff nan", lambda e: WorkerPool(1, dict, restart_backoff=float("nan")),
     r"restart_backoff"),
], kind="beyond C range")

# ---- the command line --------------------------------------------------------------------------
table(CliExit, [
    ("rdk offsets set --to 10**23", cli("offsets", "set", "{dir}", "-t", "t", "-p", "0", "--to",
                                        str(10**23)), r"^exit 2 \(1 line\(s\)\):.*--to"),
    ("rdk offsets set -p 2**31", cli("offsets", "set", "{dir}", "-t", "t", "-p", str(INT32_OVER),
                                     "--to", "5"), r"^exit 2 \(1 line\(s\)\):.*--partition"),
    ("rdk stats --interval inf", cli("stats", "-b", "{b}", "-t", "cat", "--interval", "inf"),
     r"^exit 2 \(1 line\(s\)\):.*--interval"),
    ("rdk stats --interval nan", cli("stats", "-b", "{b}", "-t", "cat", "--interval", "nan"),
     r"^exit 2 \(1 line\(s\)\):.*--interval"),
    ("rdk stats --interval 1e20", cli("stats", "-b", "{b}", "-t", "cat", "--interval", "1e20"),
     r"^exit 2 \(1 line\(s\)\):.*--interval"),
    ("rdk consume --count 10**23", cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{dir}",
                                       "--count", str(10**23)), r"^exit 2 \(1 line\(s\)\):.*--count"),
    ("rdk mock --topic 'bad topic:2'", cli("mock", "--topic", "bad topic:2"),
     r"^exit 2 \(1 line\(s\)\):.*'bad topic'"),
    ("rdk mock --topic t:2**31", cli("mock", "--topic", f"t:{INT32_OVER}"),
     r"^exit 2 \(1 line\(s\)\):.*--topic"),
    ("rdk mock --brokers 10**23", cli("mock", "--brokers", str(10**23)),
     r"^exit 2 \(1 line\(s\)\):.*--brokers"),
], kind="command line")
