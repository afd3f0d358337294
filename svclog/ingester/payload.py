"""The wire form of a push batch from distributor to ingester: pickled columns, LZ4-compressed.

Compressed batches are usually small enough for Ray to pass inline in the task rather than
through the object store, and the ingester writes the same bytes to its WAL unchanged.
"""
from __future__ import annotations

import pickle
import struct

import pyarrow as pa

from svclog.model import Labels, StreamColumns

_CODEC = pa.Codec("lz4")
_SIZE = struct.Struct("<Q")


def encode_batch(tenant: str, streams: list[StreamColumns]) -> bytes:
    raw = pickle.dumps((tenant, [(s.labels.items, s.ts, s.lines, s.metadata) for s in streams]),
                       protocol=pickle.HIGHEST_PROTOCOL)
    return _SIZE.pack(len(raw)) + _CODEC.compress(raw, asbytes=True)


def decode_batch(payload: bytes) -> tuple[str, list[StreamColumns]]:
    (size,) = _SIZE.unpack_from(payload)
    raw = _CODEC.decompress(memoryview(payload)[_SIZE.size:], decompressed_size=size, asbytes=True)
    tenant, streams = pickle.loads(raw)
    return tenant, [StreamColumns(Labels(items), ts, lines, md) for items, ts, lines, md in streams]
