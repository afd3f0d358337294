"""Query results as Parquet (Accept: application/vnd.svc.parquet or application/vnd.apache.parquet).

Columns as API.md lists them: streams -> timestamp (UTC timestamp, ns), labels
(map<string,string>), line; matrix and vector -> timestamp, labels, value (double).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET_TYPES = ("application/vnd.svc.parquet", "application/vnd.apache.parquet", "application/vnd.loki.parquet")
_LABELS = pa.map_(pa.string(), pa.string())
_TS = pa.timestamp("ns", tz="UTC")


def wants_parquet(accept: str | None) -> bool:
    return accept is not None and any(t in accept.lower() for t in PARQUET_TYPES)


def _value(text: str) -> float:
    return float({"+Inf": "inf", "-Inf": "-inf"}.get(text, text))


def result_table(data: dict) -> pa.Table:
    kind, result = data.get("resultType"), data.get("result", [])
    stamps, labels, payload = [], [], []
    if kind == "streams":
        for stream in result:
            pairs = list(stream["stream"].items())
            for ts, line, *_ in stream["values"]:
                stamps.append(int(ts))
                labels.append(pairs)
                payload.append(line)
        return pa.table(
            {
                "timestamp": pa.array(stamps, _TS),
                "labels": pa.array(labels, _LABELS),
                "line": pa.array(payload, pa.string()),
            }
        )
    if kind == "scalar":
        result = [{"metric": {}, "value": result}]
    for series in result:
        pairs = list(series["metric"].items())
        for t, v in series.get("values") or [series["value"]]:
            stamps.append(int(round(float(t) * 1e9)))
            labels.append(pairs)
            payload.append(_value(v))
    return pa.table(
        {
            "timestamp": pa.array(stamps, _TS),
            "labels": pa.array(labels, _LABELS),
            "value": pa.array(payload, pa.float64()),
        }
    )


def to_parquet(data: dict) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(result_table(data), sink, compression="zstd")
    return sink.getvalue().to_pybytes()
