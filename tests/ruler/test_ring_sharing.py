"""Several rulers over one shared ring: each group is evaluated exactly once per slot, and a
ruler's groups move to the others when it leaves the ring or stops heartbeating."""

import dataclasses
from collections import defaultdict

from svclog.model import NS
from svclog.ring.ring import Ring
from svclog.ruler.api import RulesAPI
from svclog.ruler.ruler import Ruler, RulerSettings
from svclog.ruler.sharding import healthy_ring, owner_of

T0 = 1_800_000_000 * NS
GROUPS = [(tenant, f"ns{i % 3}", f"g{i}") for i, tenant in enumerate(["t1", "t2"] * 15)]


def _body(name: str) -> str:
    return (
        f"name: {name}\ninterval: 1m\nrules:\n  - record: {name}:lines\n"
        f'    expr: sum(count_over_time({{group="{name}"}}[5m]))\n'
    )


class Recorder:
    """The querier of every ruler: who evaluated which group for which slot."""

    def __init__(self):
        self.evaluations: list[tuple[str, str, int]] = []  # (ruler, group, at_ns)

    def for_ruler(self, ruler_id: str):
        outer = self

        class Querier:
            def instant(self, tenant, query, at_ns):
                group = query.split('group="', 1)[1].split('"', 1)[0]
                outer.evaluations.append((ruler_id, group, at_ns))
                return [({}, 1.0)]

        return Querier()


def _setup(rule_store, ids):
    api = RulesAPI(rule_store)
    for tenant, namespace, name in GROUPS:
        api.set_group(tenant, namespace, _body(name))
    ring = Ring(heartbeat_timeout_ns=60 * NS)
    for member in ids:
        ring.register(member, member, node=member, num_tokens=128)
    recorder = Recorder()
    settings = RulerSettings(poll_interval_ns=600 * NS, ring_check_interval_ns=5 * NS)
    rulers = {
        m: Ruler(
            rule_store,
            recorder.for_ruler(m),
            dataclasses.replace(settings, instance_id=m),
            ring=lambda: healthy_ring(ring),
        )
        for m in ids
    }
    return ring, rulers, recorder


def _run(rulers, start_s: int, end_s: int) -> None:
    for second in range(start_s, end_s):
        for ruler in rulers.values():
            ruler.tick(T0 + second * NS)


def _by_slot(recorder, since_ns: int = 0) -> dict[tuple[str, int], list[str]]:
    slots = defaultdict(list)
    for ruler_id, group, at in recorder.evaluations:
        if at >= since_ns:
            slots[(group, at)].append(ruler_id)
    return slots


def test_each_group_is_evaluated_exactly_once_and_moves_when_its_ruler_leaves(rule_store):
    ring, rulers, recorder = _setup(rule_store, ["r0", "r1", "r2"])
    _run(rulers, 0, 180)
    slots = _by_slot(recorder)
    assert all(len(who) == 1 for who in slots.values()), "a slot was evaluated twice"
    groups = {name for _, _, name in GROUPS}
    assert {group for group, _ in slots} == groups
    assert all(sum(1 for g, _ in slots if g == name) == 3 for name in groups)  # one per minute
    owner = {group: who[0] for (group, _), who in slots.items()}
    assert set(owner.values()) == {"r0", "r1", "r2"}  # the work is shared
    assert owner == {name: owner_of(ring, tenant, ns, name) for tenant, ns, name in GROUPS}
    moving = {group for group, ruler_id in owner.items() if ruler_id == "r1"}

    ring.forget("r1")  # r1 leaves the ring (it keeps ticking: it must stop evaluating on its own)
    left_at = len(recorder.evaluations)
    _run(rulers, 180, 360)
    after = _by_slot(recorder, T0 + 186 * NS)  # the rulers look at the ring every 5 s
    assert all(len(who) == 1 for who in after.values()), "a slot was evaluated twice after the change"
    assert {group for group, _ in after} == groups  # nothing was dropped
    new_owner = {group: who[0] for (group, _), who in after.items()}
    assert "r1" not in set(new_owner.values())
    assert {new_owner[g] for g in moving} <= {"r0", "r2"}
    assert all(new_owner[g] == owner[g] for g in groups - moving)  # only the leaver's groups moved
    assert not [e for e in recorder.evaluations[left_at:] if e[0] == "r1" and e[2] >= T0 + 186 * NS]

    stale = ring.members["r2"]  # r2 stops heartbeating: past the timeout r0 has everything
    ring.members["r2"] = dataclasses.replace(stale, heartbeat_ns=stale.heartbeat_ns - 120 * NS)
    _run(rulers, 360, 480)
    last = _by_slot(recorder, T0 + 366 * NS)
    assert {who[0] for who in last.values()} == {"r0"} and all(len(w) == 1 for w in last.values())
    assert {group for group, _ in last} == groups


def test_a_group_written_through_any_ruler_is_evaluated_by_its_owner(rule_store):
    ring, rulers, recorder = _setup(rule_store, ["r0", "r1"])
    _run(rulers, 0, 1)
    owner = owner_of(ring, "t9", "new", "fresh")
    writer = rulers["r1" if owner == "r0" else "r0"]  # the API call lands on the other ruler
    api = RulesAPI(rule_store, on_change=lambda tenant: [r.sync(T0 + NS, tenant) for r in rulers.values()])
    api.set_group("t9", "new", _body("fresh"))
    assert [g.group.name for g in writer.groups("t9")] == []
    assert [g.group.name for g in rulers[owner].groups("t9")] == ["fresh"]
    _run(rulers, 1, 121)
    assert {r for r, group, _ in recorder.evaluations if group == "fresh"} == {owner}
