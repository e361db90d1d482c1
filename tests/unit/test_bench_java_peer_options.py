"""bench/java_peer.py's sweep options, without a broker: peer variants ("rdk queue=N"),
--partitions/--sizes/--count replacing the matrix, and the goals the summary adds (the scale
sweep's 1.3 x at >= 512 partitions, a variant's rate and memory against confluent-kafka)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
import java_peer


def test_a_variant_is_its_client_with_a_bounded_queue():
    assert java_peer.base_peer("rdk queue=30000") == ("rdk", {"queue.buffering.max.messages": 30000})
    assert java_peer.base_peer("confluent-kafka") == ("confluent-kafka", {})
    assert java_peer.check_peer("native C queue=100") == "native C queue=100"


@pytest.mark.parametrize("bad", ["rdk queue=", "rdk queue=lots", "kafka-python", "rdk Arrow queue=5"])
def test_an_unknown_peer_is_named(bad):
    with pytest.raises(argparse.ArgumentTypeError, match="unknown peer"):
        java_peer.check_peer(bad)
    with pytest.raises(SystemExit):
        java_peer.build_parser().parse_args(["--peers", f"rdk,{bad}"])


def run(peer, kind, partitions, msgs, rss=100.0, whole=None):
    return {"kind": kind, "peer": peer, "size": 100, "partitions": partitions, "count": 10,
            "repeat": 0, "point": "", "problem": "", "msgs_per_s": msgs, "mb_per_s": msgs / 1e4,
            "cpu_us_per_msg": 1.0, "peak_rss_mib": rss, "whole_msgs_per_s": whole or msgs}


def test_the_summary_adds_the_scale_goal_and_the_variant_goals():
    runs = [run("rdk", "produce", 2048, 140.0, whole=120.0),
            run("confluent-kafka", "produce", 2048, 100.0, rss=50.0),
            run("rdk queue=30000", "produce", 2048, 90.0, rss=55.0),
            run("rdk", "produce", 64, 100.0), run("confluent-kafka", "produce", 64, 100.0)]
    goals = {g["goal"]: g["holds"] for g in java_peer.summarise(runs)["goals"]}
    assert goals["produce 100B 2048p: rdk >= 1.3 x confluent-kafka"] is True
    assert goals["produce 100B 2048p: rdk >= 1.3 x confluent-kafka (whole run)"] is False
    assert goals["produce 100B 2048p: rdk queue=30000 msgs/s >= 1 x confluent-kafka's"] is False
    assert goals["produce 100B 2048p: rdk queue=30000 peak RSS <= 1.2 x confluent-kafka's"] is True
    assert not [g for g in goals if g.startswith("produce 100B 64p: rdk >= 1.3")]


def test_a_cpu_goal_below_native_cs_own_cpu_is_named_and_enqueue_rates_are_tabled():
    """The CPU goal (0.5 x confluent-kafka's) is compared with native C's CPU per message
    (the C library alone); the producers' enqueue rates get a table of their own."""
    def cpu_run(peer, cpu, enqueue=None):
        r = {**run(peer, "produce", 4, 100.0), "cpu_us_per_msg": cpu}
        if enqueue:
            r["enqueue_msgs_per_s"] = enqueue
        return r

    runs = [cpu_run("rdk", 1.0, 3e6), cpu_run("confluent-kafka", 1.6, 1e6),
            cpu_run("native C", 0.9, 4e6)]
    data = {"meta": {"peers": ["rdk", "confluent-kafka", "native C"]},
            "summary": java_peer.summarise(runs)}
    (goal,) = [g for g in data["summary"]["goals"] if "CPU/msg" in g["goal"]]
    assert goal["holds"] is False and goal["native_c_ratio"] == pytest.approx(0.9 / 1.6)
    text = java_peer.tables(data)
    assert "less than native C's own CPU per message" in text
    assert "in 1 cells: produce 100B 4p 0.56." in text
    enqueue = text[text.index("**Enqueue rate**"):].split("\n")
    assert "| produce | 100 B | 4 | 3 000 000 | 1 000 000 | 4 000 000 |" in enqueue
    # where native C needs at most half of confluent-kafka's CPU, no such line
    runs[2]["cpu_us_per_msg"] = 0.7
    data["summary"] = java_peer.summarise(runs)
    assert "less than native C's own CPU" not in java_peer.tables(data)


def test_sweep_options_replace_the_matrix(monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_libs():
        raise Stop

    monkeypatch.setattr("rdk.testing.kafka_libs", fake_libs)
    args = ["--partitions", "512,8192", "--sizes", "100", "--count", "5000", "--quick"]
    parser = java_peer.build_parser
    monkeypatch.setattr(java_peer, "build_parser",
                        lambda: _recording(parser(), seen))
    with pytest.raises(Stop):
        java_peer.main(args)
    plan = seen["args"].plan
    assert plan["partitions"] == [512, 8192] and plan["sizes"] == [100]
    assert plan["counts"] == {100: 5000} and "cells" not in plan
    assert seen["args"].peers == java_peer.PEERS


def _recording(parser, seen):
    plain = parser.parse_args

    def parse_args(argv=None):
        seen["args"] = plain(argv)
        return seen["args"]

    parser.parse_args = parse_args
    return parser


# docs/performance.md's commands, as written there (its exempt blocks name this file)
DOCUMENTED = [
    ["--duration", "5", "--out", "docs/data/java_peer.json",
     "--peers", "rdk,rdk Arrow,confluent-kafka,java,native C,rdk queue=30000"],
    ["--throughput-only", "--partitions", "512,2048", "--sizes", "100", "--repeat", "5",
     "--peers", "rdk,rdk Arrow,confluent-kafka,native C", "--out", "docs/data/java_peer_scale.json"],
    ["--throughput-only", "--partitions", "8192", "--sizes", "100", "--broker-heap-mib", "2048",
     "--peers", "rdk,rdk Arrow,confluent-kafka", "--out", "docs/data/java_peer_8192.json"],
]


@pytest.mark.parametrize("argv", DOCUMENTED)
def test_the_documented_commands_parse(argv):
    args = java_peer.build_parser().parse_args(argv)
    assert args.peers == argv[argv.index("--peers") + 1].split(",")
    assert str(args.out) == argv[argv.index("--out") + 1]
    if "--broker-heap-mib" in argv:
        assert args.broker_heap_mib == 2048 and args.throughput_only
    else:
        assert args.broker_heap_mib == 384


class _Cell(java_peer.Bench):
    """A Bench whose produce and drop are recorded, not run (the cell's topic bookkeeping)."""

    def __init__(self, failing=()):  # no broker: nothing of Bench.__init__ is needed
        self.produced, self.events, self.failing = [], [], set(failing)

    def produce(self, peer, size, partitions, count, repeat):
        self.events.append(("produce", peer))
        topic = f"topic-of-{peer}"
        self.produced.append(topic)
        return "" if peer in self.failing else topic

    def drop(self, topics):
        self.events.append(("drop", *topics))


ORDER = ["confluent-kafka", "rdk Arrow", "rdk", "java", "native C"]


def test_each_producers_topic_goes_as_soon_as_it_is_counted_except_rdks():
    cell = _Cell()
    assert cell.produce_cell(ORDER, 10240, 64, 10, 0) == "topic-of-rdk"
    assert cell.events == [("produce", "confluent-kafka"),  # kept until rdk's is there
                           ("produce", "rdk"), ("drop", "topic-of-confluent-kafka"),
                           ("produce", "java"), ("drop", "topic-of-java"),
                           ("produce", "native C"), ("drop", "topic-of-native C")]
    assert cell.produced == ["topic-of-rdk"]  # dropped after the consumers read it


def test_a_failed_rdk_run_leaves_another_full_topic_to_consume():
    cell = _Cell(failing={"rdk"})
    assert cell.produce_cell(ORDER, 100, 4, 10, 0) == "topic-of-confluent-kafka"
    assert ("drop", "topic-of-confluent-kafka") not in cell.events
    assert ("drop", "topic-of-java") in cell.events
