"""Partition locks: byte ranges of one lock file per topic (open-file-description locks)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rdk.errors import LockedError
from rdk.offsets import is_locked, lock_partitions


def test_one_lock_file_per_topic_whatever_the_partition_count(tmp_path):
    with lock_partitions(tmp_path, "big", range(0, 4096, 2)) as lock:
        assert lock.held
        assert sorted(os.listdir(tmp_path)) == [".big.lock"]
        assert is_locked(tmp_path, "big", 2048) and not is_locked(tmp_path, "big", 2049)
    assert not is_locked(tmp_path, "big", 2048)


def test_two_locks_in_one_process_exclude_each_other_on_shared_partitions_only(tmp_path):
    first = lock_partitions(tmp_path, "t", [0, 2, 4])
    try:
        with pytest.raises(LockedError, match=rf"partition 2 of topic 't'.*pid {os.getpid()}"):
            lock_partitions(tmp_path, "t", [1, 2])
        with lock_partitions(tmp_path, "t", [1, 3]):   # other partitions of the same file: fine
            assert is_locked(tmp_path, "t", 1) and is_locked(tmp_path, "t", 0)
        assert not is_locked(tmp_path, "t", 1)         # the refused attempt holds nothing either
    finally:
        first.release()
    with lock_partitions(tmp_path, "t", [1, 2]):
        pass


def test_a_lock_held_by_another_process_is_refused_naming_its_pid_and_ends_with_it(tmp_path):
    code = ("import sys; from rdk.offsets import lock_partitions\n"
            f"l = lock_partitions({str(tmp_path)!r}, 't', [7, 9])\n"
            "print('locked', flush=True); sys.stdin.read()")
    with subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(LockedError, match=f"partition 9 .*pid {proc.pid}"):
            lock_partitions(tmp_path, "t", [8, 9])
        with lock_partitions(tmp_path, "t", [8]):
            pass
        proc.stdin.close()
        proc.wait(10)
    with lock_partitions(tmp_path, "t", [7, 9]):
        pass


def test_a_symlinked_lock_file_is_refused(tmp_path):
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / ".t.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Exception, match="lock file"):
        lock_partitions(tmp_path, "t", [0])


def test_is_locked_refuses_a_symlinked_lock_file_with_a_named_error(tmp_path):
    from rdk.errors import OffsetFileError
    from rdk.offsets import _locks

    lock_path = _locks._lock_file_path(tmp_path, "t")
    (tmp_path / "elsewhere").write_text("")
    os.symlink(tmp_path / "elsewhere", lock_path)
    with pytest.raises(OffsetFileError, match="symbolic link"):
        is_locked(tmp_path, "t", 0)
