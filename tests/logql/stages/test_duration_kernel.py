"""Durations read in numpy (one number, one unit) equal Go's time.ParseDuration, errors included."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from svclog.gocompat.durations import parse_go_duration
from svclog.logql.stages import convert

EDGES = [
    "5ms",
    "1.5s",
    "0",
    "-3m",
    "+2h",
    ".5s",
    "5.s",
    ".s",
    "",
    "1h30m",
    "µs",
    "3µs",
    "3μs",
    "12.345678901234567s",
    "999999999999999h",
    "2562047h",
    "2562048h",
    "1e3s",
    "-0.0s",
    "0.000000001ns",
    "1.0000000000000001h",
    "1٣ms",
    " 5ms",
    "5ms ",
    "5MS",
    "0.1h",
    "-.1us",
    "123456789012345.123456789012345ms",
    None,
    "s",
    "+-1s",
    "1..2s",
    "1 s",
    "é5s",
    "100.0ms",
]


def _random_durations(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        whole = rnd.choice(["", str(rnd.randrange(10 ** rnd.randrange(1, 17)))])
        frac = rnd.choice([None, "", str(rnd.randrange(10 ** rnd.randrange(1, 17))).zfill(rnd.randrange(1, 17))])
        unit = rnd.choice(["ns", "us", "µs", "μs", "ms", "s", "m", "h", "x", ""])
        out.append(rnd.choice(["", "-", "+"]) + whole + ("" if frac is None else "." + frac) + unit)
    return out


def _go(text: str | None, scale) -> tuple[float | None, str | None]:
    if text is None:
        return None, None
    try:
        return scale(parse_go_duration(text)), None
    except ValueError as err:
        return None, str(err)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "parse, scale", [(convert.parse_duration_ns_values, float), (convert.parse_duration_values, lambda ns: ns / 1e9)]
)
def test_numpy_durations_equal_go(seed, parse, scale):
    texts = EDGES + _random_durations(seed, 1500)
    arr = pa.array(texts, pa.string())
    for array, expected in ((arr, texts), (arr.slice(5, 700), texts[5:705])):  # offsets into shared buffers too
        values, errors = parse(array)
        assert list(zip(values.to_pylist(), errors.to_pylist())) == [_go(t, scale) for t in expected]


def test_simple_forms_are_read_without_the_exact_parser():
    ns, read = convert._simple_durations_ns(pa.array(["12.5ms", "3s", "1h30m", "0", "-2µs", None]))
    assert read.tolist() == [True, True, False, False, True, False]
    assert ns[read].tolist() == [12_500_000, 3_000_000_000, -2_000]
