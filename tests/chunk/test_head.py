"""HeadBlock keeps its own buffers: slices of a whole push are copied out by compact()."""

import pyarrow as pa

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


def _line_buffers(head: HeadBlock) -> list[int]:
    return [part.column(1).buffers()[2].address for part in head.parts()]


def test_compact_copies_only_what_arrived_since_the_last_compaction():
    first = entries_batch([1, 2, 3, 4], ["a", "bb", "ccc", "dddd"], [[("k", "v")], None, None, None])
    second = entries_batch([5, 6, 7], ["e", "ff", "ggg"], None)
    head = HeadBlock()
    head.append_batch(first.slice(0, 2), 1, 2, 3, shared=True)
    head.append_batch(first.slice(3, 1), 4, 4, 4, shared=True)
    head.compact()
    kept = _line_buffers(head)
    assert len(kept) == 1 and kept[0] != first.column(1).buffers()[2].address  # one copy of both slices
    head.append_batch(second.slice(1, 2), 6, 7, 5, shared=True)
    head.compact()
    now = _line_buffers(head)
    assert now[0] == kept[0]  # the part copied before is not copied again
    assert now[1] != second.column(1).buffers()[2].address
    table = head.table()
    assert table.column("ts").to_pylist() == [1, 2, 4, 6, 7]
    assert table.column("line").to_pylist() == ["a", "bb", "dddd", "ff", "ggg"]
    assert table.column("metadata").to_pylist() == [[("k", "v")], None, None, None, None]
    head.compact()  # nothing shared since: nothing copied
    assert _line_buffers(head) == [table.column("line").chunk(0).buffers()[2].address]


def test_a_sealed_head_is_joined_sorted_and_deduplicated_when_first_read():
    from svclog.chunk.head import PendingChunk, SealedChunk

    head = HeadBlock()
    head.append_batch(entries_batch([5, 3], ["e", "c"], None), 3, 5, 2)
    head.append_batch(entries_batch([3, 1], ["c", "a"], None), 1, 3, 2)  # a replayed copy of (3, "c")
    chunk = head.seal()
    assert isinstance(chunk, PendingChunk)
    assert (chunk.min_ts, chunk.max_ts, chunk.raw_bytes) == (1, 5, 4)  # known at the cut, before any work
    later = SealedChunk.from_table(pa.Table.from_batches([entries_batch([9], ["z"], None)]))
    assert chunk.sealed_ns < later.sealed_ns  # stamped at the cut: seal order is cut order
    assert chunk.table.column("ts").to_pylist() == [1, 3, 5]
    assert chunk.table.column("line").to_pylist() == ["a", "c", "e"]
    assert chunk.raw_bytes == 3  # exact once sealed


def test_a_compaction_copies_outside_the_lock_and_keeps_what_was_appended_meanwhile():
    head = HeadBlock()
    push = entries_batch([1, 2, 3], ["a", "bb", "ccc"], None)
    head.append_batch(push.slice(0, 2), 1, 2, 3, shared=True)
    held: list[bool] = []

    class AppendsWhileUnlocked:
        def __enter__(self):
            held.append(True)
            if len(held) == 2:  # the copy ran unlocked: a push got in before the swap
                head.append_batch(push.slice(2, 1), 3, 3, 3, shared=True)

        def __exit__(self, *exc):
            return False

    head.compact(AppendsWhileUnlocked())
    assert len(held) == 2
    assert head.parts()[0].column(1).buffers()[2].address != push.column(1).buffers()[2].address
    assert head.table().column("line").to_pylist() == ["a", "bb", "ccc"]


def _filled_head(timestamps: list[list[int]], block_bytes: int) -> HeadBlock:
    head = HeadBlock()
    for stamps in timestamps:
        lines = [f"line {t:06d} " + "x" * 40 for t in stamps]
        head.append_batch(entries_batch(stamps, lines, None), min(stamps), max(stamps), sum(map(len, lines)))
        head.pack(block_bytes)
    return head


def test_a_head_in_time_order_keeps_its_packed_blocks_when_sealed():
    head = _filled_head([list(range(i * 20, i * 20 + 20)) for i in range(10)], block_bytes=2000)
    packed = head.blocks
    assert len(packed) >= 3 and head.parts()  # blocks packed before the cut, and an open part
    chunk = head.seal(block_bytes=2000)
    assert chunk.blocks[: len(packed)] == tuple(packed)  # the very blocks: nothing decoded or packed again
    assert chunk.table.column("ts").to_pylist() == list(range(200))
    assert chunk.raw_bytes == sum(len(f"line {t:06d} ") + 40 for t in range(200))
    assert all(block.strictly_ascending for block in chunk.blocks)


def test_a_head_with_a_repeat_or_out_of_order_entries_is_sorted_and_deduplicated_when_sealed():
    for stamps in (
        [list(range(0, 40)), list(range(40, 80)), [79, 80, 81]],  # 79 again: a replayed push
        [list(range(0, 40)), list(range(40, 80)), [60, 90]],  # 60 after 79: out of order
        [list(range(0, 40)), [40, 41, 41, 42]],  # a tie inside one push
    ):
        head = _filled_head(stamps, block_bytes=1500)
        expected = sorted({(t, f"line {t:06d} " + "x" * 40) for batch in stamps for t in batch})
        table = head.seal(block_bytes=1500).table
        assert list(zip(table.column("ts").to_pylist(), table.column("line").to_pylist())) == expected
