"""The object store against a real S3 server (SeaweedFS): round trips, listings, deletes, no
directory objects, bounded requests per query, and the store going down and coming back."""

from __future__ import annotations

import asyncio
import time
import urllib.parse

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.compactor.delete_requests import DeleteRequestStore, new_delete_request
from svclog.compactor.sweeper import schedule_chunk_deletion
from svclog.model import NS, Entry, Labels, Matcher, MatchType, PushStream
from svclog.ruler.rulefmt import decode_group
from svclog.ruler.store import RuleStore
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore, StoreError
from tests.storage.s3_server import BUCKET, SECRET_KEY

pytestmark = pytest.mark.s3

DAY = schema.PERIOD_NS
T0 = 1793491200 * NS  # 2026-11-01T00:00:00Z


def _chunk(ts: list[int], lines: list[str]) -> SealedChunk:
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": lines,
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {
        k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before) if after.get(k, 0) != before.get(k, 0)
    }


def _settled_counts(s3_server) -> dict[str, int]:
    """The server's request counts once they stop moving: SeaweedFS counts a request after it has
    answered, so a read right after the last call can miss it on a loaded machine."""
    counts = s3_server.request_counts()
    for _ in range(25):
        time.sleep(0.2)
        again = s3_server.request_counts()
        if again == counts:
            return counts
        counts = again
    return counts


def _as_server_sees(counts: dict[str, int]) -> dict[str, int]:
    """Our request counts in the server's terms (SeaweedFS files a HEAD under GET)."""
    out = dict(counts)
    out["GET"] = out.get("GET", 0) + out.pop("HEAD", 0)
    return {k: v for k, v in out.items() if v}


def test_round_trip_listing_and_deletes(s3_store, s3_server):
    store: ObjectStore = s3_store()
    before = s3_server.request_counts()
    store.put("a/x/1", b"one")
    store.put("a/x/2", b"two" * 100_000)  # 300 kB: still one PUT
    store.put("a/y/3", b"")
    assert store.get("a/x/1") == b"one" and store.get("a/x/2") == b"two" * 100_000 and store.get("a/y/3") == b""
    assert store.list("a/x") == ["a/x/1", "a/x/2"]
    assert store.list("a", recursive=True) == ["a/x/1", "a/x/2", "a/y/3"]
    assert store.list("a") == [] and store.list("nothing") == []
    assert store.list_dirs("a") == ["x", "y"]
    assert store.exists("a/x/1") and not store.exists("a/x/9")
    with pytest.raises(FileNotFoundError):
        store.get("a/x/9")
    store.delete("a/x/1")
    store.delete("a/x/9")  # missing: not an error
    assert store.list("a", recursive=True) == ["a/x/2", "a/y/3"]
    # the counter around the store agrees with what the server served, request for request
    assert _as_server_sees(store.request_counts()) == _delta(_settled_counts(s3_server), before)
    assert store.request_counts()["PUT"] == 3 + 1  # one PUT per object (no multipart); a delete re-marks its parent
    assert SECRET_KEY not in urllib.parse.unquote(store.uri)  # the secret never shows in the location


def test_writes_leave_no_directory_objects(s3_store, s3_server):
    """Every write of every store user is exactly one PUT of the object itself: no `dir/` marker
    objects (which listing would then have to wade through), no multipart round trips."""
    store: ObjectStore = s3_store()
    before = s3_server.request_counts()
    a, b = Labels({"app": "a"}.items()), Labels({"app": "b"}.items())
    refs = ChunkStore(store).put_chunks(
        "t1", [(a, _chunk([T0, T0 + 1], ["x", "y"])), (b, _chunk([T0 + DAY, T0 + DAY + 5], ["z", "w"]))], "ing-0"
    )
    rules = RuleStore(store)
    rules.set_group(
        "t1",
        "ns/one",
        decode_group({"name": "g", "rules": [{"record": "r", "expr": 'count_over_time({app="a"}[1m])'}]}),
    )
    DeleteRequestStore(store).put(
        new_delete_request(
            "t1",
            '{app="a"}',
            str(T0 // NS),
            str(T0 // NS + 60),
            None,
            now_ms=T0 // 10**6 + DAY // 10**6,
            max_interval_limit_ns=DAY,
        )
    )
    schedule_chunk_deletion(store, "t1", [refs[0].key], [schema.period_of(T0)], T0)
    assert _delta(_settled_counts(s3_server), before) == {"PUT": 9}
    # 2 chunks, 2 index segments (two days) and their chunks' layouts, 1 rule group, 1 delete request,
    # 1 pending-deletion marker
    assert len(store.list("", recursive=True)) == 9
    # and nothing in the bucket under this store is an empty "directory"
    infos = s3_server.filesystem().get_file_info(
        pafs.FileSelector(f"{BUCKET}/{store.root.split('/', 1)[1]}", recursive=True)
    )
    files = [i.path for i in infos if i.type == pafs.FileType.File]
    for directory in (i.path for i in infos if i.type == pafs.FileType.Directory):
        assert any(f.startswith(directory + "/") for f in files), f"empty directory object {directory}"


def test_index_reader_lists_only_the_days_a_query_covers(s3_store):
    """Ten days of index; a query over two of them lists those two day prefixes, never the
    tenant's whole prefix, and a repeated query within the listing TTL asks the store nothing
    (listings and decoded segments cached)."""
    store: ObjectStore = s3_store()
    chunks = ChunkStore(store)
    stream = Labels({"app": "a"}.items())
    for day in range(10):
        for flush in range(3):  # three flushes a day: three segments
            ts = T0 + day * DAY + flush * 3600 * NS
            chunks.put_chunks("t1", [(stream, _chunk([ts, ts + NS], [f"d{day}f{flush}a", f"d{day}f{flush}b"]))], "w")
    listed: list[str] = []
    real_list = store.list

    def spy(prefix: str, recursive: bool = False) -> list[str]:
        listed.append(prefix)
        return real_list(prefix, recursive)

    store.list = spy  # type: ignore[method-assign]
    reader = IndexReader(
        store, listing_ttl_s=5.0, clock=lambda: 0.0
    )  # a clock that stands still: the listing stays fresh
    matchers = (Matcher("app", MatchType.EQ, "a"),)
    start, end = T0 + 3 * DAY + 12 * 3600 * NS, T0 + 5 * DAY  # half of day 3 and day 4
    before = store.request_counts()
    refs = reader.chunk_refs("t1", matchers, start, end)
    first = _delta(store.request_counts(), before)
    before = store.request_counts()
    assert reader.chunk_refs("t1", matchers, start, end) == refs
    again = _delta(store.request_counts(), before)
    print(f"\nindex lookup over 2 of 10 days (3 segments a day): first {first}, repeated {again}")
    assert listed == [
        schema.index_dir("t1", schema.period_of(T0) + 3),
        schema.index_dir("t1", schema.period_of(T0) + 4),
    ]
    assert first == {"LIST": 2, "HEAD": 6, "GET": 6}  # 2 day listings + 6 segments read once
    assert again == {}
    # day 3's chunks all end before its noon: only day 4's three overlap the range
    assert sorted(r.min_ts for r in refs[stream]) == [T0 + 4 * DAY + f * 3600 * NS for f in range(3)]


def _backend(tmp_path, monkeypatch, uri: str):
    """The Ray-free in-process service (tests/fuzz/harness.py) with its object store on S3."""
    from svclog.serve.errors import ErrorReply
    from tests.fuzz import harness

    class Backend(harness.InProcessBackend):
        async def query(self, tenants, request, *routing):
            try:
                return await super().query(tenants, request, *routing)
            except Exception as err:  # as the query frontend deployment does: typed errors become replies
                reply = ErrorReply.mapped(err)
                if reply is None:
                    raise
                reply.raise_()

    store = ObjectStore(uri)
    monkeypatch.setattr(harness, "ObjectStore", lambda _path: store)
    backend = Backend(harness.harness_config(str(tmp_path)), str(tmp_path))
    return backend, harness.Client(harness.build_app(backend)), store


def _push(client, tenant: str, streams: list[PushStream]) -> None:
    from svclog.serve.codecs.push import encode_push_json

    resp = client.request(
        "push",
        "POST",
        "/loki/api/v1/push",
        content=encode_push_json(streams),
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text


def _query(client, tenant: str, query: str, start: int, end: int):
    return client.request(
        "query",
        "GET",
        "/loki/api/v1/query_range",
        params={"query": query, "start": str(start), "end": str(end), "limit": "5000", "direction": "forward"},
        headers={"X-Scope-OrgID": tenant},
    )


def _lines(resp) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [line for s in resp.json()["data"]["result"] for _, line in s["values"]]


def test_in_process_service_push_flush_query_on_s3(tmp_path, monkeypatch, s3_uri):
    backend, client, store = _backend(tmp_path, monkeypatch, s3_uri())
    try:
        now = time.time_ns() - 3600 * NS
        apps = ("web", "db", "api")
        _push(
            client,
            "team-a",
            [
                PushStream(
                    Labels({"app": app, "env": "prod"}.items()),
                    [Entry(now + i * NS, f"{app} line {i}") for i in range(200)],
                )
                for app in apps
            ],
        )
        asyncio.run(backend.flush())
        assert all(not ing.flush_queue_length() for ing in backend.ingesters.values())  # all of it is in S3 now
        assert len(store.list("chunks/team-a", recursive=True)) >= 3
        before = store.request_counts()
        lines = _lines(_query(client, "team-a", '{env="prod"} |= "line"', now - NS, now + 300 * NS))
        cold = _delta(store.request_counts(), before)
        assert sorted(lines) == sorted(f"{app} line {i}" for app in apps for i in range(200))
        before = store.request_counts()
        assert len(_lines(_query(client, "team-a", '{app="web"}', now - NS, now + 300 * NS))) == 200
        warm = _delta(store.request_counts(), before)
        print(f"\nrequests per query (1-day range, 3 streams, 2 ingesters' flushes): cold {cold}, warm {warm}")
        # cold: one listing per index day the range touches (two when it crosses midnight UTC), each
        # segment and chunk read once (HEAD + GET); warm: nothing read again, and the listings
        # too only once they are older than the listing TTL (5 s; the cold query takes less)
        days = len({(now - NS) // (86400 * NS), (now + 300 * NS) // (86400 * NS)})
        assert cold["LIST"] == days and cold["GET"] == cold["HEAD"] and set(cold) == {"LIST", "HEAD", "GET"}
        assert warm in ({}, {"LIST": days})
    finally:
        client.close()


def test_store_down_answers_503_and_nothing_is_lost_when_it_returns(tmp_path, monkeypatch, s3_uri, s3_server):
    backend, client, store = _backend(tmp_path, monkeypatch, s3_uri())
    try:
        now = time.time_ns() - 3600 * NS
        stream = Labels({"app": "web"}.items())
        _push(client, "t", [PushStream(stream, [Entry(now + i * NS, f"early {i}") for i in range(50)])])
        asyncio.run(backend.flush())
        _push(client, "t", [PushStream(stream, [Entry(now + (100 + i) * NS, f"late {i}") for i in range(50)])])

        s3_server.stop()
        # the flush fails: the chunks stay in the ingesters (and their WAL) for the next flush
        failures = [ing.stats.flush_failures for ing in backend.ingesters.values()]
        for ing in backend.ingesters.values():
            ing.flush(force=True)
        assert sum(ing.stats.flush_failures for ing in backend.ingesters.values()) > sum(failures)
        assert sum(ing.memory_chunks() for ing in backend.ingesters.values()) >= 1
        with pytest.raises(StoreError):
            store.get("chunks/anything")
        resp = _query(client, "t", '{app="web"}', now - NS, now + 300 * NS)
        assert resp.status_code == 503, resp.text
        assert "object store unavailable" in resp.text and resp.headers.get("retry-after")

        s3_server.start()
        asyncio.run(backend.flush())  # the retry: the kept chunks go out now
        assert all(not ing.flush_queue_length() for ing in backend.ingesters.values())
        lines = _lines(_query(client, "t", '{app="web"}', now - NS, now + 300 * NS))
        assert lines == [f"early {i}" for i in range(50)] + [f"late {i}" for i in range(50)]
        # every chunk object the index names is whole (decodes), none half-written
        reader = IndexReader(store)
        refs = reader.chunk_refs("t", (Matcher("app", MatchType.EQ, "web"),), now - NS, now + 300 * NS)
        assert sum(ChunkStore(store).fetch(r, 0, 2**62).num_rows for r in refs[stream]) >= 100
    finally:
        if s3_server.proc is None:
            s3_server.start()
        client.close()
