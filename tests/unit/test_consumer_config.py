"""ConsumerConfig alone, without a broker: the properties and stores a Consumer's arguments make.

rdk.Consumer's parts get this one object; here it is built from the same defaults as
``rdk.Consumer(...)``'s signature, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import rdk
from rdk.consumer._config import CLASSIC_METADATA_REFRESH_MS, ConsumerConfig, check_seek_offset
from rdk.errors import ConfigError

_TAKES = set(inspect.signature(ConsumerConfig).parameters)  # the rest is the Consumer's own
_DEFAULTS = {name: p.default for name, p in inspect.signature(rdk.Consumer).parameters.items()
             if p.kind is not inspect.Parameter.VAR_KEYWORD and name in _TAKES and name not in (
                 "self", "broker", "topic", "offset_directory")}


def config(topic: Any = "t", offset_directory: Any = None, **kw: Any) -> ConsumerConfig:
    return ConsumerConfig("127.0.0.1:9", topic, offset_directory, **{**_DEFAULTS, **kw})


def test_slot_mode_keeps_offset_files_per_topic(tmp_path):
    cfg = config(["a", "b"], tmp_path)
    assert (cfg.topics, cfg.pattern, cfg.topic, cfg.multi_topic) == (["a", "b"], None, "a,b", True)
    assert cfg.offset_directory == tmp_path and cfg.user_store is None and cfg.store is not None
    assert cfg.props["enable.partition.eof"] is False
    assert cfg.props["fetch.queue.backoff.ms"] == 10
    assert cfg.topic_props["auto.offset.reset"] == "earliest"


def test_driver_options_win_over_rdk_defaults_but_not_over_the_broker(tmp_path):
    cfg = config(offset_directory=tmp_path,
                 driver_options={"fetch.queue.backoff.ms": 250, "client.id": "me"})
    assert cfg.props["fetch.queue.backoff.ms"] == 250 and cfg.props["client.id"] == "me"
    assert cfg.props["bootstrap.servers"] == "127.0.0.1:9"


def test_group_mode_commits_itself_and_refreshes_metadata_for_the_classic_protocol():
    props = config(group_id="g").group_props()
    assert (props["group.id"], props["enable.auto.commit"], props["enable.auto.offset.store"]) == (
        "g", False, False)
    assert props["partition.assignment.strategy"] == "cooperative-sticky"
    assert props["topic.metadata.refresh.interval.ms"] == CLASSIC_METADATA_REFRESH_MS
    kip848 = config(group_id="g", driver_options={"group.protocol": "consumer"}).group_props()
    assert "partition.assignment.strategy" not in kip848
    assert "topic.metadata.refresh.interval.ms" not in kip848
    own = config(group_id="g", driver_options={"topic.metadata.refresh.interval.ms": 1000,
                                               "partition.assignment.strategy": "range"})
    assert own.group_props()["topic.metadata.refresh.interval.ms"] == 1000
    assert own.group_props()["partition.assignment.strategy"] == "range"


def test_group_mode_without_offset_store_has_no_store_of_its_own():
    cfg = config(group_id="g")
    assert (cfg.store, cfg.user_store, cfg.offset_directory) == (None, None, None)


@pytest.mark.parametrize(("kw", "error", "message"), [
    ({}, TypeError, "offset_directory is required"),
    ({"topic_options": {"auto.offset.reset": "latest"}}, ConfigError, "on_offset_out_of_range="),
    ({"topic": "^re.*"}, ValueError, "a \\^regex subscription needs group mode"),
    ({"topic": []}, ValueError, "the list of topics is empty"),
    ({"topic": ["a", "a"]}, ValueError, "names a topic twice"),
    ({"topic": 5}, TypeError, "topic must be a str"),
    ({"on_assign": print}, ValueError, "on_assign needs group_id"),
    ({"group_id": "g", "num_workers": 2, "worker_slot": 1}, ValueError, "give one or the other"),
    ({"commit_on_error": 1}, TypeError, "commit_on_error must be bool, got int"),
    ({"loop": object()}, TypeError, "loop must be an asyncio event loop, got object"),
    ({"start_offset": "middle"}, ValueError, "start_offset"),
])
def test_each_bad_argument_is_named(kw, error, message):
    with pytest.raises(error, match=message):
        config(**kw)


def test_a_user_store_keeps_one_topic(tmp_path):
    class Store:
        def read(self, partitions): return {}
        def commit(self, offsets): pass

    cfg = config(offset_store=Store())
    assert cfg.user_store is not None and cfg.offset_directory is None
    with pytest.raises(ValueError, match="keeps one topic's progress"):
        config(["a", "b"], offset_store=Store())
    with pytest.raises(TypeError, match="has no commit"):
        config(offset_store=type("Half", (), {"read": lambda self, p: {}})())


def test_seek_keys_and_offsets():
    one, many = config(group_id="g"), config(["a", "b"], group_id="g")
    assert one.check_key(3) == ("t", 3) and many.check_key(("b", 1)) == ("b", 1)
    with pytest.raises(TypeError, match="give \\(topic, partition\\)"):
        many.check_key(1)
    with pytest.raises(ValueError, match="must be a partition or"):
        one.check_key(("t", 1, 2))
    assert check_seek_offset(7) == 7
    assert check_seek_offset("earliest") == -2 and check_seek_offset("latest") == -1
    with pytest.raises(ValueError, match="'earliest' or 'latest', got 'first'"):
        check_seek_offset("first")
