"""Query request headers the reference reads: response encoding flags and query tags.

`X-Svc-Response-Encoding-Flags` (alias `X-Loki-Response-Encoding-Flags`) is a comma
list of flags; `categorize-labels` changes how log results are encoded, and a log
result names every flag it was asked for in `data.encodingFlags`.
`X-Query-Tags` (`Source=grafana,Feature=beta`) is only logged: characters outside
the reference's safe set become `_`, and `key=value` pairs appear in the query log
line with lower-cased keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

ENCODING_FLAGS_HEADER = "X-Svc-Response-Encoding-Flags"
ENCODING_FLAGS_HEADER_ALIAS = "X-Loki-Response-Encoding-Flags"
QUERY_TAGS_HEADER = "X-Query-Tags"

_UNSAFE_TAG_CHARS = re.compile(r"[^a-zA-Z0-9\-=.@, ]+")


def encoding_flags(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The flags asked for, in order, without repeats (case-insensitive header lookup)."""
    raw = headers.get(ENCODING_FLAGS_HEADER) or headers.get(ENCODING_FLAGS_HEADER_ALIAS)
    if not raw:
        return ()
    return tuple(dict.fromkeys(raw.split(",")))


def with_encoding_flags(data: dict, flags: tuple[str, ...]) -> dict:
    """A log result's `data` with `encodingFlags` after `resultType`, as the reference writes it.

    Metric results never carry the flags."""
    if not flags or data.get("resultType") != "streams":
        return data
    out = {"resultType": data["resultType"], "encodingFlags": list(flags)}
    out.update((k, v) for k, v in data.items() if k != "resultType")
    return out


def query_tags(headers: Mapping[str, str]) -> str:
    """The X-Query-Tags value with unsafe characters replaced by `_`."""
    return _UNSAFE_TAG_CHARS.sub("_", headers.get(QUERY_TAGS_HEADER) or "")


def tag_pairs(tags: str) -> list[tuple[str, str]]:
    """`Source=foo,Feature=beta` -> [("source", "foo"), ("feature", "beta")].

    A token that does not split into exactly two non-empty parts on `=` is skipped."""
    pairs = []
    for token in filter(None, tags.split(",")):
        parts = [p for p in token.split("=") if p]
        if len(parts) == 2:
            pairs.append((parts[0].lower(), parts[1]))
    return pairs
