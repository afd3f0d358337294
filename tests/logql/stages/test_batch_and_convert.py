import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.source import METADATA_TYPE, StreamBlock
from svclog.logql.stages import (
    block_to_batch,
    group_by_labels,
    parse_bytes_values,
    parse_duration_ns_values,
    parse_duration_values,
    parse_float_values,
    set_error,
)
from svclog.model import Labels

STREAM = Labels({"app": "api", "env": "prod"}.items())


def make_block(meta_rows):
    meta = pa.array([list(r.items()) if r is not None else None for r in meta_rows], METADATA_TYPE)
    n = len(meta_rows)
    return StreamBlock(STREAM, pa.array(range(n), pa.int64()), pa.array([f"l{i}" for i in range(n)]), meta)


def test_block_to_batch_expands_metadata():
    b = block_to_batch(make_block([{"trace_id": "t1"}, None, {"trace_id": "t3", "customer_id": "c"}, {}]))
    assert b.label("trace_id").to_pylist() == ["t1", None, "t3", None]
    assert b.label("customer_id").to_pylist() == [None, None, "c", None]
    assert b.metadata_names == frozenset({"trace_id", "customer_id"})


def test_block_to_batch_on_sliced_metadata_and_collisions():
    block = make_block([{"a": "0"}, {"app": "x"}, {"a": "2"}])
    sliced = StreamBlock(block.labels, block.ts.slice(1), block.line.slice(1), block.metadata.slice(1))
    b = block_to_batch(sliced)
    assert b.label("a").to_pylist() == [None, "2"]
    assert b.label("app_extracted").to_pylist() == ["x", None]
    assert b.label("app").to_pylist() == ["api", "api"]


def test_group_by_labels_vectorised():
    b = block_to_batch(make_block([{"t": "1"}, {}, {"t": "1"}, {"t": ""}]))
    groups = {str(k): v.to_pylist() for k, v in group_by_labels(b)}
    assert groups == {
        '{app="api", env="prod", t="1"}': [0, 2],
        '{app="api", env="prod"}': [1],
        '{app="api", env="prod", t=""}': [3],
    }


def test_set_error_overwrite_rules():
    b = block_to_batch(make_block([{}, {}, {}]))
    set_error(b, pa.array([True, False, True]), "JSONParserErr", pa.array(["d0", None, "d2"]))
    set_error(b, pa.array([True, True, False]), "LabelFilterErr", "x", overwrite=False)
    assert b.label("__error__").to_pylist() == ["JSONParserErr", "LabelFilterErr", "JSONParserErr"]
    assert b.label("__error_details__").to_pylist() == ["d0", "x", "d2"]


def test_conversions():
    values, errors = parse_float_values(pa.array(["1.5", "-2e3", "abc", None, "+Inf"]))
    assert values.to_pylist()[:2] == [1.5, -2000.0] and values.to_pylist()[2:4] == [None, None]
    assert errors.to_pylist()[2] == 'strconv.ParseFloat: parsing "abc": invalid syntax'
    values, errors = parse_duration_values(pa.array(["1m30s", "250ms", "12", "1.5h"]))
    assert values.to_pylist() == [90.0, 0.25, None, 5400.0]
    assert errors.to_pylist()[2] == 'time: missing unit in duration "12"'
    values, errors = parse_bytes_values(pa.array(["110B", "12KB", "1.5 MiB", "1,000", "9XB"]))
    assert values.to_pylist() == [110.0, 12000.0, 1572864.0, 1000.0, None]
    assert errors.to_pylist()[4] == "unhandled size name: xb"


def test_float_conversion_takes_go_forms_off_the_vectorised_path():
    values, errors = parse_float_values(pa.array(["0x1p3", "2", "1_0", "0x10", None, "1__0", "1e999", "+nan"]))
    assert values.to_pylist()[:3] == [8.0, 2.0, 10.0] and values.to_pylist()[3:] == [None] * 5
    assert errors.to_pylist() == [
        None,
        None,
        None,
        'strconv.ParseFloat: parsing "0x10": invalid syntax',
        None,
        'strconv.ParseFloat: parsing "1__0": invalid syntax',
        'strconv.ParseFloat: parsing "1e999": value out of range',
        'strconv.ParseFloat: parsing "+nan": invalid syntax',
    ]


def test_bytes_conversion_is_go_humanize_parse_bytes():
    values, errors = parse_bytes_values(pa.array(["1,000KB", " 1KB", "1KB ", "\u0663", "1\u0663KB", "20000EB"]))
    assert values.to_pylist() == [1000000.0, None, 1000.0, None, None, None]
    assert errors.to_pylist() == [
        None,
        'strconv.ParseFloat: parsing "": invalid syntax',
        None,
        'strconv.ParseFloat: parsing "\\xd9": invalid syntax',
        'strconv.ParseFloat: parsing "1\\xd9": invalid syntax',
        "too large: 20000EB",
    ]


def test_durations_of_a_long_column_with_repeats_are_read_as_each_entry_alone():
    """A long column of repeating strings is read through its dictionary: values and errors per
    entry are those of reading every entry on its own (nulls, odd spellings and errors included)."""
    texts = ["250ms", "1m30s", "12", None, "-1.5h", "3µs", "0", "bad", "2.000000000000001s", "+7ns"]
    column = pa.array([texts[(i * 7) % len(texts)] for i in range(5000)], pa.string())
    assert len(pc.unique(column)) <= len(column) // 2  # the dictionary's path
    values, errors = parse_duration_ns_values(column)
    alone = [parse_duration_ns_values(pa.array([text], pa.string())) for text in texts]
    for i, text in enumerate(column.to_pylist()):
        one_value, one_error = alone[texts.index(text)]
        assert values[i].as_py() == one_value[0].as_py()
        assert errors[i].as_py() == one_error[0].as_py()
    sliced = column.slice(1000, 3000)
    assert parse_duration_values(sliced)[0].to_pylist() == parse_duration_values(column)[0].to_pylist()[1000:4000]
