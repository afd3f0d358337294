"""Response shape of the deprecated /api/legacy/query (and /api/prom/query) endpoint."""
from __future__ import annotations

from svclog.model import Labels, format_rfc3339


def legacy_query_body(data: dict) -> dict:
    """Convert a v1 `data` object to the legacy `{streams: [{labels, entries: [{ts, line}]}]}` form."""
    if data.get("resultType") != "streams":
        return data
    streams = []
    for stream in data.get("result", []):
        labels = str(Labels.from_dict(stream["stream"]))
        entries = [{"ts": format_rfc3339(int(ts)), "line": line} for ts, line, *_ in stream["values"]]
        streams.append({"labels": labels, "entries": entries})
    return {"streams": streams, "stats": data.get("stats", {})}
