"""A log query's windows after one that read nothing: a source that counts the lines it reads
(CountsLinesRead) and read none for a window (the token index ruled every chunk out) has the
rest of the range read in one select; one that scanned lines without a match grows 4x as before.
Answers never depend on the windows."""

from __future__ import annotations

import pytest

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.logql.source import CountsLinesRead
from svclog.model import NS, Labels

HOUR = 3600 * NS
NEEDLE = "7f3a9c0e5b2d4f6a8c1e3b5d7f9a0c2e"


class LinesReadSource:
    """A MemorySource that records each select's range and counts the lines it reads; `skips`
    stands for a token index: a select whose rows hold no line with the needle reads none."""

    def __init__(self, rows: dict[Labels, list[tuple[int, str]]], skips: bool):
        self.inner = MemorySource(rows)
        self.skips = skips
        self.ranges: list[tuple[int, int]] = []
        self.read = 0

    def select_logs(self, request):
        self.ranges.append((request.start, request.end))
        blocks = list(self.inner.select_logs(request))
        lines = [text for block in blocks for text in block.line.to_pylist()]
        if not self.skips or any(NEEDLE in text for text in lines):
            self.read += len(lines)
        return blocks

    def select_series(self, matchers, start, end):
        return self.inner.select_series(matchers, start, end)

    def lines_read(self) -> int:
        return self.read


def _rows(needle_at: int | None) -> dict[Labels, list[tuple[int, str]]]:
    """Two streams over the hour, one line a second each; the needle once, at `needle_at`."""
    rows: dict[Labels, list[tuple[int, str]]] = {}
    for pod in range(2):
        lines = []
        for second in range(0, 3600, 2):
            ts = second * NS + pod * NS
            lines.append((ts, f"trace_id={NEEDLE if ts == needle_at else f'{ts:032x}'} pod={pod}"))
        rows[Labels.from_dict({"app": "a", "pod": str(pod)})] = lines
    return rows


def _run(source, direction: str) -> list[tuple[int, str]]:
    params = QueryParams.for_range(0, HOUR, step=60 * NS, limit=100, direction=direction)
    result = evaluate(parse(f'{{app="a"}} |= "{NEEDLE}"'), params, source, max_series=500)
    return sorted((int(t), line) for s in result.streams for t, line in zip(s.ts, s.texts()))


def test_the_counting_source_is_recognised():
    assert isinstance(LinesReadSource({}, skips=True), CountsLinesRead)
    assert not isinstance(MemorySource({}), CountsLinesRead)


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_after_a_window_that_read_nothing_the_rest_is_one_select(direction):
    source = LinesReadSource(_rows(needle_at=None), skips=True)
    assert _run(source, direction) == []
    assert len(source.ranges) == 2, source.ranges  # the first 1/32 of the hour, then the rest
    covered = sorted(source.ranges)
    assert covered[0][0] == 0 and covered[-1][1] == HOUR and covered[0][1] == covered[1][0]


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_a_window_that_scanned_lines_without_a_match_grows_4x(direction):
    source = LinesReadSource(_rows(needle_at=None), skips=False)
    assert _run(source, direction) == []
    widths = [end - start for start, end in source.ranges]
    assert len(widths) == 4 and widths[1] == 4 * widths[0] and widths[2] == 4 * widths[1], widths


@pytest.mark.parametrize("direction", ["backward", "forward"])
@pytest.mark.parametrize("needle_at", [0, 1800 * NS + NS, 3598 * NS])
def test_answers_are_those_of_one_full_read(direction, needle_at):
    skipping = LinesReadSource(_rows(needle_at), skips=True)
    plain = MemorySource(_rows(needle_at))
    got = _run(skipping, direction)
    assert got == _run(plain, direction)
    assert [ts for ts, _ in got] == [needle_at]
