"""The smallest driver script: push a few lines, read them back, run a metric query.

    svclog serve &
    python examples/driver_query.py --addr http://127.0.0.1:3100 --org-id demo

Everything goes through svclog.client; the same calls work inside Ray tasks (see
ray_driver.py) and from the command line (`svclog query '{app="driver-demo"}'`).
"""

from __future__ import annotations

import argparse
import os
import time

from svclog.client import Client, ClientError

NS = 1_000_000_000


def demo(client: Client, app: str = "driver-demo") -> dict:
    """Push three entries (one with structured metadata), then query them back."""
    now = time.time_ns()
    client.push(
        {
            f'{{app="{app}", env="dev"}}': [
                (now - 3 * NS, "level=info msg=started"),
                (now - 2 * NS, "level=error msg=failed", {"trace_id": "abc123"}),
                (now - 1 * NS, "level=info msg=retried"),
            ]
        }
    )
    logs = client.query_range(f'{{app="{app}"}} | logfmt | level="error"', start=now - 60 * NS, end=now + NS)
    counts = client.query_range(
        f'sum by (level) (count_over_time({{app="{app}"}} | logfmt [1m]))',
        start=now - 60 * NS,
        end=now + NS,
        step="10s",
    )
    return {
        "error_lines": [value[1] for stream in logs["result"] for value in stream["values"]],
        "levels": sorted(item["metric"].get("level", "") for item in counts["result"]),
        "labels": client.labels(start=now - 60 * NS, end=now + NS),
        "values": client.label_values("app", start=now - 60 * NS, end=now + NS),
        "health": client.query("vector(1)+vector(1)")["result"][0]["value"][1],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--addr", default=os.environ.get("SVCLOG_ADDR", "http://127.0.0.1:3100"))
    parser.add_argument("--org-id", default=os.environ.get("SVCLOG_ORG_ID", "demo"))
    args = parser.parse_args(argv)
    try:
        report = demo(Client(args.addr, tenant=args.org_id))
    except ClientError as err:
        print(f"driver_query: {err}")
        return 1
    for key, value in report.items():
        print(f"{key:<12} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
