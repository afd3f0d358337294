"""How a tail's messages are encoded, from its path and headers.

The v1 paths honour `X-Svc-Response-Encoding-Flags` (alias `X-Loki-Response-Encoding-Flags`):
with `categorize-labels` each entry carries its structured metadata and parsed labels as a
third element and the message names its flags in `encodingFlags`, as the reference's tail
does. The deprecated paths answer the legacy shape, which shows only the stream labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from svclog.ingester.tail import DroppedEntry, TailEntry, tail_message
from svclog.logql.engine.result import EntryLabels
from svclog.model import Labels
from svclog.querier.request import CATEGORIZE_LABELS
from svclog.serve.legacy import legacy_tail_message
from svclog.serve.query_headers import encoding_flags

LEGACY_TAIL_PATHS = ("/api/legacy/tail", "/api/prom/tail")  # answered in the legacy message shape

Encode = Callable[[list[TailEntry], list[DroppedEntry]], dict]


def tail_encoding(path: str, headers: Mapping[str, str]) -> tuple[Encode, bool]:
    """The message encoder for a tail, and whether its entries' labels are categorized."""
    flags = encoding_flags(headers)
    categorize = CATEGORIZE_LABELS in flags
    if path.endswith(LEGACY_TAIL_PATHS):  # categorized too, though only the stream labels show
        return partial(legacy_tail_message, categorize=categorize), categorize
    return partial(tail_message, flags=flags, categorize=categorize), categorize


def replayed_entry(stream: Mapping[str, str], value: Sequence) -> TailEntry:
    """A log query result's entry as a tail entry; a categorized one (`[ts, line, {...}]`)
    keeps its structured metadata and parsed labels apart from the stream's."""
    labels = Labels.from_dict(stream)
    if len(value) < 3:
        return TailEntry(labels, int(value[0]), value[1])
    extra = value[2]
    aside = EntryLabels(
        Labels.from_dict(extra.get("structuredMetadata", {})), Labels.from_dict(extra.get("parsed", {}))
    )
    return TailEntry(labels, int(value[0]), value[1], aside)
