"""Deployment targets: which components a `svclog serve` process runs, which endpoints it serves.

`all` is the single-process mode; `write`/`read`/`backend` the simple scalable mode; every
component name is its own target (microservices). A request for an endpoint group the
process's components do not expose gets 404, as API.md's table prescribes.
"""

from __future__ import annotations

from collections.abc import Iterable

COMPONENTS = (
    "distributor",
    "ingester",
    "querier",
    "query-frontend",
    "query-scheduler",
    "ruler",
    "compactor",
    "index-gateway",
    "pattern-ingester",
)
GROUPS = {  # target -> components it runs
    # `all` leaves out the index gateway, as the reference does: in one process its lookups would
    # only add a Ray hop per sub-query (queriers read the index themselves); `all,index-gateway` adds it
    "all": frozenset(COMPONENTS) - {"index-gateway"},
    "write": frozenset({"distributor", "ingester", "pattern-ingester"}),
    "read": frozenset({"query-frontend", "querier"}),
    "backend": frozenset({"query-scheduler", "ruler", "compactor", "index-gateway"}),
    **{name: frozenset({name}) for name in COMPONENTS},
}
# endpoint group -> components exposing it (API.md, "exposed only by certain components")
EXPOSED_BY = {
    "ingest": {"distributor"},
    "query": {"querier", "query-frontend"},
    "ingester-admin": {"ingester"},
    "rules": {"ruler"},
    "deletes": {"compactor"},
    "distributor-ring": {"distributor", "ingester"},
    "ruler-ring": {"ruler"},
    "compactor-ring": {"compactor"},
    "indexgateway-ring": {"index-gateway", "querier"},
}
# (path prefix, group), most specific first; paths not listed are served by every component
_PREFIXES = (
    ("/otlp/", "ingest"),
    ("/api/legacy/push", "ingest"),
    ("/api/prom/push", "ingest"),
    ("/flush", "ingester-admin"),
    ("/ingester/", "ingester-admin"),
    ("/compat/", "rules"),
    ("/prometheus/", "rules"),
    ("/distributor/ring", "distributor-ring"),
    ("/ring", "distributor-ring"),
    ("/ruler/ring", "ruler-ring"),
    ("/compactor/ring", "compactor-ring"),
    ("/indexgateway/ring", "indexgateway-ring"),
    ("/api/legacy/", "query"),
    ("/api/prom/rules", "rules"),
    ("/api/prom/", "query"),
)
_API_GROUPS = (
    ("push", "ingest"),
    ("rules", "rules"),
    ("delete", "deletes"),
    ("format_query", None),
    ("status/buildinfo", None),
)


def components(targets: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for target in targets:
        out |= GROUPS[target]
    return frozenset(out)


def endpoint_group(path: str) -> str | None:
    """The endpoint group of a request path; None for paths every component serves."""
    for prefix in ("/svc/api/v1/", "/loki/api/v1/"):
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            for head, group in _API_GROUPS:
                if rest == head or rest.startswith(head + "/"):
                    return group
            return "query"
    for prefix, group in _PREFIXES:
        if path.startswith(prefix):
            return group
    return None


def exposes(component_set: frozenset[str], path: str) -> bool:
    group = endpoint_group(path)
    return group is None or bool(EXPOSED_BY[group] & component_set)


def app_name_and_prefix(targets: Iterable[str]) -> tuple[str, str]:
    """One Serve application per target set: `all` owns `/`, other targets live under `/<target>`
    on the cluster's single Serve HTTP entry (the reverse proxy of the scalable modes maps
    paths onto these prefixes)."""
    names = sorted(targets)
    if "all" in names:
        return "svclog", "/"
    joined = "-".join(names)
    return f"svclog-{joined}", f"/{joined}"
