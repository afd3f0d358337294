import pyarrow as pa
import pyarrow.parquet as pq

from svclog.serve.codecs.parquet import to_parquet, wants_parquet


def _read(data):
    return pq.read_table(pa.BufferReader(to_parquet(data)))


def test_streams_have_timestamp_labels_line():
    table = _read(
        {
            "resultType": "streams",
            "result": [
                {
                    "stream": {"app": "a"},
                    "values": [["1793491200000000001", "first"], ["1793491200000000002", "second"]],
                }
            ],
        }
    )
    assert table.column_names == ["timestamp", "labels", "line"]
    assert table.schema.field("timestamp").type == pa.timestamp("ns", tz="UTC")
    assert table.column("line").to_pylist() == ["first", "second"]
    assert table.column("labels").to_pylist()[0] == [("app", "a")]
    assert table.column("timestamp").cast(pa.int64()).to_pylist()[0] == 1793491200000000001


def test_matrix_and_vector_have_double_values():
    matrix = _read(
        {
            "resultType": "matrix",
            "result": [{"metric": {"x": "1"}, "values": [[1793491200, "2.5"], [1793491260, "+Inf"]]}],
        }
    )
    assert matrix.column_names == ["timestamp", "labels", "value"]
    assert matrix.column("value").to_pylist() == [2.5, float("inf")]
    vector = _read({"resultType": "vector", "result": [{"metric": {}, "value": [1793491200.5, "3"]}]})
    assert vector.column("value").to_pylist() == [3.0]
    assert vector.column("timestamp").cast(pa.int64()).to_pylist() == [1793491200500000000]


def test_accept_header_detection():
    assert wants_parquet("application/vnd.apache.parquet")
    assert wants_parquet("application/vnd.svc.parquet, */*")
    assert not wants_parquet("application/json") and not wants_parquet(None)
