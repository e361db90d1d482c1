"""kafka-native's worker-slot rule: p % num_workers == worker_slot."""

from __future__ import annotations

import pytest

from rdk.slots import check_slot, owned_partitions


def test_slot_owns_partitions_congruent_to_it():
    assert owned_partitions(8, 3, 1) == [1, 4, 7]
    assert owned_partitions(5, 1, 0) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("count,workers", [(8, 4), (8, 8), (13, 5), (1, 1), (64, 7)])
def test_slots_are_disjoint_and_cover_every_partition(count, workers):
    owned = [owned_partitions(count, workers, s) for s in range(workers)]
    flat = [p for ps in owned for p in ps]
    assert sorted(flat) == list(range(count))  # covering, and no partition twice
    assert all(ps for ps in owned)


@pytest.mark.parametrize("workers,slot", [(4, 4), (4, -1), (1, 1), (0, 0), (-2, 0)])
def test_slot_out_of_range_is_a_value_error(workers, slot):
    with pytest.raises(ValueError, match=r"worker_slot|num_workers"):
        check_slot(workers, slot)


@pytest.mark.parametrize("workers,slot", [(2.0, 0), ("2", 0), (2, None), (True, 0)])
def test_non_integer_slots_are_type_errors(workers, slot):
    with pytest.raises(TypeError):
        check_slot(workers, slot)


def test_fewer_partitions_than_workers_names_both_counts():
    with pytest.raises(ValueError) as ei:
        owned_partitions(3, 4, 0, topic="events")
    text = str(ei.value)
    assert "3 partition" in text and "num_workers=4" in text and "'events'" in text


def test_owns_is_the_rule_owned_partitions_applies():
    from rdk.slots import owns

    for workers in (1, 3, 7):
        for slot in range(workers):
            assert [p for p in range(20) if owns(p, workers, slot)] == owned_partitions(20, workers, slot)
