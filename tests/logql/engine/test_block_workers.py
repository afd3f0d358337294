"""Per-block work on helper threads: results in the blocks' order, errors where they happened."""

from __future__ import annotations

import threading
import time

import pytest

from svclog.logql.engine import block_workers
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.model import NS, Labels


def _slow_square(item: int) -> tuple[int, str]:
    time.sleep(0.002 * (item % 3))  # later items often finish first
    return item * item, threading.current_thread().name


def test_results_come_in_order_and_helpers_do_the_work():
    out = list(block_workers.in_order(range(40), _slow_square))
    assert [value for value, _ in out] == [i * i for i in range(40)]
    assert any(name.startswith("block-worker") for _, name in out)


def test_without_an_idle_helper_the_work_runs_inline():
    taken = 0
    while block_workers._idle.acquire(blocking=False):
        taken += 1
    try:
        out = list(block_workers.in_order(range(10), _slow_square))
    finally:
        for _ in range(taken):
            block_workers._idle.release()
    assert [value for value, _ in out] == [i * i for i in range(10)]
    assert {name for _, name in out} == {threading.current_thread().name}


def test_an_error_surfaces_after_the_earlier_results_and_frees_the_helpers():
    def work(item: int) -> int:
        if item == 5:
            raise ValueError("block 5")
        return item

    seen = []
    with pytest.raises(ValueError, match="block 5"):
        for value in block_workers.in_order(range(20), work):
            seen.append(value)
    assert seen == [0, 1, 2, 3, 4]
    acquired, deadline = 0, time.monotonic() + 5
    while acquired < block_workers.HELPERS and time.monotonic() < deadline:  # queued items finish, slots return
        acquired += block_workers._idle.acquire(timeout=0.05)
    for _ in range(acquired):
        block_workers._idle.release()
    assert acquired == block_workers.HELPERS


def test_items_are_taken_at_most_a_few_ahead_of_the_result_being_used():
    taken = []

    def items():
        for i in range(30):
            taken.append(i)
            yield i

    for value in block_workers.in_order(items(), lambda i: i):
        assert len(taken) - value <= block_workers.AHEAD + 1


@pytest.mark.parametrize(
    ("query", "helped"),
    [
        ('sum by (level) (count_over_time({env=~".+"}[1m]))', False),
        ('sum by (app) (rate({env="prod"} |= "error" [5m]))', False),
        ('topk(5, sum by (pod) (bytes_over_time({env=~".+"} |~ "a.c" [5m])))', False),
        ('sum by (app) (count_over_time({env="prod"} | logfmt | duration > 100ms [1m]))', True),
        ('sum by (app) (count_over_time({env="prod"} | json | level="error" [1m]))', True),
        ('sum by (app) (sum_over_time({env="prod"} | unwrap size [1m]))', True),
    ],
)
def test_only_parser_or_unwrap_blocks_go_to_helpers(monkeypatch, query, helped):
    """A block's work without a parser or unwrap is a few short calls: it stays on the query's
    thread (handing it over cost more CPU than it saved); the answer is the same either way."""
    streams = {
        Labels.from_dict({"env": "prod", "app": "a", "level": "info", "pod": "p"}): [
            (i * NS, f'level=info duration={i}ms size={i} msg="abc"') for i in range(200)
        ]
    }
    params = QueryParams(start=0, end=300 * NS, step=60 * NS)
    calls = []
    real = block_workers.in_order

    def recording(items, work):
        calls.append(query)
        return real(items, work)

    monkeypatch.setattr(block_workers, "in_order", recording)
    answer = result_to_json(evaluate(parse(query), params, MemorySource(streams)))
    assert bool(calls) is helped
    monkeypatch.setattr(block_workers, "in_order", lambda items, work: (work(item) for item in items))
    assert result_to_json(evaluate(parse(query), params, MemorySource(streams))) == answer
