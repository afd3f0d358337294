"""Ray Serve deployments: the HTTP gateway (ingress), the distributor and the query frontend."""
from __future__ import annotations

import asyncio
import itertools
import logging

import ray
from fastapi import FastAPI
from ray import serve

from svclog.actors.clients import IngesterPool, RingClient
from svclog.actors.options import NAMESPACE, PATTERN_INGESTER_NAME, querier_name
from svclog.config import Config, config_to_yaml, limits_for
from svclog.distributor.distributor import Distributor
from svclog.model import SvcError
from svclog.serve.backend import ServeBackend
from svclog.serve.codecs.push import decode_push
from svclog.serve.errors import ErrorReply
from svclog.serve.handlers import Handlers
from svclog.serve.delete_routes import add_delete_routes
from svclog.serve import runtime
from svclog.serve.otlp_routes import add_otlp_routes
from svclog.serve.pattern_routes import add_pattern_routes
from svclog.serve.routes import add_routes, set_handlers
from svclog.serve.ruler_routes import add_ruler_routes

log = logging.getLogger("svclog")
app = add_routes(FastAPI(title="svclog", docs_url=None, redoc_url=None, openapi_url=None))


add_delete_routes(app, runtime.compactor, runtime.auth_enabled)
add_pattern_routes(app, runtime.pattern_actor, runtime.auth_enabled)
add_ruler_routes(app, runtime.ruler, runtime.auth_enabled)
add_otlp_routes(app, runtime.push_streams, runtime.auth_enabled, runtime.max_body_bytes,
                runtime.max_decompressed_bytes)


class DistributorDeployment:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        ring = RingClient()
        self.distributor = Distributor(ring=ring.get, pusher=IngesterPool(ring, cfg.common.replication_factor),
                                       limits_for=lambda tenant: limits_for(cfg, tenant),
                                       replication_factor=cfg.common.replication_factor,
                                       tee=self._pattern_tee() if cfg.pattern_ingester.enabled else None)

    @staticmethod
    def _pattern_tee():
        actor = ray.get_actor(PATTERN_INGESTER_NAME, namespace=NAMESPACE)
        return lambda tenant, columns: actor.push.remote(tenant, columns)

    def _push(self, tenant, body, content_type, content_encoding):
        streams = decode_push(body, content_type, content_encoding,
                              max_decompressed_bytes=self.cfg.server.max_decompressed_body_bytes)
        return self.distributor.push(tenant, streams)

    async def push(self, tenant, body, content_type, content_encoding):
        try:
            return await asyncio.to_thread(self._push, tenant, body, content_type, content_encoding)
        except SvcError as err:
            return ErrorReply.of(err)

    async def push_decoded(self, tenant, streams):
        try:
            return await asyncio.to_thread(self.distributor.push, tenant, streams)
        except SvcError as err:
            return ErrorReply.of(err)


class QueryFrontendDeployment:
    """Sends each query to a querier actor, retrying on another when one dies mid-query."""

    def __init__(self, cfg: Config, num_queriers: int):
        self.queriers = [ray.get_actor(querier_name(i), namespace=NAMESPACE) for i in range(num_queriers)]
        self._next = itertools.count()

    async def _call(self, method: str, *args):
        attempts = len(self.queriers) + 1
        last: Exception | None = None
        for _ in range(attempts):
            querier = self.queriers[next(self._next) % len(self.queriers)]
            try:
                return await getattr(querier, method).remote(*args)
            except ray.exceptions.RayTaskError as err:
                cause = getattr(err, "cause", None)
                if isinstance(cause, SvcError):
                    return ErrorReply.of(cause)
                raise
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as err:
                last = err  # the querier died or restarts: try the next one
                await asyncio.sleep(0.2)
        raise RuntimeError(f"no querier could answer: {last}")

    async def query(self, tenants, request):
        return await self._call("query", tenants, request)

    async def metadata(self, method: str, *args):
        return await self._call(method, *args)


@serve.ingress(app)
class Gateway:
    def __init__(self, cfg: Config, distributor, frontend):
        pool = IngesterPool(RingClient(), cfg.common.replication_factor)
        runtime.configure(cfg, distributor)
        set_handlers(Handlers(
            ServeBackend(distributor, frontend, pool),
            auth_enabled=cfg.auth_enabled,
            multi_tenant_queries=cfg.querier.multi_tenant_queries_enabled,
            max_body_bytes=cfg.server.max_request_body_bytes,
            config_yaml=lambda mode: config_to_yaml(cfg, mode),
            services=lambda: [(name, "Running") for name in _services(cfg)],
            volume_enabled=cfg.limits_config.volume_enabled,
        ))


def _services(cfg: Config) -> list[str]:
    return ["server", "ring", "distributor", "ingester", "querier", "query-frontend", "query-scheduler"]


def build_application(cfg: Config, num_queriers: int):
    """The bound Serve application: gateway -> distributor and query frontend."""
    serve_cpus = cfg.ray.serve_num_cpus
    distributor = serve.deployment(DistributorDeployment, name="distributor",
                                   ray_actor_options={"num_cpus": serve_cpus}, max_ongoing_requests=64)
    frontend = serve.deployment(QueryFrontendDeployment, name="query-frontend",
                                ray_actor_options={"num_cpus": serve_cpus}, max_ongoing_requests=64)
    gateway = serve.deployment(Gateway, name="gateway", ray_actor_options={"num_cpus": serve_cpus},
                               max_ongoing_requests=128)
    return gateway.bind(cfg, distributor.bind(cfg), frontend.bind(cfg, num_queriers))
