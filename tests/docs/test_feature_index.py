"""tests/FEATURES.md, the index of the tests by feature, stays true (tests/feature_index.py)."""

from __future__ import annotations

import feature_index

ROOT = feature_index.TESTS.parent


def test_every_test_file_serves_a_feature() -> None:
    assert feature_index.unindexed(feature_index.test_names()) == []


def test_the_feature_index_matches_the_tests() -> None:
    want = feature_index.render(feature_index.test_names())
    got = (ROOT / "tests" / "FEATURES.md").read_text()
    assert got == want, "tests/FEATURES.md is stale: python tests/feature_index.py > tests/FEATURES.md"


def test_a_new_file_with_an_unmatched_test_is_found(tmp_path) -> None:
    names = dict(feature_index.test_names())
    names["tests/unit/test_zzz.py"] = ["test_qqq"]
    assert feature_index.unindexed(names) == ["tests/unit/test_zzz.py"]
    names["tests/unit/test_zzz.py"] = ["test_pause_then_qqq"]
    assert feature_index.unindexed(names) == []
