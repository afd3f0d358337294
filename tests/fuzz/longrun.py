"""Long-run fuzzer against a running svclog: hostile requests over every route, bounded in count and time.

    python -m tests.fuzz.longrun --url http://127.0.0.1:3100 --requests 100000 --seconds 3600

Requests come from tests/fuzz/route_requests.py (the gateway's whole route table, seeded, so a
run is reproducible with --seed). The report gives counts by status class, every answer
slower than --slow seconds and every 5xx or transport error with its request; the exit
status is 1 when there was any of those. Only loopback addresses are accepted: this sends
deliberately hostile traffic. Start the service with a config whose API routes are all on
(examples/conformance.yaml) so rules, deletes and patterns are exercised too.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import random
import sys
import time
from urllib.parse import urlsplit

import httpx

from tests.fuzz.route_requests import RouteSpec, Tally, gateway_routes, httpx_args, random_request

LOOPBACK_NAMES = ("localhost",)


def loopback_only(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host in LOOPBACK_NAMES
    if not ok:
        raise SystemExit(f"longrun: refusing {url!r}: only loopback addresses (127.0.0.1, ::1, localhost)")
    return url.rstrip("/")


# Operator routes that stop a component on purpose (as the reference's do): one accepted call leaves
# the service without its ingester, so every later push answers 503 by design. A long run against
# a live service leaves them out unless asked (--with-shutdown); the in-process fuzz covers them.
STOPPING_ROUTES = ("/ingester/shutdown", "/ingester/flush_shutdown")
# The ring pages' POST forgets a member (`forget=ingester-0` is among the fuzzed values): forgetting
# the only, live ingester leaves pushes 503 "empty ring" until its next heartbeat joins it again, as
# the reference's forget does. Their GET is still fuzzed; the POST only with --with-shutdown.
RING_PAGE_SUFFIX = "/ring"


def live_routes(routes: list[RouteSpec], with_shutdown: bool = False) -> list[RouteSpec]:
    """The routes a long run sends to a live service: all of them with `with_shutdown`, else
    without the ones that stop a component or take it out of its ring."""
    if with_shutdown:
        return list(routes)
    kept = []
    for route in routes:
        if route.path in STOPPING_ROUTES:
            continue
        if route.path.endswith(RING_PAGE_SUFFIX):
            methods = tuple(m for m in route.methods if m != "POST")
            if not methods:
                continue
            route = RouteSpec(methods, route.path)
        kept.append(route)
    return kept


async def run(
    url: str,
    requests: int,
    seconds: float,
    concurrency: int,
    seed: int,
    slow_s: float,
    timeout_s: float,
    progress_every: int,
    with_shutdown: bool = False,
) -> Tally:
    routes = live_routes(gateway_routes(), with_shutdown)
    tally = Tally(slow_s=slow_s)
    deadline = time.monotonic() + seconds
    issued = 0
    began = time.monotonic()

    async def worker(index: int, client: httpx.AsyncClient) -> None:
        nonlocal issued
        rnd = random.Random(seed * 1_000_003 + index)
        while issued < requests and time.monotonic() < deadline:
            issued += 1
            req = random_request(rnd, routes[rnd.randrange(len(routes))])
            start = time.monotonic()
            try:
                resp = await client.request(timeout=timeout_s, **httpx_args(req))
                tally.add(req, resp.status_code, time.monotonic() - start, resp.text)
            except httpx.HTTPError as err:  # a timeout or a dropped connection is a failure too
                tally.add(req, None, time.monotonic() - start, f"{type(err).__name__}: {err}")
            if progress_every and tally.total % progress_every == 0:
                print(
                    f"  {tally.total} requests, {time.monotonic() - began:.0f} s: "
                    + ", ".join(f"{k}={v}" for k, v in sorted(tally.by_class.items())),
                    flush=True,
                )

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits) as client:
        await asyncio.gather(*(worker(i, client) for i in range(concurrency)))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the service, on a loopback address")
    parser.add_argument("--requests", type=int, default=100_000, help="stop after this many requests")
    parser.add_argument("--seconds", type=float, default=3600.0, help="stop after this long, whatever the count")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--slow", type=float, default=5.0, help="report answers slower than this (seconds)")
    parser.add_argument("--timeout", type=float, default=30.0, help="give up on one request after this long")
    parser.add_argument("--progress", type=int, default=5000, help="print counts every N requests (0: never)")
    parser.add_argument(
        "--with-shutdown",
        action="store_true",
        help=f"also call {', '.join(STOPPING_ROUTES)} and the ring pages' forget (the service may lose its ingester)",
    )
    args = parser.parse_args(argv)
    url = loopback_only(args.url)
    began = time.monotonic()
    tally = asyncio.run(
        run(
            url,
            max(0, args.requests),
            args.seconds,
            max(1, args.concurrency),
            args.seed,
            args.slow,
            args.timeout,
            args.progress,
            args.with_shutdown,
        )
    )
    print(tally.report(f"longrun fuzz of {url} (seed {args.seed})", time.monotonic() - began))
    return 1 if tally.errors or tally.slow else 0


if __name__ == "__main__":
    sys.exit(main())
