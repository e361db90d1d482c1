"""The exactly-once sink's staging rows, without Spark or a broker: the attempt header goes
first in every row's headers and comes off again; only the named attempts' rows are kept."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pyarrow as pa

from rdk.spark._exactly_once import _HEADERS, TAG, _attempt_rows, with_attempt_header


def staged_batch(values, headers, attempt: bytes) -> pa.RecordBatch:
    n = len(values)
    h = None if headers is None else pa.array(headers, _HEADERS)
    return pa.RecordBatch.from_arrays(
        [pa.array([b"k%d" % i for i in range(n)], pa.binary()), pa.array(values, pa.binary()),
         with_attempt_header(h, n, attempt)], names=["key", "value", "headers"])


def test_the_attempt_header_goes_first_and_the_rows_own_follow_in_order():
    headers = [[("a", b"1"), ("b", b"2")], None, [], [("c", b"3")]]
    got = with_attempt_header(pa.array(headers, _HEADERS), 4, b"x").to_pylist()
    tag = {"key": TAG, "value": b"x"}
    assert got == [[tag, {"key": "a", "value": b"1"}, {"key": "b", "value": b"2"}], [tag], [tag],
                   [tag, {"key": "c", "value": b"3"}]]
    assert with_attempt_header(None, 2, b"y").to_pylist() == [[{"key": TAG, "value": b"y"}]] * 2


def test_a_sliced_headers_column_keeps_its_own_rows():
    column = pa.array([[("a", b"1")], [("b", b"2")], [("c", b"3")]], _HEADERS).slice(1, 2)
    got = with_attempt_header(column, 2, b"x").to_pylist()
    assert [[h["key"] for h in row] for row in got] == [[TAG, "b"], [TAG, "c"]]


def test_only_the_named_attempts_rows_are_kept_without_their_header():
    good = staged_batch([b"g0", b"g1"], [[("a", b"1")], None], b"good")
    bad = staged_batch([b"b0"], None, b"failed")
    foreign = pa.RecordBatch.from_arrays(  # a row someone else wrote to the staging topic
        [pa.array([None], pa.binary()), pa.array([b"f"], pa.binary()),
         pa.array([None], _HEADERS)], names=["key", "value", "headers"])
    batch = pa.concat_batches([bad, good, foreign])
    got: Counter = Counter()
    rows = _attempt_rows(batch, pa.array([b"good", b"other"], pa.binary()), got)
    assert rows is not None
    assert rows.column(1).to_pylist() == [b"g0", b"g1"]
    assert rows.column(0).to_pylist() == [b"k0", b"k1"]
    assert rows.column(2).to_pylist() == [[{"key": "a", "value": b"1"}], []]
    assert got == Counter({b"good": 2})
    assert _attempt_rows(bad, pa.array([b"good"], pa.binary()), got) is None


def test_staging_works_without_numpy():
    """The packed environment of docs/guide/spark.md's recipe holds the wheel and pyarrow,
    which no longer needs numpy: the sink's staging must not import it (it did, and the
    standalone cluster's exactly-once query failed with "No module named 'numpy'")."""
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import pyarrow as pa\n"
        "from rdk.spark._exactly_once import _HEADERS, _staged, with_attempt_header\n"
        "h = pa.array([[('a', b'1')], None], _HEADERS)\n"
        "assert [len(r) for r in with_attempt_header(h, 2, b'x').to_pylist()] == [2, 1]\n"
        "b = pa.RecordBatch.from_arrays([pa.array([b'v'], pa.binary())], names=['value'])\n"
        "assert next(_staged(iter([b]), b'x', 3)).column('partition').to_pylist() == [3]\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
