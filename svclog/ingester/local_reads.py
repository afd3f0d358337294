"""A small query's planning read over a local socket (local_listener.py) instead of an actor call.

The read (`Ingester.stats_and_rows`: a query's read sizes and, when it reads little, its rows) is
the one ingester round trip of a small query (svclog/querier/prefetched.py). As an actor call it
waits on Ray's task submission, the ingester's task queue and two RPCs, legs that grew most when
heavy selects kept the ingester busy (docs/architecture.md, sessions 30-32).

The message is the pickled method name and arguments; only the methods named in `LOCAL_READS`
are served. The socket takes connections only with the key the ingester's actor call hands out
(local_listener.py), the trust an actor call has: pickles cross both ways, as Ray's do.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

# the reads a gateway on this node may send over the socket: small, bounded by the query's deadline
LOCAL_READS = frozenset({"stats_and_rows"})


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
