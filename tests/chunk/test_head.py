"""HeadBlock keeps its own buffers: slices of a whole push are copied out by compact()."""

from svclog.chunk.head import HeadBlock, entries_batch


def test_compact_copies_shared_slices_out_of_the_push_they_came_from():
    push = entries_batch([1, 2, 3, 4], ["a", "bb", "ccc", "dddd"], None)
    head = HeadBlock()
    head.append_batch(push.slice(1, 2), 2, 3, 5, shared=True)
    before = head.table().column("line").chunk(0).buffers()[2].address
    head.compact()
    table = head.table()
    assert table.column("line").to_pylist() == ["bb", "ccc"]
    assert table.column("line").chunk(0).buffers()[2].address != before  # own buffer now
    assert table.column("line").chunk(0).buffers()[2].size < push.column(1).buffers()[2].size
