"""QuerierScaling: the querier count follows the scheduler's load, with Serve-like delays."""

import pytest

from svclog.scheduler.scaling import QuerierScaling, ScalingSettings


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(clock, **overrides) -> QuerierScaling:
    settings = {
        "min_queriers": 2,
        "max_queriers": 6,
        "target_per_querier": 4,
        "upscale_delay_s": 5,
        "downscale_delay_s": 20,
        "look_back_s": 3,
    }
    settings.update(overrides)
    return QuerierScaling(ScalingSettings(**settings), clock=clock)


def run(scaling: QuerierScaling, clock: Clock, load: float, seconds: int, current: int) -> list[int]:
    """One sample and one decision a second; the count as a host following every decision would run."""
    counts = []
    for _ in range(seconds):
        clock.now += 1
        scaling.observe(load)
        current = scaling.desired(current)
        counts.append(current)
    return counts


def test_grows_after_the_upscale_delay_to_what_the_load_asks_for():
    clock = Clock()
    scaling = make(clock)
    counts = run(scaling, clock, load=18, seconds=8, current=2)  # ceil(18 / 4) = 5
    assert counts[:5] == [2] * 5  # the wish (from the first sample on) has to last 5 s
    assert counts[5:] == [5, 5, 5]


def test_never_beyond_max_nor_below_min():
    clock = Clock()
    scaling = make(clock)
    assert run(scaling, clock, load=1000, seconds=6, current=2)[-1] == 6
    assert run(scaling, clock, load=0, seconds=25, current=6)[-1] == 2


def test_shrinks_only_after_the_longer_downscale_delay():
    clock = Clock()
    scaling = make(clock)
    counts = run(scaling, clock, load=0, seconds=25, current=5)
    assert set(counts[:20]) == {5}
    assert set(counts[20:]) == {2}


def test_a_short_burst_or_lull_does_not_move_the_count():
    clock = Clock()
    scaling = make(clock)
    current = 3
    for _ in range(10):  # a second of heavy load, a second of none, the steady load between
        current = run(scaling, clock, load=40, seconds=1, current=current)[-1]
        current = run(scaling, clock, load=10, seconds=5, current=current)[-1]
        current = run(scaling, clock, load=0, seconds=1, current=current)[-1]
        current = run(scaling, clock, load=10, seconds=5, current=current)[-1]
    assert current == 3


def test_load_is_averaged_over_the_look_back_window():
    clock = Clock()
    scaling = make(clock, look_back_s=4)
    for load in (0, 0, 0, 16):
        clock.now += 1
        scaling.observe(load)
    assert scaling.average_load() == 4.0
    assert scaling.wanted() == 2  # ceil(4 / 4) = 1, raised to min
    clock.now += 10
    scaling.observe(16)  # the old samples left the window
    assert scaling.average_load() == 16.0 and scaling.wanted() == 4


@pytest.mark.parametrize("bad", [{"min_queriers": 0}, {"max_queriers": 1}, {"target_per_querier": 0}])
def test_settings_are_checked(bad):
    with pytest.raises(ValueError):
        make(Clock(), **bad)
