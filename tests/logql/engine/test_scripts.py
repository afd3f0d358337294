"""Runs the script-style engine cases in scripts/*.test (format: script.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from svclog.logql import parser
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams, step_times
from svclog.logql.engine.result import MatrixResult, ScalarResult, StreamsResult, VectorResult
from svclog.model import Labels, SvcError
from tests.logql.engine.script import EvalCommand, LoadCommand, close, parse_script

SCRIPTS = sorted((Path(__file__).parent / "scripts").glob("*.test"))


def _cases():
    for path in SCRIPTS:
        source = None
        for cmd in parse_script(path.read_text()):
            if isinstance(cmd, LoadCommand):
                source = MemorySource(cmd.streams)
            else:
                yield pytest.param(source, cmd, id=f"{path.stem}:{cmd.line_no}")


def _params(cmd: EvalCommand) -> QueryParams:
    if cmd.kind in ("instant", "scalar"):
        return QueryParams.for_instant(cmd.time, cmd.limit, cmd.direction)
    return QueryParams.for_range(cmd.start, cmd.end, cmd.step, cmd.interval, cmd.limit, cmd.direction)


@pytest.mark.parametrize(("source", "cmd"), list(_cases()))
def test_script(source: MemorySource, cmd: EvalCommand) -> None:
    params = _params(cmd)
    if cmd.fail:
        with pytest.raises(SvcError) as info:
            evaluate(parser.parse(cmd.query), params, source or MemorySource())
        assert cmd.error in str(info.value)
        return
    result = evaluate(parser.parse(cmd.query), params, source or MemorySource())
    if cmd.kind == "scalar":
        assert isinstance(result, ScalarResult)
        assert close(result.value, cmd.scalar), f"{cmd.query}: got {result.value}"
    elif cmd.kind == "instant":
        _check_vector(cmd, result)
    elif cmd.kind == "range":
        _check_matrix(cmd, result, step_times(params))
    else:
        _check_streams(cmd, result)


def _check_vector(cmd: EvalCommand, result: object) -> None:
    assert isinstance(result, VectorResult), f"{cmd.query}: got {type(result).__name__}"
    got = [(s.labels, s.value) for s in result.samples]
    want = [(e.labels, e.values[0]) for e in cmd.expected]
    if not cmd.ordered:  # samples sharing a label set go by value
        got.sort(key=lambda x: (x[0], x[1]))
        want.sort(key=lambda x: (x[0], x[1]))
    assert [g[0] for g in got] == [w[0] for w in want], f"{cmd.query}: labels {got} != {want}"
    for (labels, g), (_, w) in zip(got, want):
        assert close(g, w), f"{cmd.query} {labels}: got {g}, want {w}"


def _check_matrix(cmd: EvalCommand, result: object, steps: np.ndarray) -> None:
    """A label set expected on several lines is one series holding each line's samples."""
    assert isinstance(result, MatrixResult), f"{cmd.query}: got {type(result).__name__}"
    got = {s.labels: sorted(zip(s.ts.tolist(), s.values.tolist())) for s in result.series}
    assert len(got) == len(result.series), f"{cmd.query}: a label set answers as two series"
    want: dict[Labels, list[tuple[int, float]]] = {}
    for exp in cmd.expected:
        assert len(exp.values) == len(steps), f"{cmd.query}: {len(exp.values)} values for {len(steps)} steps"
        samples = want.setdefault(exp.labels, [])
        samples.extend((int(t), v) for t, v in zip(steps.tolist(), exp.values) if v is not None)
    assert sorted(got) == sorted(want), f"{cmd.query}: series {sorted(got)} != {sorted(want)}"
    for labels, samples in want.items():
        samples.sort()
        times = [t for t, _ in got[labels]]
        assert times == [t for t, _ in samples], f"{cmd.query} {labels}: steps {got[labels]} != {samples}"
        for (t, g), (_, w) in zip(got[labels], samples):
            assert close(g, w), f"{cmd.query} {labels} @{t}: got {g}, want {w}"


def _check_streams(cmd: EvalCommand, result: object) -> None:
    assert isinstance(result, StreamsResult), f"{cmd.query}: got {type(result).__name__}"
    got = {s.labels: list(zip(s.ts.tolist(), s.texts())) for s in result.streams}
    want = {e.labels: e.entries for e in cmd.expected}
    assert got == want, f"{cmd.query}: got {got}"
