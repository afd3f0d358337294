"""Tokenisation, the Drain tree and pattern validity on realistic lines (no Ray)."""

from __future__ import annotations

from collections import defaultdict

from svclog.pattern import Drain, DrainSettings, tokenize
from svclog.pattern.tokens import render
from tests.pattern.matching import _fallback, unmatched


def mine(lines: list[str], **settings) -> tuple[Drain, dict[int, list[str]]]:
    drain = Drain(DrainSettings(**settings))
    counted: dict[int, list[str]] = defaultdict(list)
    for line in lines:
        counted[drain.train(tokenize(line)).id].append(line)
    return drain, counted


def assert_patterns_match(drain: Drain, counted: dict[int, list[str]]) -> None:
    for cluster in drain.clusters():
        assert unmatched(cluster.pattern, counted[cluster.id]) == [], cluster.pattern


def test_tokenize_keeps_separators_verbatim():
    line = 'ts=2026-11-01T00:00:01.5Z caller=cart.go:88  path=/api/v1/orders msg="a b"\n\tat x'
    tokens = tokenize(line)
    assert tokens.words == (
        "ts",
        "2026-11-01T00:00:01.5Z",
        "caller",
        "cart.go:88",
        "path",
        "api/v1/orders",
        "msg",
        "a",
        "b",
        "at",
        "x",
    )
    assert "".join(s + w for s, w in zip(tokens.seps, tokens.words)) + tokens.seps[-1] == line
    assert tokenize("2001:db8::1 10.0.0.1").words == ("2001:db8::1", "10.0.0.1")


def test_logfmt_lines_group_into_one_pattern():
    lines = [
        f'ts=2026-11-01T00:00:{s:02d}Z level={lvl} msg="order placed" user=u-{s} took={s}ms'
        for s, lvl in zip(range(40), ["info", "warn", "debug", "error"] * 10)
    ]
    drain, counted = mine(lines)
    assert [c.pattern for c in drain.clusters()] == ['ts=<_> level=<_> msg="order placed" user=<_> took=<_>']
    assert_patterns_match(drain, counted)


def test_different_messages_stay_apart():
    lines = [f"user u{i} logged in from 10.0.0.{i}" for i in range(20)]
    lines += [f"disk usage on /dev/sd{c} is {i}% full" for i, c in enumerate("abcdefgh")]
    lines += [f"GET /api/v1/orders/{i} 200 {i}ms" for i in range(20)]
    drain, counted = mine(lines)
    assert sorted(c.pattern for c in drain.clusters()) == [
        "GET /<_> 200 <_>",
        "disk usage on /<_> is <_> full",
        "user <_> logged in from <_>",
    ]
    assert_patterns_match(drain, counted)


def test_whitespace_and_multiline_survive():
    lines = [
        f"2026-11-01 00:00:{i:02d} UTC [{100 + i}] LOG:  duration: {i}.5 ms  statement: SELECT {i}" for i in range(10)
    ]
    lines += [f"job {i} failed: boom\n\tat a.B.run(B.java:{i})\n\tat a.C.go(C.java:{i + 1})" for i in range(10)]
    drain, counted = mine(lines)
    patterns = sorted(c.pattern for c in drain.clusters())
    assert "2026-11-01 <_> UTC [<_>] LOG:  duration: <_> ms  statement: SELECT <_>" in patterns
    assert "job <_> failed: boom\n\tat a.B.run(<_>)\n\tat a.C.go(<_>)" in patterns
    assert_patterns_match(drain, counted)


def test_render_never_emits_capture_like_literals_or_adjacent_wildcards():
    drain, counted = mine(["value <id> is <_> ok a:", "value <id> is <_> ok b:"])
    (cluster,) = drain.clusters()
    assert cluster.pattern == "value <_> is <_> ok <_>"
    assert "<_><_>" not in cluster.pattern
    assert_patterns_match(drain, counted)
    assert render([None, "x"], ("", "=", "")) == "<_>=x"


def test_max_clusters_evicts_least_recently_used():
    lines = [f"event{i} happened" for i in range(10)] + ["event0 happened"]
    drain, _ = mine(lines, max_clusters=3, similarity=0.9)
    assert len(drain) == 3
    assert drain.evicted == 8
    assert {c.pattern for c in drain.clusters()} == {"event8 happened", "event9 happened", "event0 happened"}


def test_fallback_matcher_agrees_with_reference_semantics():
    assert _fallback("<_> bar", "foo bar")
    assert not _fallback("<_> bar", "foo bar baz")
    assert _fallback("foo <_>", "foo bar baz")
    assert not _fallback("<_> bar <_>", " bar ")
    assert _fallback("<_>bar<_>", " bar ")


def test_lines_without_words_cluster_by_their_text():
    lines = ["}", "***", "{}", "   ", "}", "order 1 placed", "order 2 placed", "***"]
    drain, counted = mine(lines)
    assert sorted((c.pattern, c.size) for c in drain.clusters()) == [
        ("   ", 1),
        ("***", 2),
        ("order <_> placed", 2),
        ("{}", 1),
        ("}", 2),
    ]
    assert_patterns_match(drain, counted)
