"""A Ray-free svclog: the real gateway routes and handlers over real decoding, validation,
ingesters and querier, all in one process.

`InProcessBackend` implements svclog/serve/backend.py's `Backend` protocol the way the Ray deployments
do (decode_push + Distributor on the write side, Querier on the read side) with plain
objects in between: two WAL-less ingesters on a two-member ring and a local object store.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import httpx
from fastapi import FastAPI

from svclog.config import Config, limits_for, load_config
from svclog.distributor.distributor import Distributor
from svclog.frontend.params import RangeRequest
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.instance import local_stream_limit
from svclog.model import PushStream, StreamColumns
from svclog.querier.prefetched import rows_of
from svclog.querier.querier import Querier, QuerierSettings
from svclog.querier.volume import largest_replicas
from svclog.ring.ring import Ring
from svclog.serve.app import GatewaySettings, Services
from svclog.serve.app import build_app as build_gateway_app
from svclog.serve.codecs.push import decode_push
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore


class LocalPusher:
    """The distributor's Pusher over ingesters in this process (errors per member, as the Ray pool)."""

    def __init__(self, ingesters: dict[str, Ingester]):
        self.ingesters = ingesters

    def push_many(self, tenant: str, assignments: dict[str, list[StreamColumns]]) -> dict[str, Exception | None]:
        errors: dict[str, Exception | None] = {}
        for member, streams in assignments.items():
            try:
                self.ingesters[member].push(tenant, streams)
                errors[member] = None
            except Exception as err:  # noqa: BLE001 - reported per member, like a failed remote call
                errors[member] = err
        return errors


class LocalReplicas:
    """The querier's IngesterReader over the same ingesters."""

    def __init__(self, ingesters: list[Ingester]):
        self.ingesters = ingesters
        self.selects = 0  # selects asked of the ingesters (not answered from prefetched rows)

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        self.selects += 1
        found = [item for ing in self.ingesters for item in ing.select(tenant, matchers, start, end, shard)]
        return found, len(self.ingesters)

    def data_spans(self, tenant):
        return [span for ing in self.ingesters for span in ing.data_spans(tenant)]

    def series(self, tenant, matchers, start, end):
        return [s for ing in self.ingesters for s in ing.series(tenant, matchers, start, end)]

    def stats_and_rows(self, tenant, matchers, start, end, rows_cap, rows, deadline=None):
        answers = [ing.stats_and_rows(tenant, matchers, start, end, rows_cap, rows) for ing in self.ingesters]
        packs = [packed for _, packed in answers]
        stats = largest_replicas(row for found, _ in answers for row in found)
        return stats, rows_of(tenant, matchers, *rows, packs, len(self.ingesters))

    def stats(self, tenant, matchers, start, end):
        return largest_replicas(row for ing in self.ingesters for row in ing.stream_stats(tenant, matchers, start, end))


class InProcessBackend:
    """The handlers' Backend, wired as the Ray deployments wire it, minus Ray."""

    def __init__(self, cfg: Config, root: str, num_ingesters: int = 2):
        self.cfg = cfg
        store = ObjectStore(root + "/chunks")
        self.chunks = ChunkStore(store)
        self.ring = Ring()
        rf = cfg.common.replication_factor
        self.ingesters: dict[str, Ingester] = {}
        for i in range(num_ingesters):
            member = f"ingester-{i}"
            self.ring.register(member, member, node=f"node-{i}")
            self.ingesters[member] = Ingester(
                IngesterSettings(member, f"{root}/wal/{member}", wal_enabled=False),
                self.chunks,
                stream_limit=self._stream_limit,
            )
        self.distributor = Distributor(
            ring=lambda: self.ring,
            pusher=LocalPusher(self.ingesters),
            limits_for=lambda tenant: limits_for(cfg, tenant),
            replication_factor=rf,
        )
        self.querier = Querier(
            IndexReader(store),
            self.chunks,
            LocalReplicas(list(self.ingesters.values())),
            QuerierSettings(
                query_ingesters_within=0,
                max_entries_limit_per_query=cfg.limits_config.max_entries_limit_per_query,
                max_query_series=cfg.limits_config.max_query_series,
            ),
        )

    def _stream_limit(self, tenant: str) -> int:
        limits = limits_for(self.cfg, tenant)
        return local_stream_limit(
            limits.max_streams_per_user,
            limits.max_global_streams_per_user,
            len(self.ring.healthy_members()),
            self.cfg.common.replication_factor,
        )

    # ---------------------------------------------------------- write path

    async def push(self, tenant: str, body: bytes, content_type: str | None, content_encoding: str | None) -> Any:
        streams = decode_push(
            body, content_type, content_encoding, max_decompressed_bytes=self.cfg.server.max_decompressed_body_bytes
        )
        return self.distributor.push(tenant, streams)

    async def push_decoded(self, tenant: str, streams: list[PushStream]) -> Any:
        return self.distributor.push(tenant, streams)

    # ---------------------------------------------------------- read path

    async def query(self, tenants: list[str], request: RangeRequest, actor_path: Sequence[str] = ()) -> dict:
        return self.querier.query(tenants, request)  # actor_path: where the Ray backend's scheduler sends it

    async def series(self, tenants: list[str], selectors: list[str], start: int, end: int) -> list[dict]:
        return self.querier.series(tenants, selectors, start, end)

    async def label_names(self, tenants: list[str], start: int, end: int, query: str | None) -> list[str]:
        return self.querier.label_names(tenants, start, end, query)

    async def label_values(self, tenants: list[str], name: str, start: int, end: int, query: str | None) -> list[str]:
        return self.querier.label_values(tenants, name, start, end, query)

    async def index_stats(self, tenants: list[str], query: str, start: int, end: int) -> dict:
        return self.querier.index_stats(tenants, query, start, end)

    async def volume(
        self,
        tenants: list[str],
        query: str,
        start: int,
        end: int,
        limit: int,
        targets: tuple[str, ...],
        aggregate_by: str,
        step: int | None,
    ) -> Any:
        return self.querier.volume(tenants, query, start, end, limit, targets, aggregate_by, step)

    async def flush(self):
        for ing in self.ingesters.values():
            ing.flush(force=True)

    async def ingester_stats(self) -> list[dict]:
        return []

    async def give_way(self) -> None:
        return None


def harness_config(root: str, *flags: str) -> Config:
    return load_config(
        None,
        [f"-common.path-prefix={root}", "-auth.enabled=true", "-querier.multi-tenant-queries-enabled=true", *flags],
    )


# ---------------------------------------------------------------- the rest of the gateway's routes


class TaskError(Exception):
    """Stands in for ray.exceptions.RayTaskError: the remote error travels as `cause`."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class _Method:
    def __init__(self, func: Callable[..., Any]):
        self.func = func

    def remote(self, *args: Any) -> Any:
        async def run() -> Any:
            try:
                return self.func(*args)
            except Exception as err:  # noqa: BLE001 - every remote error arrives wrapped, as from Ray
                raise TaskError(err) from err

        return run()


class Handle:
    """`handle.method.remote(...)` -> awaitable, like a Ray actor handle over a plain object."""

    def __init__(self, target: Any):
        self._target = target

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self._target, name))


class InProcessAdmin:
    """The admin routes' backend over the in-process components; shutdowns are recorded, not run."""

    def __init__(self, backend: InProcessBackend):
        self.backend = backend
        self.prepared: dict[str, bool] = {name: False for name in backend.ingesters}

    async def services(self):
        from svclog.serve.admin_routes import State

        return [(name, State.RUNNING) for name in ("ring", *self.backend.ingesters, "querier")]

    async def set_log_level(self, level: str) -> dict[str, str]:
        return {name: "ok" for name in self.backend.ingesters}

    async def flush(self) -> dict[str, int]:
        await self.backend.flush()
        return {name: 0 for name in self.backend.ingesters}

    async def prepare_shutdown(self, action: str, ingester: str | None) -> dict[str, bool]:
        from svclog.model import NotFoundError

        if ingester and ingester not in self.prepared:
            raise NotFoundError(f"no ingester named {ingester!r}")
        names = [ingester] if ingester else list(self.prepared)
        for name in names:
            if action != "get":
                self.prepared[name] = action == "set"
        return {name: self.prepared[name] for name in names}

    async def shutdown(self, ingester, flush, delete_ring_tokens, terminate) -> dict[str, dict]:
        return {}

    async def ring(self, kind: str, now_ns: int):
        from svclog.ring.status_page import RingView

        return RingView(tuple(self.backend.ring.members.values()), 60 * 10**9)

    async def forget(self, kind: str, member_id: str) -> bool:
        return False  # the fuzz must not take members out of the harness's ring

    def now_ns(self) -> int:
        return time.time_ns()


class NoIngesterTails:
    """The tail routes' IngesterPool with an empty ring: a tail replays, then idles."""

    def __init__(self) -> None:
        from types import SimpleNamespace

        ring = SimpleNamespace(healthy_members=list, members={})
        self.ring = SimpleNamespace(get=lambda: ring)


def in_process_services(backend: InProcessBackend) -> Services:
    """The gateway's services over in-process components: what deployments.py's Gateway passes as
    Ray clients (rulers, compactor and pattern ingester behind actor-like handles)."""
    from svclog.actors.compactor_actor import CompactorActor
    from svclog.actors.pattern_actor import PatternActor
    from svclog.actors.service_clients import CompactorClient, PatternClient, RulerClient
    from svclog.ruler.api import RulesAPI
    from svclog.ruler.ruler import Ruler, RulerSettings
    from svclog.ruler.service import RulerService
    from svclog.ruler.store import RuleStore
    from svclog.storage.objstore import ObjectStore

    cfg = backend.cfg
    store = RuleStore(ObjectStore(cfg.common.path_prefix + "/rules"))

    class NoQueries:
        def instant(self, tenant, query, at_ns):
            return []

    ruler = Ruler(store, NoQueries(), RulerSettings())
    ruler_service = Handle(RulerService(RulesAPI(store, on_change=lambda tenant: ruler.sync(1, tenant)), ruler))
    return Services(
        backend=backend,
        admin=InProcessAdmin(backend),
        compactor=CompactorClient(Handle(CompactorActor(cfg, background=False).compactor)),
        rulers=RulerClient(ruler_service),
        patterns=PatternClient(Handle(PatternActor(cfg))),
        ingesters=NoIngesterTails(),
    )


def build_app(backend: InProcessBackend) -> FastAPI:
    """The gateway's app (svclog/serve/app.py: every route of the table) over in-process services.
    The rules API and patterns answer 404 unless the config enables them, as in the service."""
    return build_gateway_app(GatewaySettings.from_config(backend.cfg), in_process_services(backend))


def app_with(services: Services, *flags: str, **settings: Any) -> FastAPI:
    """The gateway app over `services` (the others absent: 503), configured by command-line `flags`
    and with GatewaySettings fields overridden by `settings`."""
    cfg = load_config(None, list(flags))
    return build_gateway_app(replace(GatewaySettings.from_config(cfg), **settings), services)


class Client:
    """A synchronous face on httpx over ASGI (one event loop), counting requests and 5xx per endpoint."""

    def __init__(self, app: FastAPI):
        self.loop = asyncio.new_event_loop()
        # raise_app_exceptions=False: an unhandled exception is what a real client sees, a 500.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://svclog")
        self.tried: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.failures: list[tuple[str, int, str]] = []

    def request(self, endpoint: str, method: str, url: str, **kwargs: Any) -> httpx.Response:
        kwargs["headers"] = raw_headers(kwargs.get("headers"))
        params = kwargs.pop("params", None)
        if params:
            url += "?" + form_encode(params)
        data = kwargs.pop("data", None)
        if data:
            kwargs["content"] = form_encode(data).encode("ascii")
            kwargs["headers"].append((b"content-type", b"application/x-www-form-urlencoded"))
        resp = self.loop.run_until_complete(self.client.request(method, url, timeout=30, **kwargs))
        record(self, endpoint, resp, url)
        return resp

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


def form_encode(params: dict[str, str] | list[tuple[str, str]]) -> str:
    """URL-encode like a browser would, but let lone surrogates through as the invalid UTF-8 they encode."""
    pairs = params.items() if isinstance(params, dict) else params
    return urlencode(list(pairs), encoding="utf-8", errors="surrogatepass")


def raw_headers(headers: dict[str, str] | None) -> list[tuple[bytes, bytes]]:
    """Header values as bytes, so non-ASCII tenants reach the server as a client could send them."""
    return [(k.encode("latin-1"), v.encode("utf-8", "surrogatepass")) for k, v in (headers or {}).items()]


def record(counter: Any, endpoint: str, resp: httpx.Response, what: str) -> None:
    counter.tried[endpoint] += 1
    if resp.status_code >= 500:
        counter.errors[endpoint] += 1
        counter.failures.append((endpoint, resp.status_code, f"{what}: {resp.text[:300]}"))


def report(title: str, tried: Counter, errors: Counter, seconds: float) -> str:
    lines = [f"\n== {title}: inputs tried per endpoint ({seconds:.1f} s) =="]
    for endpoint in sorted(tried):
        lines.append(f"  {endpoint:<22} tried={tried[endpoint]:>5}  5xx={errors[endpoint]}")
    lines.append(f"  {'TOTAL':<22} tried={sum(tried.values()):>5}  5xx={sum(errors.values())}")
    return "\n".join(lines)


class Stopwatch:
    def __init__(self) -> None:
        self.began = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.began


Seed = Callable[[Client], None]


def seed_data(c: Client) -> None:
    """Data for the queries to chew on: JSON, logfmt, numbers, metadata, two tenants; some flushed."""
    from svclog.model import Entry, Labels, PushStream
    from svclog.serve.codecs.push import encode_push_json
    from tests.fuzz import strategies as fz

    streams = [
        PushStream(
            Labels({"app": app, "env": env}.items()),
            [
                Entry((fz.NOW_S + i * 7) * fz.NS, line.format(i=i), (("trace_id", f"t{i}"),) if i % 3 == 0 else ())
                for i in range(60)
            ],
        )
        for app, env, line in [
            ("web", "prod", '{{"level":"error","x":{i},"msg":"GET /{i}"}}'),
            ("db", "dev", "level=info x={i}ms took={i}KB"),
            ("api", "prod", "10.0.0.{i} - GET /x {i}"),
        ]
    ]
    for tenant in ("fuzz", "fuzz-b"):
        resp = c.request(
            "seed",
            "POST",
            "/loki/api/v1/push",
            content=encode_push_json(streams),
            headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
        )
        assert resp.status_code == 204, resp.text
    c.loop.run_until_complete(c.client.post("/flush"))  # some data in chunks, some in ingesters
    more = [PushStream(Labels({"app": "web", "env": "prod"}.items()), [Entry((fz.NOW_S + 999) * fz.NS, "late")])]
    c.request(
        "seed",
        "POST",
        "/loki/api/v1/push",
        content=encode_push_json(more),
        headers={"X-Scope-OrgID": "fuzz", "Content-Type": "application/json"},
    )
