"""Group ids librdkafka would rewrite are refused at the boundary, naming the id.

librdkafka left-trims every string property it is given (rd_kafka_anyconf_set_prop() in
rdkafka_conf.c), so a consumer with group.id " lead-1" joins "lead-1" while the Admin calls
rdk makes for it (a share group's share.auto.offset.reset) name " lead-1": the member then
gets no records and no error. Every entry point refuses such an id instead.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import rdk
from rdk import validate, workers
from rdk._binding import ffi, lib
from rdk.offsets import BrokerOffsetStore

BROKER = "127.0.0.1:9"
REWRITTEN = [" lead-1", "\tlead-1", "\nlead-1", "  "]


def _librdkafka_group_id(value: str) -> str:
    """What librdkafka keeps of group.id=value (rd_kafka_conf_set, then rd_kafka_conf_get)."""
    conf = lib.rd_kafka_conf_new()
    try:
        errstr = ffi.new("char[]", 256)
        assert lib.rd_kafka_conf_set(conf, b"group.id", value.encode(), errstr, 256) == 0
        size = ffi.new("size_t *", 1024)
        out = ffi.new("char[]", 1024)
        assert lib.rd_kafka_conf_get(conf, b"group.id", out, size) == 0
        return ffi.string(out).decode()
    finally:
        lib.rd_kafka_conf_destroy(conf)


@pytest.mark.parametrize("group_id", REWRITTEN)
def test_librdkafka_rewrites_exactly_the_ids_rdk_refuses(group_id):
    assert _librdkafka_group_id(group_id) != group_id  # the premise: librdkafka strips it
    with pytest.raises(ValueError, match="starts with white space"):
        validate.check_group_id(group_id)


@pytest.mark.parametrize("group_id", ["lead-1", "lead 1", "lead-1 ", "g\u00e9", "a" * 300])
def test_ids_librdkafka_keeps_are_accepted(group_id):
    assert _librdkafka_group_id(group_id) == group_id
    assert validate.check_group_id(group_id) == group_id


def test_a_nul_character_is_refused():
    with pytest.raises(ValueError, match="NUL"):
        validate.check_group_id("lead\x00-1")


@pytest.mark.parametrize("group_id", [" lead-1", "lead\x00-1"])
def test_every_entry_point_refuses_the_id_by_name(group_id, tmp_path):
    calls = [
        lambda: rdk.Consumer(BROKER, "t", group_id=group_id),
        lambda: rdk.Consumer(BROKER, "t", group_id=group_id,
                             driver_options={"group.protocol": "consumer"}),
        lambda: rdk.ShareConsumer(BROKER, "t", None, group_id=group_id),
        lambda: BrokerOffsetStore(group_id, broker=BROKER, topic="t"),
        lambda: workers.WorkerPool(1, rdk.Consumer, group_id=group_id),
    ]
    with rdk.Admin(BROKER) as admin:
        calls += [
            lambda: admin.alter_group_config(group_id, {"share.auto.offset.reset": "earliest"}),
            lambda: admin.describe_group_config(group_id),
            lambda: admin.delete_share_group(group_id),
            lambda: admin.reset_share_group(group_id, "earliest"),
        ]
        for call in calls:
            with pytest.raises(ValueError) as e:
                call()
            assert repr(group_id) in str(e.value)


@pytest.mark.parametrize("flag", ["--share", "--group"])
@pytest.mark.parametrize("group_id", ["", " lead-1"])
def test_cli_refuses_the_id_with_exit_2(flag, group_id):
    r = subprocess.run([sys.executable, "-m", "rdk", "consume", "-b", BROKER, "-t", "t",
                        flag, group_id], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert flag in r.stderr and "Traceback" not in r.stderr
