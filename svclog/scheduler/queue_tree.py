"""`QueueNode`: one level of the hierarchical queue, with its own FIFO and round-robin over children.

A node's participants are its local FIFO (when non-empty) and each non-empty child; `active`
holds exactly those, in the order they joined. Each consumer group (the queriers of one node)
keeps its own round-robin order of them: the head is served next, then moves to the back of
that group's order only, and a participant that empties leaves every group's order (an emptied
child is dropped, as the reference does). So every group, not only all of them together, sees
each participant's turn come once per round: a node's queriers take equal shares of the actor
paths whatever the other nodes take. A single group is plain round-robin. Every operation
touches one node per level (and each group's order there), never the queued items.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

LOCAL = None  # the key of a node's own FIFO among the participants; children are keyed by name (a str)
Key = str | None


class QueueNode(Generic[T]):
    __slots__ = ("active", "children", "local", "name", "orders", "parent", "size")

    def __init__(self, name: str, parent: QueueNode[T] | None = None):
        self.name = name
        self.parent = parent
        self.local: OrderedDict[int, T] = OrderedDict()  # ticket -> item; O(1) removal for cancels
        self.children: dict[str, QueueNode[T]] = {}
        self.active: OrderedDict[Key, None] = OrderedDict()  # participants with work, in joining order
        self.orders: dict[str, OrderedDict[Key, None]] = {}  # consumer group -> its round-robin order
        self.size = 0  # items in this node and all its descendants

    def order(self, group: str) -> OrderedDict[Key, None]:
        """The group's round-robin order of the participants (a group new here starts in joining order)."""
        order = self.orders.get(group)
        if order is None:
            order = self.orders[group] = OrderedDict(self.active)
        return order

    def next_key(self, group: str) -> Key:
        """The participant the group serves next here (the node must have work)."""
        return next(iter(self.order(group)))

    def next_child(self, group: str, allowed: Callable[[str], bool]) -> str | None:
        """The first child in the group's order here that `allowed` accepts (None: none does)."""
        for key in self.order(group):
            if key is not LOCAL and allowed(key):
                return key
        return None

    def _join(self, key: Key) -> None:
        self.active[key] = None
        for order in self.orders.values():
            order[key] = None

    def _leave(self, key: Key) -> None:
        self.active.pop(key, None)
        for order in self.orders.values():
            order.pop(key, None)

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
            self._join(LOCAL)
        node: QueueNode[T] | None = self
        while node is not None:
            node.size += 1
            if node.size == 1 and node.parent is not None:
                node.parent._join(node.name)
            node = node.parent

    def pop(self, group: str = "", first: str | None = None) -> tuple[int, T, QueueNode[T]] | None:
        """Take the next item in `group`'s round-robin at every level below this node:
        (ticket, item, its node). `first`: the child to take it from here (its turn comes
        before the others' it skipped, which keep their places)."""
        if self.size == 0:
            return None
        node = self
        while True:
            key = node.next_key(group) if first is None or node is not self else first
            if key is LOCAL:
                ticket, item = node.local.popitem(last=False)
                break
            node = node.children[key]
        node._shrink()
        # the participant served at each level goes to the back of the group's order there
        served: QueueNode[T] | None = node
        while served is not None and served is not self:
            parent = served.parent
            assert parent is not None
            order = parent.order(group)
            if served.name in order:
                order.move_to_end(served.name)
            served = parent
        if node.local:
            node.order(group).move_to_end(LOCAL)
        return ticket, item, node

    def forget_group(self, group: str) -> None:
        """Drop a consumer group's orders (its queriers are gone) in this node and below."""
        self.orders.pop(group, None)
        for child in self.children.values():
            child.forget_group(group)

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
            self._leave(LOCAL)
        node: QueueNode[T] | None = self
        while node is not None:
            node.size -= 1
            parent = node.parent
            if node.size == 0 and parent is not None:
                parent._leave(node.name)
                del parent.children[node.name]
            node = parent

    def walk(self, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], QueueNode[T]]]:
        """Every node below (and including) this one with its path relative to this node."""
        yield prefix, self
        for name, child in self.children.items():
            yield from child.walk(prefix + (name,))
