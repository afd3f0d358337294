"""Token index of a chunk: per block, a split-block bloom filter of what a needle must find there.

A block's keys are of two kinds.

Line keys (winnowing minimizers of long tokens). A token is a maximal run of token bytes
(ASCII letters and digits, `_`, `-`, and every byte >= 0x80, so UTF-8 text, hex ids and UUIDs
stay whole) within one line. Every window of WINDOW consecutive bytes inside a token
contributes the smallest hash among its 8-byte grams. A needle's piece (a maximal run of token
bytes of the needle) lies inside one token of any line that contains the needle, so each of
the piece's windows is also a window of that line and yields the same minimum: the piece's keys
are all among the line's keys. Pieces shorter than WINDOW give no key and decide nothing, so
short or common words never skip a block (they would rarely skip one anyway), while trace ids,
request ids and UUIDs do. Only distinct windows cost space: text repeated on every line adds a
few keys per block.

Metadata keys: one per distinct structured-metadata `name=value` pair of the block.

A filter is sized to its block's distinct keys (BITS_PER_KEY each) in 256-bit buckets; a key
sets one bit in each of the bucket's eight 32-bit words (the split-block bloom filter Parquet
and Impala use), so a lookup reads one bucket. No false negatives; false positives only cost
decoding a block that is then filtered as before.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

GRAM = 8  # bytes per gram: one little-endian uint64, hashed as is
WINDOW = 16  # bytes per window: needle pieces of at least this length are decidable
_GRAMS_PER_WINDOW = WINDOW - GRAM + 1
BITS_PER_KEY = 5  # ~13% per key; a 32-char id has ~4 keys: ~0.1% of blocks pass (bench data)
# A filter takes at most this share of its block's raw bytes (lines and metadata). Logs compress
# ~3-10x (id-heavy ones least), so this bounds the worst case; the bench's lines need ~0.9%.
MAX_SHARE = 0.04
_BUCKET_WORDS = 8  # 8 x uint32 = 256 bits per bucket
_SALTS = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32
)
_LINE_SEED = np.uint64(0x9E3779B97F4A7C15)
_KEY_SEED = np.uint64(0x165667B19E3779F9)
_META_SEED = np.uint64(0xC2B2AE3D27D4EB4F)
FOOTER_KEY = b"svclog.token_index"
_VERSION = 1


def token_bytes(raw: np.ndarray) -> np.ndarray:
    """Which bytes (uint8) are token bytes. Comparisons over the array (uint8 arithmetic wraps, so
    `x - lo < size` tests lo <= x < lo + size; `| 0x20` folds ASCII capitals onto small letters):
    ~0.35 ns a byte, where indexing a 256-entry table took ~2.1."""
    token = (raw | np.uint8(0x20)) - np.uint8(ord("a")) < np.uint8(26)
    token |= raw - np.uint8(ord("0")) < np.uint8(10)
    token |= raw >= np.uint8(0x80)
    token |= raw == np.uint8(ord("_"))
    token |= raw == np.uint8(ord("-"))
    return token


def _mix(x: np.ndarray, seed: np.uint64) -> np.ndarray:
    """A 64-bit finaliser (murmur3's fmix64) of x ^ seed: every output bit depends on every input bit."""
    # array arithmetic on unsigned integers wraps silently (only numpy scalars warn)
    h = x ^ seed
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def _string_bytes(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated UTF-8 bytes of a string array and its offsets (relative, len + 1)."""
    values = values.cast(pa.large_string()) if values.type != pa.large_string() else values
    if values.null_count:
        values = pc.fill_null(values, "")
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64, count=len(values) + 1, offset=values.offset * 8)
    data = values.buffers()[2]
    first, last = int(offsets[0]), int(offsets[-1])
    raw = (
        np.frombuffer(data, dtype=np.uint8, count=last - first, offset=first)
        if data is not None and last > first
        else np.zeros(0, np.uint8)
    )
    return raw, offsets - first


def line_keys(lines: pa.Array) -> np.ndarray:
    """Distinct minimizer keys (uint64) of the long tokens of `lines`."""
    raw, offsets = _string_bytes(lines)
    return _minimizers(raw, offsets)


def needle_keys(needle: str) -> np.ndarray:
    """Keys every line containing `needle` has (empty when no piece of it is long enough)."""
    raw = np.frombuffer(needle.encode("utf-8"), dtype=np.uint8)
    return _minimizers(raw, np.array([0, len(raw)], dtype=np.int64))


def _minimizers(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    n = len(raw)
    if n < WINDOW:
        return np.zeros(0, np.uint64)
    token = token_bytes(raw)
    # a token starts where a token byte follows a non-token byte and ends before the first
    # non-token byte; boolean masks over the bytes, where diffing them upcast every byte to int64
    begins = np.empty(n, dtype=bool)
    begins[0] = token[0]
    np.greater(token[1:], token[:-1], out=begins[1:])
    finishes = np.zeros(n + 1, dtype=bool)
    finishes[n] = token[n - 1]
    np.greater(token[:-1], token[1:], out=finishes[1:n])
    # a run of token bytes that crosses from one line into the next is two tokens
    inner = offsets[1:-1]
    inner = inner[(inner > 0) & (inner < n)]
    begins[inner] |= token[inner]
    finishes[inner] |= token[inner - 1]
    starts, ends = np.flatnonzero(begins), np.flatnonzero(finishes)
    windows = ends - starts - WINDOW + 1  # windows per token
    keep = windows > 0
    if not keep.any():
        return np.zeros(0, np.uint64)
    starts, windows = starts[keep], windows[keep]
    # every gram some window uses, each once: a token's grams start at s .. e - GRAM (tokens are
    # disjoint and sorted, so these are too; np.unique over the windows' grams cost ~40x more)
    grams = windows + (_GRAMS_PER_WINDOW - 1)
    gram_at = _runs(starts, grams)
    padded = np.concatenate((raw, np.zeros(GRAM, np.uint8)))
    # the 8 bytes at every offset as one unaligned little-endian uint64 view: no 8-byte gather
    at_offset = np.ndarray(shape=(n,), dtype="<u8", buffer=padded, strides=(1,))
    hashes = _mix(at_offset[gram_at], _LINE_SEED)  # the grams, token after token
    # each position's minimum over the grams from there on (a window's span), with whole-array
    # minimums over shifted views; kept where a window starts (the tail of each token's grams
    # mixes in the next token's, but no window starts there)
    span = len(hashes) - (_GRAMS_PER_WINDOW - 1)
    lowest = hashes[:span].copy()
    for k in range(1, _GRAMS_PER_WINDOW):
        np.minimum(lowest, hashes[k : k + span], out=lowest)
    mins = lowest[_runs(np.cumsum(grams) - grams, windows)]
    # neighbouring windows mostly share their minimum (the point of winnowing): one of each run
    # before the hashing and sorting below
    changed = np.empty(len(mins), dtype=bool)
    changed[0] = True
    np.not_equal(mins[1:], mins[:-1], out=changed[1:])
    # a window's minimum is small by construction: hash it again so keys spread over the filter
    return sorted_unique(_mix(mins[changed], _KEY_SEED))


def _runs(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """starts[i], starts[i] + 1, ..., starts[i] + counts[i] - 1 for every i, concatenated."""
    total = int(counts.sum())
    return np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) + np.arange(total)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique for a 1-d array, by sorting: numpy 2.x's hash-based np.unique took ~4 s for a
    million uint64 keys (a chunk's worth), sorting ~0.1 s."""
    if len(values) < 2:
        return np.array(values, copy=True)
    ordered = np.sort(values)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def metadata_keys(metadata: pa.Array) -> np.ndarray:
    """Distinct keys of the `name=value` pairs of a map<string,string> column."""
    if metadata is None or len(metadata) == 0 or metadata.null_count == len(metadata):
        return np.zeros(0, np.uint64)
    names, values = _map_children(metadata)
    if len(names) == 0:
        return np.zeros(0, np.uint64)
    pairs = pc.unique(pc.binary_join_element_wise(names, pc.fill_null(values, ""), "\x00"))
    return _string_hashes(pairs)


def _map_children(metadata: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The names and values of a map column's pairs: MapArray.keys/.items ignore a slice's offset."""
    offsets = metadata.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    return metadata.keys.slice(first, last - first), metadata.items.slice(first, last - first)


def metadata_raw_bytes(metadata: pa.Array) -> int:
    names, values = _map_children(metadata)
    return sum(int(pc.sum(pc.binary_length(part)).as_py() or 0) for part in (names, values))


def metadata_pair_key(name: str, value: str) -> np.ndarray:
    return _string_hashes(pa.array([name + "\x00" + value], pa.string()))


def _string_hashes(values: pa.Array) -> np.ndarray:
    """One 64-bit hash per string: a polynomial over its bytes, finalised with its length."""
    raw, offsets = _string_bytes(values)
    lengths = np.diff(offsets)
    if len(raw) == 0:
        return sorted_unique(_mix(lengths.astype(np.uint64), _META_SEED))
    # byte j of a string of length L weighs P^(L-1-j): h = sum(b_j * P^(L-1-j)) mod 2^64
    position = np.arange(len(raw)) - np.repeat(offsets[:-1], lengths)
    exponent = np.repeat(lengths, lengths) - 1 - position
    powers = _powers(int(lengths.max()))
    terms = (raw.astype(np.uint64) + np.uint64(1)) * powers[exponent]
    sums = np.zeros(len(lengths), dtype=np.uint64)
    nonempty = lengths > 0
    sums[nonempty] = np.add.reduceat(terms, offsets[:-1][nonempty])
    return sorted_unique(_mix(sums ^ (lengths.astype(np.uint64) << np.uint64(48)), _META_SEED))


def _powers(count: int) -> np.ndarray:
    factors = np.full(max(count, 1), 0x100000001B3, dtype=np.uint64)
    factors[0] = 1
    return np.multiply.accumulate(factors)  # wraps mod 2^64


# ---------------------------------------------------------------- split-block bloom filter


def build_filter(keys: np.ndarray, max_bytes: int | None = None) -> np.ndarray:
    """A filter (uint32 words, a multiple of 8) holding `keys`, BITS_PER_KEY each but at most
    `max_bytes` (then more false positives, never false negatives); empty when there are none."""
    buckets = -(-len(keys) * BITS_PER_KEY // 256)
    if max_bytes is not None and len(keys):
        buckets = max(1, min(buckets, max_bytes // 32))
    if not buckets:
        return np.zeros(0, dtype=np.uint32)
    # every key's eight bits as positions in the filter's bits (word * 32 + bit), set in a flag per
    # bit and packed: np.bitwise_or.at over the words took ~4x as long
    keys = np.asarray(keys, dtype=np.uint64)
    bucket = _bucket(keys >> np.uint64(32), buckets)
    bits = _bit_numbers(keys)
    word = bucket[:, None] * _BUCKET_WORDS + np.arange(_BUCKET_WORDS)[None, :]
    flags = np.zeros(buckets * _BUCKET_WORDS * 32, dtype=bool)
    flags[(word * 32 + bits).ravel()] = True
    return np.packbits(flags, bitorder="little").view("<u4").astype(np.uint32)


def filter_has_all(words: np.ndarray, keys: np.ndarray) -> bool:
    """Could every key be in the filter? (An empty filter holds no key.)"""
    index = TokenIndex(words.reshape(-1, _BUCKET_WORDS), np.array([len(words) // _BUCKET_WORDS]))
    return bool(index.may_hold(KeySet.of(keys))[0])


class KeySet:
    """Keys prepared for lookups: each key's bucket selector and its eight bit masks."""

    def __init__(self, high: np.ndarray, masks: np.ndarray):
        self.high = high  # (keys,) uint64: the upper 32 bits, scaled to a bucket by the filter's size
        self.masks = masks  # (keys, 8) uint32

    @classmethod
    def of(cls, keys: np.ndarray) -> KeySet:
        keys = np.asarray(keys, dtype=np.uint64)
        bits = _bit_numbers(keys)
        return cls(keys >> np.uint64(32), np.left_shift(np.uint32(1), bits).astype(np.uint32))

    def __len__(self) -> int:
        return len(self.high)


def _bit_numbers(keys: np.ndarray) -> np.ndarray:
    """(keys, 8): the bit (0-31) each key (uint64) sets in each of its bucket's eight words, from
    its lower 32 bits (the upper ones choose the bucket)."""
    low = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    bits: np.ndarray = (low[:, None] * _SALTS[None, :]) >> np.uint32(27)
    return bits


def _bucket(high: np.ndarray, buckets: np.ndarray | int) -> np.ndarray:
    # (high * buckets) >> 32 maps a 32-bit value onto 0..buckets-1 without a division; no overflow
    return ((high * np.asarray(buckets, dtype=np.uint64)) >> np.uint64(32)).astype(np.int64)


# ---------------------------------------------------------------- storage in the chunk


def encode_filters(filters: list[np.ndarray]) -> bytes:
    """version (uint32), block count, each block's word count, then every block's words."""
    sizes = np.array([len(f) for f in filters], dtype="<u4")
    head = np.array([_VERSION, len(filters)], dtype="<u4")
    body = np.concatenate(filters).astype("<u4") if filters else np.zeros(0, "<u4")
    return head.tobytes() + sizes.tobytes() + body.tobytes()


class TokenIndex:
    """The filters of one chunk: every block's buckets in one array, looked up for all blocks at once."""

    def __init__(self, words: np.ndarray, buckets: np.ndarray):
        self.words = words  # (total buckets, 8) uint32
        self.buckets = buckets.astype(np.int64)  # (blocks,) buckets per block, 0 when it has no key
        self.first = np.concatenate(([0], np.cumsum(self.buckets)[:-1])).astype(np.int64)

    @classmethod
    def decode(cls, data: bytes | None) -> TokenIndex | None:
        if not data or len(data) < 8:
            return None
        version, count = (int(v) for v in np.frombuffer(data, dtype="<u4", count=2))
        if version != _VERSION or len(data) < 8 + 4 * count:
            return None  # a layout this reader does not know: scan as if there were none
        sizes = np.frombuffer(data, dtype="<u4", count=count, offset=8).astype(np.int64)
        words = np.frombuffer(data, dtype="<u4", offset=8 + 4 * count)
        if len(words) != int(sizes.sum()) or (sizes % _BUCKET_WORDS).any():
            return None
        return cls(words.reshape(-1, _BUCKET_WORDS), sizes // _BUCKET_WORDS)

    def __len__(self) -> int:
        return len(self.buckets)

    def may_hold(self, keys: KeySet) -> np.ndarray:
        """Per block: could it hold every one of `keys`?"""
        if len(keys) == 0:
            return np.ones(len(self), dtype=bool)
        present = self.buckets > 0
        if not present.any():
            return present
        bucket = self.first[:, None] + _bucket(keys.high[None, :], self.buckets[:, None])  # (blocks, keys)
        found = self.words[np.where(present[:, None], bucket, 0)]  # (blocks, keys, 8)
        return ((found & keys.masks) == keys.masks).all(axis=(1, 2)) & present


def block_filter(lines: pa.Array, metadata: pa.Array | None) -> np.ndarray:
    """The filter of one block, its size capped at MAX_SHARE of the block's raw bytes."""
    keys = line_keys(lines)
    raw = int(pc.sum(pc.binary_length(lines)).as_py() or 0)
    meta = metadata_keys(metadata)
    if len(meta):
        keys = sorted_unique(np.concatenate((keys, meta)))
        raw += metadata_raw_bytes(metadata)
    return build_filter(keys, max_bytes=int(raw * MAX_SHARE))
