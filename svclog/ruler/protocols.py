"""What the ruler needs from the rest of the system, as small protocols.

The actor layer supplies Ray-backed implementations; tests supply plain objects.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from svclog.model import Labels

Sample = tuple[dict[str, str], float]


class InstantQuerier(Protocol):
    def instant(self, tenant: str, query: str, at_ns: int) -> list[Sample]:
        """The instant vector of a LogQL metric query at `at_ns` (a scalar is one sample, no labels)."""
        ...


class AlertSender(Protocol):
    def send(self, tenant: str, alerts: list[dict]) -> None:
        """Deliver Alertmanager v2 `postableAlert` objects; raises on failure."""
        ...


class SampleWriter(Protocol):
    def write(self, tenant: str, samples: list[tuple[Labels, float, int]]) -> None:
        """Deliver recorded samples `(series labels incl. __name__, value, ts_ns)`; raises on failure."""
        ...


def _value(text: str | float) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    specials = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}
    return specials[text] if text in specials else float(text)


def vector_from_query_data(data: dict) -> list[Sample]:
    """Samples from a querier answer `{"resultType": "vector"|"scalar", "result": ...}`."""
    kind = data.get("resultType")
    result: Any = data.get("result")  # JSON: a [ts, value] pair or a list of samples
    if kind == "scalar":
        return [({}, _value(result[1]))]
    if kind == "vector":
        return [(dict(item["metric"]), _value(item["value"][1])) for item in result]
    raise ValueError(f"rule query returned {kind!r}, want a vector or a scalar")
