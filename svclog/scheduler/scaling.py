"""`QuerierScaling`: how many queriers the scheduler's load asks for (the read group's autoscaling).

Queriers pull sub-queries from the scheduler, so no request router sees their load: the signal is
the scheduler's own, the sub-queries queued plus running. As Serve autoscales a deployment on
requests in flight per replica, this asks for `ceil(load / target_per_querier)` queriers (averaged
over `look_back_s`), within [min, max], and moves only after the wish has held for
`upscale_delay_s` (up) or `downscale_delay_s` (down), so a burst or a lull does not flap the count.
Pure: the host (svclog/actors/querier_scaler.py) feeds it samples and creates or drains queriers.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ScalingSettings:
    min_queriers: int
    max_queriers: int
    target_per_querier: float  # sub-queries (queued + running) one querier should carry: its pull slots
    upscale_delay_s: float = 10.0
    downscale_delay_s: float = 300.0
    look_back_s: float = 10.0

    def __post_init__(self) -> None:
        if self.min_queriers < 1 or self.max_queriers < self.min_queriers:
            raise ValueError(f"querier scaling needs 1 <= min ({self.min_queriers}) <= max ({self.max_queriers})")
        if self.target_per_querier <= 0:
            raise ValueError("target_per_querier must be positive")


class QuerierScaling:
    def __init__(self, settings: ScalingSettings, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self._clock = clock
        self._samples: deque[tuple[float, float]] = deque()
        self._wish_since: float | None = None  # when the current wish (up or down) began
        self._wish_up: bool | None = None

    def observe(self, load: float) -> None:
        """One sample of the scheduler's load: sub-queries queued plus running, now."""
        now = self._clock()
        self._samples.append((now, max(0.0, float(load))))
        while self._samples and self._samples[0][0] < now - self.settings.look_back_s:
            self._samples.popleft()

    def average_load(self) -> float:
        return sum(load for _, load in self._samples) / len(self._samples) if self._samples else 0.0

    def wanted(self) -> int:
        """What the averaged load asks for, before any delay."""
        s = self.settings
        return min(s.max_queriers, max(s.min_queriers, math.ceil(self.average_load() / s.target_per_querier)))

    def desired(self, current: int) -> int:
        """The querier count to run now, given `current`: a change only once its wish has lasted its delay."""
        want = self.wanted()
        if want == current:
            self._wish_since = self._wish_up = None
            return current
        up = want > current
        now = self._clock()
        if self._wish_up is not up or self._wish_since is None:
            self._wish_up, self._wish_since = up, now
        delay = self.settings.upscale_delay_s if up else self.settings.downscale_delay_s
        if now - self._wish_since >= delay:
            self._wish_since = self._wish_up = None
            return want
        return current
