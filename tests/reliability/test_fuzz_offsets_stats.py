"""Hypothesis on the offset-file parser/writer (rdk.offsets) and the stats derivation
(rdk.stats): any content either parses to the offset it spells or raises OffsetFileError
naming the file; any topic name either is refused or stays inside the directory; any
librdkafka-shaped stats document derives non-negative figures whose sums add up."""

from __future__ import annotations

import os
import pathlib
import string
import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rdk import OffsetFileError
from rdk.offsets import (
    list_offset_files,
    offset_file_path,
    parse_offset_text,
    read_offset_file,
    write_offset_file,
)
from rdk.stats import consumer_stats, send_queue_length

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
FILES = settings(SETTINGS, max_examples=60)  # each example fsyncs real files
LEGAL = string.ascii_letters + string.digits + "._-"
legal_topics = st.text(LEGAL, min_size=1, max_size=40).filter(lambda t: t not in (".", ".."))
offsets = st.integers(-1, 2**63 - 1)


# ---- offset files ------------------------------------------------------------------------

@SETTINGS
@given(st.binary(max_size=64))
@example(b"")
@example(b"\n")
@example(b"-1\n")
@example(b"-2\n")
@example(b"12\x00")
@example(b"\xef\xbb\xbf12\n")
@example(b"+5\n")
@example(b"1_000\n")
@example("\u0661\u0662".encode())  # Arabic-Indic digits: int() would take them
def test_any_content_parses_to_its_offset_or_raises_naming_the_file(data):
    try:
        value = parse_offset_text(data, "/x/t-3.offset")
    except OffsetFileError as e:
        assert "/x/t-3.offset" in str(e)
        return
    text = data.decode("ascii")  # only ASCII digits, sign and whitespace may parse
    assert value >= -1 and int(text.strip()) == value
    assert text.strip().lstrip("-").isdigit() and text.strip().isascii()


@SETTINGS
@given(value=offsets, pad_left=st.sampled_from(["", " ", "\t", "\n"]),
       pad_right=st.sampled_from(["", "\n", " \n", "\r\n"]))
def test_decimal_text_as_kafka_native_wrote_it_parses(value, pad_left, pad_right):
    assert parse_offset_text(f"{pad_left}{value}{pad_right}".encode()) == value


@FILES
@given(topic=legal_topics, partition=st.integers(0, 2**31 - 1), value=offsets)
def test_written_offsets_read_back_and_are_listed(topic, partition, value):
    with tempfile.TemporaryDirectory() as d:
        write_offset_file(d, topic, partition, value)
        path = offset_file_path(d, topic, partition)
        assert read_offset_file(path) == value
        assert path.read_bytes() == b"%d\n" % value
        assert [(f.topic, f.partition) for f in list_offset_files(d)] == [(topic, partition)]
        assert sorted(os.listdir(d)) == [path.name]  # no temp file left


@SETTINGS
@given(topic=st.text(max_size=30), partition=st.integers(-5, 2**32))
@example(topic="..", partition=0)
@example(topic="../x", partition=0)
@example(topic="/etc/passwd", partition=0)
@example(topic="a/../../b", partition=0)
@example(topic="a\x00b", partition=0)
def test_no_topic_name_escapes_the_offset_directory(topic, partition):
    base = pathlib.Path("/srv/offsets")
    try:
        path = offset_file_path(base, topic, partition)
    except (ValueError, TypeError) as e:
        assert "topic" in str(e) or "partition" in str(e)
        return
    assert path.parent == base and os.path.normpath(path) == str(path)
    assert path.name == f"{topic}-{partition}.offset" and 0 <= partition < 2**31


@FILES
@given(names=st.lists(st.text(LEGAL + "/\\ \x00:", min_size=1, max_size=20), max_size=8))
def test_listing_only_reports_well_formed_offset_file_names(names):
    with tempfile.TemporaryDirectory() as d:
        made = set()
        for n in names:
            name = n.replace("/", "_").replace("\x00", "_") + ".offset"
            if name in (".offset", "..offset"):
                continue
            pathlib.Path(d, name).write_text("1\n")
            made.add(name)
        listed = list_offset_files(d)
        for f in listed:
            assert f.path.name in made and f.path.parent == pathlib.Path(d)
            assert f.path.name == f"{f.topic}-{f.partition}.offset"
            assert set(f.topic) <= set(LEGAL)


# ---- stats derivation -----------------------------------------------------------------------

leaf = st.one_of(st.none(), st.integers(-(2**40), 2**40), st.text(max_size=5),
                 st.floats(allow_nan=True), st.booleans())
number = st.one_of(st.integers(-1001, 10**9), leaf)


@st.composite
def stats_docs(draw):
    """librdkafka-shaped statistics, with any partition entry missing or odd."""
    partitions = {}
    for p in draw(st.lists(st.integers(-1, 8), max_size=6, unique=True)):
        entry = {k: draw(number) for k in draw(st.sets(st.sampled_from(
            ["hi_offset", "lo_offset", "next_offset", "fetchq_cnt", "fetch_state", "ls_offset"])))}
        partitions[str(p)] = entry
    doc = {"type": "consumer", "msg_cnt": draw(number)}
    if draw(st.booleans()):
        doc["topics"] = {"t": {"partitions": partitions}, "other": {"partitions": {}}}
    return doc


ODD = {"topics": {"t": {"partitions": {"0": {"hi_offset": float("inf"), "lo_offset": float("nan"),
                                              "next_offset": "7", "fetchq_cnt": None}}}},
       "msg_cnt": float("-inf")}


@settings(SETTINGS, max_examples=150)
@example(doc=ODD, owned=[0], buffered={}, nexts={})
@given(doc=stats_docs(), owned=st.lists(st.integers(0, 8), max_size=5, unique=True),
       buffered=st.dictionaries(st.integers(0, 8), st.integers(-5, 10**6), max_size=4),
       nexts=st.dictionaries(st.integers(0, 8), st.integers(-5, 10**9), max_size=4))
def test_stats_figures_are_never_negative_and_add_up(doc, owned, buffered, nexts):
    s = consumer_stats(doc, "t", owned, buffered=buffered, next_offsets=nexts)
    assert set(s.partitions) == set(owned)
    for fig in ("waiting_kafka", "waiting_local", "kafka_log_size"):
        per = [getattr(p, fig) for p in s.partitions.values()]
        assert all(isinstance(v, int) and v >= 0 for v in per), (fig, per)
        assert getattr(s, fig) == sum(per)
    assert send_queue_length(doc) >= 0


@SETTINGS
@given(hi=st.integers(0, 10**12), lo=st.integers(0, 10**12), nxt=st.integers(0, 10**12),
       fetchq=st.integers(0, 10**6), mine=st.integers(0, 10**6))
def test_stats_figures_follow_kafka_natives_definitions(hi, lo, nxt, fetchq, mine):
    lo = min(lo, hi)
    doc = {"topics": {"t": {"partitions": {"0": {"hi_offset": hi, "lo_offset": lo,
                                                   "next_offset": nxt, "fetchq_cnt": fetchq}}}}}
    s = consumer_stats(doc, "t", [0], buffered={0: mine})
    assert s.waiting_kafka == max(0, hi - nxt)
    assert s.waiting_local == fetchq + mine
    assert s.kafka_log_size == hi - lo
