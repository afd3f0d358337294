"""The `svclog` command: `svclog serve [-config.file=F] [--address=A] [-flag=value ...]`."""

from __future__ import annotations

import logging
import os
import signal
import sys

from svclog.config import ConfigError, load_config, parse_cli

USAGE = """usage: svclog serve [-config.file=FILE] [--address=RAY_ADDRESS] [-target=all] [-<section>.<option>=VALUE ...]

Starts svclog on Ray (a local Ray instance unless --address joins a cluster) and
serves the HTTP API (default http://127.0.0.1:3100).

       svclog query|query-range|labels|series|tail|push ... [--addr URL] [--org-id TENANT]

Talk to a running service (see `svclog <command> --help`).
"""


def _split_address(args: list[str]) -> tuple[str | None, list[str]]:
    address, rest = None, []
    it = iter(args)
    for arg in it:
        if arg.startswith("--address="):
            address = arg.split("=", 1)[1]
        elif arg == "--address":
            address = next(it, None)
        else:
            rest.append(arg)
    return address, rest


def serve_main(args: list[str]) -> int:
    address, args = _split_address(args)
    try:
        path, overrides = parse_cli(args)
        if address:
            overrides.append(f"-ray.address={address}")
        cfg = load_config(path, overrides)
    except ConfigError as err:
        print(f"svclog: configuration error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=cfg.server.log_level.upper().replace("WARN", "WARNING").replace("WARNINGING", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from svclog.actors.options import driver_arrow_pool

    driver_arrow_pool()  # before anything here imports pyarrow, which reads the choice then
    from svclog import launch as topology

    handles = topology.start(cfg, host_gateway=True)  # the driver only waits: it serves HTTP too
    print(f"svclog ready on http://{cfg.server.http_listen_address}:{cfg.server.http_listen_port}", flush=True)
    signal.signal(signal.SIGTERM, _stop_requested)
    signal.signal(signal.SIGINT, _stop_requested)
    try:
        topology.wait_forever()
    except StopRequested as stop:
        print(f"svclog: {signal.Signals(stop.signum).name}: stopping cleanly", file=sys.stderr, flush=True)
    # One clean stop at a time; it is bounded (launch.STOP_TIMEOUT_S), so later signals just wait for it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    topology.stop(handles, cfg)
    import ray

    if topology.uses_serve(cfg):
        from ray import serve

        serve.shutdown()  # also stops Serve's HAProxy, which would otherwise keep the port
    ray.shutdown()  # a local cluster's GCS and raylet go with it
    # Everything is stopped, flushed and shut down: leave without the interpreter's finalisation,
    # which spent 3-4 s in Ray's native teardown after ray.shutdown had returned (measured).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class StopRequested(Exception):
    """SIGTERM or SIGINT arrived: leave the wait and stop cleanly (from the main flow, not the handler)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop_requested(signum, frame):
    raise StopRequested(signum)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "serve":
        return serve_main(rest)
    if command in ("query", "query-range", "labels", "series", "tail", "push"):
        from svclog.cli_commands import run

        return run(command, rest)
    if command.startswith("-"):  # flags only: serve is the default command
        return serve_main(argv)
    print(f"svclog: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
