"""The distributor -> ingester wire form: one Arrow batch per push, WAL'd as received."""

from __future__ import annotations

import pickle
import struct

import pyarrow as pa
import pytest

from svclog.ingester import payload
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.payload import BatchStream, decode_batch, encode_batch
from svclog.ingester.stream_rate import StreamRateLimitError
from svclog.model import Labels, StreamColumns


def _stream(app, ts, lines, md=None):
    return StreamColumns(Labels({"app": app}.items()), ts, lines, md)


class Writer:
    def put_chunks(self, tenant, chunks, writer_id):
        return []


def test_round_trip_keeps_streams_rows_and_metadata():
    streams = [_stream("a", [3, 1], ["x", "héllo"], [[("k", "v")], None]), _stream("b", [2], ["z"])]
    tenant, back = decode_batch(encode_batch("t1", streams))
    assert tenant == "t1"
    assert all(isinstance(s, BatchStream) for s in back)
    assert [s.labels for s in back] == [s.labels for s in streams]
    assert [(s.ts, s.lines, s.metadata) for s in back] == [
        ([3, 1], ["x", "héllo"], [[("k", "v")], None]),
        ([2], ["z"], None),
    ]
    assert [len(s) for s in back] == [2, 1]
    assert back[0].raw_bytes() == len(b"x") + len("héllo".encode())  # UTF-8 bytes, not characters


def test_a_push_travels_compressed():
    streams = [_stream("a", list(range(1000)), ['level=info msg="request served" path=/api/v1/items'] * 1000)]
    assert len(encode_batch("t", streams)) < sum(map(len, streams[0].lines)) / 4


def test_batch_streams_re_encode():
    _, back = decode_batch(encode_batch("t", [_stream("a", [1, 2], ["x", "y"]), _stream("b", [3], ["z"])]))
    _, again = decode_batch(encode_batch("t", back[1:]))
    assert [(s.labels.to_dict(), s.ts, s.lines) for s in again] == [({"app": "b"}, [3], ["z"])]


def test_previous_wire_form_still_decodes():
    """WAL segments written before the upgrade replay: LZ4-compressed pickled lists, no magic."""
    raw = pickle.dumps(("t1", [((("app", "a"),), [1, 2], ["x", "y"], None)]))
    legacy = struct.pack("<Q", len(raw)) + pa.Codec("lz4").compress(raw, asbytes=True)
    tenant, streams = decode_batch(legacy)
    assert tenant == "t1" and streams == [_stream("a", [1, 2], ["x", "y"])]


def test_old_wal_records_replay(tmp_path):
    raw = pickle.dumps(("t1", [((("app", "a"),), [1, 2], ["x", "y"], None)]))
    legacy = struct.pack("<Q", len(raw)) + pa.Codec("lz4").compress(raw, asbytes=True)
    ing = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    ing.wal.append((None, legacy))
    ing.close()
    again = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    assert again.select("t1", (), 0, 10)[0][1].column("line").to_pylist() == ["x", "y"]


def test_pushed_payload_is_in_the_wal_as_received_and_replays(tmp_path, monkeypatch):
    ing = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    written = []
    monkeypatch.setattr(ing.wal, "append", lambda record, real=ing.wal.append: (written.append(record), real(record)))
    data = encode_batch("t1", [_stream("a", [2, 1], ["y", "x"]), _stream("b", [5], ["q"])])
    ing.push_payload(data)
    assert written == [(None, data)]
    ing.close()
    again = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    found = {labels.get("app"): sorted(t.column("ts").to_pylist()) for labels, t in again.select("t1", (), 0, 10)}
    assert found == {"a": [1, 2], "b": [5]}


def test_partly_rate_limited_batch_stream_keeps_the_prefix_that_fits(tmp_path):
    ing = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer(), stream_rate=lambda tenant: (100, 250))
    data = encode_batch("t", [_stream("a", list(range(5)), ["é" * 50] * 5)])  # 100 bytes, 50 characters each
    with pytest.raises(StreamRateLimitError) as err:
        ing.push_payload(data)
    assert "totaling 300B" in str(err.value)  # bytes, as the reference counts them
    assert ing.select("t", (), 0, 10)[0][1].num_rows == 2
    ing.close()
    again = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    assert again.select("t", (), 0, 10)[0][1].num_rows == 2  # only the accepted prefix was logged


def test_magic_cannot_be_an_old_size():
    assert struct.unpack("<Q", payload._MAGIC)[0] > 1 << 56


def test_empty_streams_and_pushes_decode():
    tenant, back = decode_batch(encode_batch("t", []))
    assert (tenant, back) == ("t", [])
    _, back = decode_batch(
        encode_batch("t", [_stream("a", [5, 3], ["xy", "z"]), _stream("b", [], []), _stream("c", [9], ["é"])])
    )
    assert [(len(s), s.raw_bytes(), s.bounds) for s in back] == [(2, 3, (3, 5)), (0, 0, None), (1, 2, (9, 9))]
