"""PatternIngester: samples, step re-bucketing, aggregation across streams, tenants, limits (no Ray)."""

from __future__ import annotations

import pytest

from svclog.model import NS, Labels, Matcher, MatchType, StreamColumns, ValidationError
from svclog.pattern import DrainSettings, PatternIngester, PatternSettings
from tests.pattern.matching import unmatched

T0 = 1_793_491_200 * NS  # a multiple of every step used here


def stream(labels: dict[str, str], entries: list[tuple[int, str]]) -> StreamColumns:
    return StreamColumns(Labels.from_dict(labels), [t for t, _ in entries], [line for _, line in entries])


def eq(name: str, value: str) -> Matcher:
    return Matcher(name, MatchType.EQ, value)


def login(i: int) -> str:
    return f"user u{i} logged in from 10.0.0.{i}"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def test_samples_are_bucketed_by_interval_and_rebucketed_by_step():
    ing = PatternIngester(PatternSettings(sample_interval_ns=10 * NS))
    entries = [(T0 + s * NS, login(s)) for s in (0, 3, 9, 10, 25, 61, 119)]
    ing.push("t", [stream({"app": "a"}, entries)])

    (fine,) = ing.patterns("t", [eq("app", "a")], T0, T0 + 3600 * NS, 0)  # step below interval -> interval
    assert fine["pattern"] == "user <_> logged in from <_>"
    assert fine["samples"] == [
        [T0 // NS, 3],
        [T0 // NS + 10, 1],
        [T0 // NS + 20, 1],
        [T0 // NS + 60, 1],
        [T0 // NS + 110, 1],
    ]
    (minute,) = ing.patterns("t", [eq("app", "a")], T0, T0 + 3600 * NS, 60 * NS)
    assert minute["samples"] == [[T0 // NS, 5], [T0 // NS + 60, 2]]
    # only buckets overlapping [start, end)
    (part,) = ing.patterns("t", [eq("app", "a")], T0 + 15 * NS, T0 + 60 * NS, 10 * NS)
    assert part["samples"] == [[T0 // NS + 10, 1], [T0 // NS + 20, 1]]
    assert ing.patterns("t", [eq("app", "a")], T0 + 200 * NS, T0 + 300 * NS, 10 * NS) == []


def test_aggregates_across_streams_and_sorts_by_total():
    ing = PatternIngester()
    a = [(T0 + i * NS, login(i)) for i in range(5)] + [(T0, "disk sda is 1% full")]
    b = [(T0 + i * NS, login(i + 5)) for i in range(5)] + [(T0 + i * NS, f"cache miss key=k{i}") for i in range(7)]
    ing.push("t", [stream({"app": "a", "env": "prod"}, a), stream({"app": "b", "env": "prod"}, b)])
    out = ing.patterns("t", [eq("env", "prod")], T0, T0 + 60 * NS, 60 * NS)
    assert [(p["pattern"], p["samples"]) for p in out] == [
        ("user <_> logged in from <_>", [[T0 // NS, 10]]),
        ("cache miss key=<_>", [[T0 // NS, 7]]),
        ("disk sda is 1% full", [[T0 // NS, 1]]),
    ]
    only_a = ing.patterns("t", [eq("app", "a")], T0, T0 + 60 * NS, 60 * NS)
    assert [p["samples"][0][1] for p in only_a] == [5, 1]


def test_returned_patterns_match_the_lines_they_counted():
    lines = [login(i) for i in range(30)] + [f"GET /api/v1/orders/{i} 200 {i}ms" for i in range(30)]
    ing = PatternIngester()
    ing.push("t", [stream({"app": "a"}, [(T0 + i * NS, line) for i, line in enumerate(lines)])])
    out = ing.patterns("t", [eq("app", "a")], T0, T0 + 3600 * NS, 3600 * NS)
    assert sum(p["samples"][0][1] for p in out) == len(lines)
    for p in out:
        assert len(lines) - len(unmatched(p["pattern"], lines)) == p["samples"][0][1]


def test_tenants_are_isolated():
    ing = PatternIngester()
    ing.push("acme", [stream({"app": "a"}, [(T0, "secret acme line")])])
    ing.push("globex", [stream({"app": "a"}, [(T0, "globex line")])])
    assert [p["pattern"] for p in ing.patterns("acme", [eq("app", "a")], T0, T0 + NS, 0)] == ["secret acme line"]
    assert [p["pattern"] for p in ing.patterns("globex", [eq("app", "a")], T0, T0 + NS, 0)] == ["globex line"]
    assert ing.patterns("initech", [eq("app", "a")], T0, T0 + NS, 0) == []


def test_long_and_empty_lines_are_skipped():
    ing = PatternIngester(PatternSettings(max_line_length=20))
    counted = ing.push("t", [stream({"app": "a"}, [(T0, "short line"), (T0, "x" * 21), (T0, "")])])
    assert counted == 1
    assert ing.stats()["skipped_lines"] == 2


def test_wordless_lines_are_skipped_without_losing_the_push():
    ing = PatternIngester()
    lines = ["}", "***", "{}", "   ", "job 1 done", "job 2 done"]
    counted = ing.push("t", [stream({"app": "a"}, [(T0, line) for line in lines])])
    assert counted == 2
    assert ing.stats()["skipped_lines"] == 4
    out = ing.patterns("t", [eq("app", "a")], T0, T0 + NS, 0)
    assert [(p["pattern"], p["samples"][0][1]) for p in out] == [("job <_> done", 2)]


def test_patterns_per_stream_are_limited():
    ing = PatternIngester(PatternSettings(drain=DrainSettings(max_clusters=5, similarity=0.9)))
    ing.push("t", [stream({"app": "a"}, [(T0 + i, f"event{i} at node{i}") for i in range(50)])])
    assert len(ing.patterns("t", [eq("app", "a")], T0, T0 + NS, 0)) == 5
    assert ing.stats()["evicted_clusters"] == 45


def test_retention_follows_the_stream_and_idle_streams_are_dropped():
    clock = Clock()
    ing = PatternIngester(PatternSettings(retain_for_ns=3600 * NS), clock=clock)
    ing.push("t", [stream({"app": "a"}, [(T0, "old one")])])
    ing.push("t", [stream({"app": "a"}, [(T0 + 2 * 3600 * NS, "new one"), (T0 + 60 * NS, "too old")])])
    out = ing.patterns("t", [eq("app", "a")], T0, T0 + 3 * 3600 * NS, 0)
    assert [p["pattern"] for p in out] == ["new one"]
    clock.now += 3601 * NS
    assert ing.drop_idle() == 1
    assert ing.patterns("t", [eq("app", "a")], T0, T0 + 3 * 3600 * NS, 0) == []


def test_end_before_start_is_rejected():
    with pytest.raises(ValidationError):
        PatternIngester().patterns("t", [], T0 + NS, T0, 0)
