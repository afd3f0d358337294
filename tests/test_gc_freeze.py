"""freeze_startup_heap: what exists at the call is left out of later collections, the rest is not."""

from __future__ import annotations

import gc

from svclog.actors.gc_freeze import freeze_startup_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_startup_objects_are_frozen_and_later_cycles_still_collected():
    startup = [Node()]
    try:
        assert freeze_startup_heap() > 0
        assert all(obj is not startup for obj in gc.get_objects())  # the collector no longer walks it
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after the freeze
        del a, b
        assert gc.collect() >= 2
    finally:
        gc.unfreeze()
    assert any(obj is startup for obj in gc.get_objects())
