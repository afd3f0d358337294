"""Submit LogQL queries to svclog from a Ray driver: one Ray task per tenant.

    svclog serve &
    python examples/ray_driver.py --addr http://127.0.0.1:3100 --tenants acme globex --seed

Each task builds its own svclog.client.Client (a Client is plain data, nothing is shared
across processes) and tags its requests with `X-Svc-Actor-Path: ray-driver|<task>`, so the
service's scheduler shares query capacity fairly between the tasks of one tenant. The
tasks only speak HTTP: they can run in any Ray cluster (`--ray-address auto` joins the
one svclog runs on). The driver prints one line per tenant and query.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import ray

from svclog.client import Client, ClientError

NS = 1_000_000_000
DEFAULT_QUERIES = (
    'sum by (level) (count_over_time({app="shop"} | logfmt [1h]))',
    '{app="shop"} |= "level=error"',
)


def run_tenant_queries(addr: str, tenant: str, queries: list[str], since_s: int) -> list[dict[str, Any]]:
    """The body of one Ray task: run every query for `tenant` and summarise the answers."""
    client = Client(addr, tenant=tenant, headers={"X-Svc-Actor-Path": f"ray-driver|task-{os.getpid()}"})
    end = time.time_ns()
    rows = []
    for query in queries:
        started = time.perf_counter()
        row: dict[str, Any] = {"tenant": tenant, "query": query}
        try:
            data = client.query_range(query, start=end - since_s * NS, end=end, limit=1000)
        except ClientError as err:
            rows.append({**row, "error": str(err)})
            continue
        result = data["result"]
        points = sum(len(item.get("values", ())) for item in result)
        rows.append(
            {
                **row,
                "type": data["resultType"],
                "series": len(result),
                "points": points,
                "lines": [value[1] for item in result for value in item["values"]]
                if data["resultType"] == "streams"
                else [],
                "seconds": round(time.perf_counter() - started, 3),
            }
        )
    return rows


def run(addr: str, tenants: list[str], queries: list[str], since_s: int = 3600) -> list[dict[str, Any]]:
    """Fan the queries out as one Ray task per tenant and gather the rows (Ray must be initialised)."""
    task = ray.remote(num_cpus=0.1)(run_tenant_queries)  # small: fits beside svclog on a laptop
    refs = [task.remote(addr, tenant, list(queries), since_s) for tenant in tenants]
    return [row for rows in ray.get(refs) for row in rows]


def seed(addr: str, tenants: list[str]) -> None:
    """Push a few demo lines per tenant so that the queries have something to find."""
    now = time.time_ns()
    for tenant in tenants:
        lines = [f"level={'error' if i % 3 == 0 else 'info'} tenant={tenant} order={i}" for i in range(6)]
        Client(addr, tenant=tenant).push({'{app="shop"}': [(now - (6 - i) * NS, line) for i, line in enumerate(lines)]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--addr", default=os.environ.get("SVCLOG_ADDR", "http://127.0.0.1:3100"))
    parser.add_argument("--tenants", nargs="+", default=["acme", "globex"])
    parser.add_argument("--query", action="append", dest="queries", help="LogQL (repeatable)")
    parser.add_argument("--since", type=int, default=3600, help="seconds back from now")
    parser.add_argument("--seed", action="store_true", help="push demo lines first")
    parser.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local one)")
    args = parser.parse_args(argv)
    if args.seed:
        seed(args.addr, args.tenants)
    if not ray.is_initialized():
        ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
    failed = False
    for row in run(args.addr, args.tenants, args.queries or list(DEFAULT_QUERIES), args.since):
        if "error" in row:
            failed = True
            print(f"{row['tenant']:<12} ERROR {row['error']}  ({row['query']})")
        else:
            print(
                f"{row['tenant']:<12} {row['type']:<8} series={row['series']:<3} points={row['points']:<5} "
                f"{row['seconds']:>6.3f}s  {row['query']}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
