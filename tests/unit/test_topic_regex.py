"""A ``^regex`` group subscription is checked in librdkafka's own dialect: POSIX extended
regex as libc's ``regcomp(REG_EXTENDED | REG_NOSUB)`` compiles it (librdkafka's
src/rdregex.c with HAVE_REGEX, which our build has), not Python's ``re``.

The dialect facts the checker relies on are asserted against libc itself here, so a libc
that behaves otherwise fails these tests instead of letting patterns through silently."""

from __future__ import annotations

import ctypes

import pytest

import rdk
from rdk.validate import check_topic_pattern

REG_EXTENDED, REG_NOSUB = 1, 8
libc = ctypes.CDLL(None)


def posix_matches(pattern: str, text: str) -> bool | None:
    """libc's answer with librdkafka's flags; None if regcomp refuses the pattern."""
    re_t = (ctypes.c_uint64 * 64)()
    if libc.regcomp(re_t, pattern.encode(), REG_EXTENDED | REG_NOSUB):
        return None
    try:
        return libc.regexec(re_t, text.encode(), 0, None, 0) == 0
    finally:
        libc.regfree(re_t)


# ---- what libc's POSIX ERE does (the facts behind the checker) -----------------------------


def test_libc_reads_python_escapes_as_literal_letters():
    assert posix_matches(r"^t\d+", "t1") is False and posix_matches(r"^t\d+", "tdd") is True
    assert posix_matches(r"^t\D", "tD") is True
    assert posix_matches(r"^t[\d]", "t1") is False  # in a bracket: '\' or 'd'


def test_libc_supports_the_gnu_escapes_the_checker_accepts():
    assert posix_matches(r"^t\w+$", "t_1") is True and posix_matches(r"^t\w", "t-") is False
    assert posix_matches(r"^t\s", "t ") is True
    assert posix_matches(r"^t\b", "t") is True
    assert posix_matches(r"^(t)\1$", "tt") is True


def test_libc_refuses_python_group_syntax_and_reads_lazy_quantifiers_as_two():
    assert posix_matches(r"^(?!x)t1", "t1") is None
    assert posix_matches(r"^t(?:a)", "ta") is None
    assert posix_matches(r"^t+?$", "") is True  # (t+)?: the empty name matches


# ---- the checker ---------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [
    r"^t[0-9]+", r"^t.*", r"^orders-(eu|us)\..+$", r"^t\w+", r"^t[[:digit:]]{2,3}$",
    r"^t[]x]", r"^t[^]x-]", r"^a\.b", r"^t\-x", r"^(t)\1", r"^t{,2}$", r"^t}?", r"^t\\"])
def test_posix_patterns_are_accepted_unchanged(pattern):
    assert check_topic_pattern(pattern) == pattern


@pytest.mark.parametrize("pattern, reason", [
    (r"^t\d+", r"\\d is not supported by librdkafka's POSIX extended regex .*use \[0-9\]"),
    (r"^t\D", r"\\D is not supported.*use \[\^0-9\]"),
    (r"^t\Ax", r"\\A is not supported.*use \^"),
    (r"^t\Z", r"\\Z is not supported.*use \$"),
    (r"^t\n", r"\\n is not supported"),
    (r"^t\x41", r"\\x is not supported"),
    (r"^t[\d]", r"a backslash inside \[\.\.\.\] is a literal backslash"),
    (r"^t[a\-z]", r"a backslash inside \[\.\.\.\]"),
    (r"^(?!x)t1", r"\(\?\.\.\.\) groups .* are not supported"),
    (r"^t(?:a|b)", r"\(\?\.\.\.\) groups"),
    (r"^(?i)t", r"\(\?\.\.\.\) groups"),
    (r"^t+?", r"lazy and possessive quantifiers"),
    (r"^t*?x", r"lazy and possessive quantifiers"),
    (r"^t{1,2}?", r"lazy and possessive quantifiers"),
    (r"^t++", r"lazy and possessive quantifiers"),
    (r"^t(", r"not a valid regular expression in librdkafka's POSIX extended dialect \(Unmatched"),
    (r"^t{", r"not a valid regular expression .*\\\{"),
])
def test_patterns_librdkafka_would_misread_or_refuse_raise_value_error_naming_them(pattern, reason):
    with pytest.raises(ValueError, match=reason) as info:
        check_topic_pattern(pattern)
    assert str(info.value).startswith(f"topic pattern {pattern!r}: ")


def test_a_trailing_backslash_is_refused_by_regcomp():
    with pytest.raises(ValueError, match="Trailing backslash"):
        check_topic_pattern("^t\\")


def test_every_refused_pattern_is_one_python_accepts_or_libc_refuses():
    """The checker never refuses a pattern both dialects read alike (spot check)."""
    import re

    for pattern in (r"^t\d+", r"^(?!x)t1", r"^t+?"):
        re.compile(pattern)  # Python reads these: that is why they need refusing
        with pytest.raises(ValueError):
            check_topic_pattern(pattern)


def test_non_patterns_are_refused():
    with pytest.raises(TypeError, match="topic must be a str"):
        check_topic_pattern(5)
    with pytest.raises(ValueError, match="starts with"):
        check_topic_pattern("t.*")
    with pytest.raises(ValueError, match="NUL"):
        check_topic_pattern("^t\0")


def test_the_consumer_checks_its_pattern_at_construction(tmp_path):
    with pytest.raises(ValueError, match=r"topic pattern '\^t\\\\d\+': \\d is not supported"):
        rdk.Consumer("127.0.0.1:1", r"^t\d+", None, group_id="g")
    with pytest.raises(ValueError, match=r"\(\?\.\.\.\) groups"):
        rdk.Consumer("127.0.0.1:1", r"^(?!x)t1", None, group_id="g")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        rdk.Consumer("127.0.0.1:1", "^t(", tmp_path, group_id="g")
