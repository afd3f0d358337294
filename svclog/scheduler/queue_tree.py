"""`QueueNode`: one level of the hierarchical queue, with its own FIFO and round-robin over children.

A node's participants are its local FIFO (when non-empty) and each non-empty child. `turns`
holds exactly those participants in round-robin order: the head is served next, then moves to
the back if it still has work, or leaves (an emptied child is dropped, as the reference does).
Every operation touches one node per level, so its cost is O(depth), never O(queue length).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

LOCAL = None  # the key of a node's own FIFO in `turns`; children are keyed by name (a str)


class QueueNode(Generic[T]):
    __slots__ = ("children", "local", "name", "parent", "size", "turns")

    def __init__(self, name: str, parent: QueueNode[T] | None = None):
        self.name = name
        self.parent = parent
        self.local: OrderedDict[int, T] = OrderedDict()  # ticket -> item; O(1) removal for cancels
        self.children: dict[str, QueueNode[T]] = {}
        self.turns: OrderedDict[str | None, None] = OrderedDict()
        self.size = 0  # items in this node and all its descendants

    def child(self, name: str) -> QueueNode[T]:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = QueueNode(name, self)
        return node

    def descend(self, path: tuple[str, ...]) -> QueueNode[T]:
        node = self
        for name in path:
            node = node.child(name)
        return node

    def push(self, ticket: int, item: T, front: bool = False) -> None:
        """Add to this node's FIFO (at the front for a retried item) and activate the path to the root."""
        self.local[ticket] = item
        if front:
            self.local.move_to_end(ticket, last=False)
        if len(self.local) == 1:
            self.turns[LOCAL] = None
        node: QueueNode[T] | None = self
        while node is not None:
            node.size += 1
            if node.size == 1 and node.parent is not None:
                node.parent.turns[node.name] = None
            node = node.parent

    def pop(self) -> tuple[int, T, QueueNode[T]] | None:
        """Take the next item by round-robin at every level below this node: (ticket, item, its node)."""
        if self.size == 0:
            return None
        node = self
        while True:
            key = next(iter(node.turns))
            if key is LOCAL:
                ticket, item = node.local.popitem(last=False)
                break
            node = node.children[key]
        node._shrink()
        # the participant that was served at each level goes to the back of its parent's turns
        served: QueueNode[T] | None = node
        while served is not None and served is not self:
            parent = served.parent
            assert parent is not None
            if served.name in parent.turns:
                parent.turns.move_to_end(served.name)
            served = parent
        if node.local:
            node.turns.move_to_end(LOCAL)
        return ticket, item, node

    def remove(self, ticket: int) -> bool:
        """Drop a queued ticket held in this node's FIFO (a cancel); False if it is not here."""
        if ticket not in self.local:
            return False
        del self.local[ticket]
        self._shrink()
        return True

    def _shrink(self) -> None:
        """Account for one item leaving this node's FIFO; deactivate what became empty."""
        if not self.local:
            self.turns.pop(LOCAL, None)
        node: QueueNode[T] | None = self
        while node is not None:
            node.size -= 1
            parent = node.parent
            if node.size == 0 and parent is not None:
                parent.turns.pop(node.name, None)
                del parent.children[node.name]
            node = parent

    def walk(self, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], QueueNode[T]]]:
        """Every node below (and including) this one with its path relative to this node."""
        yield prefix, self
        for name, child in self.children.items():
            yield from child.walk(prefix + (name,))
