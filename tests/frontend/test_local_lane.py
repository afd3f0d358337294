"""LocalLane: which queries the frontend runs in its own process."""

from svclog.frontend.local_lane import LocalLane


def test_a_query_reading_little_takes_a_seat_until_it_leaves() -> None:
    lane = LocalLane(slots=2)
    assert lane.take("a", read_bytes=1000, max_bytes=1000)
    assert lane.seated() == 1
    lane.leave("a")
    assert lane.seated() == 0
    assert lane.taken == 1


def test_a_query_over_the_limit_or_of_unknown_size_gets_no_seat() -> None:
    lane = LocalLane(slots=2)
    assert not lane.take("a", read_bytes=1001, max_bytes=1000)
    assert not lane.take("a", read_bytes=None, max_bytes=1000)
    assert not lane.take("a", read_bytes=0, max_bytes=0)  # 0: the lane is off for the tenant
    assert lane.seated() == 0 and lane.taken == 0


def test_one_seat_per_tenant_and_no_more_than_the_slots() -> None:
    lane = LocalLane(slots=2)
    assert lane.take("a", 10, 100)
    assert not lane.take("a", 10, 100)  # a's second small query goes to the queriers
    assert lane.take("b", 10, 100)
    assert not lane.take("c", 10, 100)  # every seat taken
    lane.leave("a")
    assert lane.take("c", 10, 100)
    assert lane.seated() == 2


def test_no_slots_means_no_lane() -> None:
    assert not LocalLane(slots=0).take("a", 1, 100)
