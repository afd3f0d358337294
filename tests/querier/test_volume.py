"""volumes(): the step guard before any allocation, and volume_max_series enforcement."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from svclog.model import NS, Labels, LimitError, Matcher, MatchType, ValidationError
from svclog.querier.volume import VolumeRequest, cap_volume_series, volume_fetch_limit, volumes

APP = (Matcher("app", MatchType.RE, ".+"),)


class Source:
    def __init__(self, *apps: str):
        self.blocks = [
            SimpleNamespace(
                labels=Labels({"app": app}.items()), line=pa.array(["x" * (i + 1)]), ts=pa.array([5 * NS], pa.int64())
            )
            for i, app in enumerate(apps)
        ]

    def select_logs(self, request):
        return iter(self.blocks)


def test_step_count_is_checked_before_allocating():
    # start=0, step=1ns over 2023: ~1.7e18 steps would be a MemoryError (or 14 GB) without the guard
    with pytest.raises(ValidationError, match="11,000 points"):
        volumes(Source("a"), VolumeRequest(APP, 0, 1_700_000_000 * NS, step=1))
    with pytest.raises(ValidationError):
        volumes(Source("a"), VolumeRequest(APP, 0, 10 * NS, step=0))


def test_eleven_thousand_points_still_answer():
    data = volumes(Source("a"), VolumeRequest(APP, 0, 11_000 * NS, step=NS))
    assert data["resultType"] == "matrix" and data["result"][0]["values"] == [[5, "1"]]


def test_max_series_is_an_error_past_the_limit_and_limit_cuts():
    data = volumes(Source("a", "b", "c"), VolumeRequest(APP, 0, 10 * NS, limit=volume_fetch_limit(1, 3)))
    assert [r["metric"]["app"] for r in cap_volume_series(data, 1, 3)["result"]] == ["c"]
    data = volumes(Source("a", "b", "c"), VolumeRequest(APP, 0, 10 * NS, limit=volume_fetch_limit(100, 2)))
    with pytest.raises(LimitError, match=r"max number of series limit \(limit: 2 series\)"):
        cap_volume_series(data, 100, 2)
