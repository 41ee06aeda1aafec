"""gc_paused: the cyclic collector is off inside, and what was built lands in the oldest generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from topology._speed import gc_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    # A TUI test earlier in the same process leaves its model frozen (tui.app freezes what it
    # loads): hand those objects back to the oldest generation so each test starts with none.
    gc.unfreeze()
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _ids(generation: int) -> set[int]:
    return {id(o) for o in gc.get_objects(generation=generation)}


def test_off_inside_restored_after_and_nesting_is_safe(collector_on: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost pause turns it back on
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_what_the_pause_built_skips_the_young_generations(collector_on: None) -> None:
    assert gc.get_freeze_count() == 0
    with gc_paused():
        built = [[i] for i in range(2000)]  # lists: tracked by the collector
    assert gc.isenabled()
    gc.disable()  # hold every object where the pause left it while we look
    young = _ids(0) | _ids(1)
    assert not any(id(x) in young for x in built)
    assert all(id(x) in _ids(2) for x in built[:50])
    assert gc.get_freeze_count() == 0


def test_someone_elses_freeze_is_left_as_it_was(collector_on: None) -> None:
    kept = [[i] for i in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        with gc_paused():
            built = [[i] for i in range(100)]
        gc.disable()
        # Not unfrozen by the pause (that would leave 0, or only what it built). Frozen objects
        # that died meanwhile leave the count (threads of earlier tests finish in the background).
        assert len(kept) <= gc.get_freeze_count() <= frozen
        assert any(id(x) in _ids(0) for x in built)  # the plain path: young as usual
    finally:
        gc.unfreeze()
