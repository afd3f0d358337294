"""A query's planning reads over a local socket (local_listener.py) instead of actor calls.

The reads are a query's facts from the ingesters: its read sizes and, when it reads little, its
rows (`Ingester.stats_and_rows`, a small query's one ingester round trip:
svclog/querier/prefetched.py), and the spans its data occupies. As actor calls they waited on Ray's
task submission, the ingester's task queue and two RPCs, legs that grew most when heavy selects
kept the ingester busy, and each submission held the gateway's GIL: four heavy queries arriving
together held up a light one for tens of milliseconds (docs/architecture.md, session 32).

The message is the pickled method name and arguments; only the methods named in `LOCAL_READS`
are served. The socket takes connections only with the key the ingester's actor call hands out
(local_listener.py), the trust an actor call has: pickles cross both ways, as Ray's do.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

# the reads a gateway on this node may send over the socket: a query's planning facts, small
LOCAL_READS = frozenset({"stats_and_rows", "stream_stats", "data_spans"})


def encode_read(method: str, args: tuple[Any, ...]) -> bytes:
    return pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL)


def decode_answer(body: bytes) -> Any:
    return pickle.loads(body)


def serve_reads(target: Any) -> Callable[[bytes], bytes]:
    """The listener's handler: runs the read the message names on `target` (the Ingester) and
    answers its pickled result; a method outside `LOCAL_READS` is refused."""

    def handle(message: bytes) -> bytes:
        method, args = pickle.loads(message)
        if method not in LOCAL_READS:
            raise ValueError(f"{method!r} is not a local read")
        return pickle.dumps(getattr(target, method)(*args), protocol=pickle.HIGHEST_PROTOCOL)

    return handle
