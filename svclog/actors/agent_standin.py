"""What a local start runs in place of Ray's dashboard agent (see svclog/actors/head.py).

Every raylet starts a dashboard agent and shares its fate: the raylet exits when the agent does.
The agent serves Ray's metrics export, the state API and job submission, none of which a local
svclog uses (its /metrics are its own; the scheduler reads the GCS actor table directly), and cost
~127 MB RSS. This stand-in does the one thing the raylet waits for, publishing the agent's ports,
as "not in use" (-1, what Ray's minimal install writes for the metrics ports), then stays alive
until the raylet is gone. It runs as `python -I -S <this file> <the agent's arguments>`: no
site-packages, no svclog or Ray imports (~8 MB RSS).
"""

from __future__ import annotations

import os
import sys
import time

# The port files the raylet and the workers read, named as Ray's persist_port names them.
PORT_NAMES = ("metrics_agent_port", "metrics_export_port", "dashboard_agent_listen_port")


def agent_arguments(argv: list[str]) -> dict[str, str]:
    """`--name=value` arguments of the agent's command line, by name."""
    return dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)


def publish_unused_ports(session_dir: str, node_id: str) -> None:
    """Write -1 ("not in use") as each agent port, the way persist_port writes a port: a file
    `<session_dir>/<name>_<node id>` holding the number, replaced atomically."""
    for name in PORT_NAMES:
        path = os.path.join(session_dir, f"{name}_{node_id}")
        with open(path + ".tmp", "w") as handle:
            handle.write("-1")
        os.replace(path + ".tmp", path)


def wait_for_parent_exit(poll_s: float = 1.0) -> None:
    """Return once the process that started this one (the raylet) has exited (we are re-parented)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(poll_s)


def main(argv: list[str]) -> None:
    args = agent_arguments(argv)
    publish_unused_ports(args["session-dir"], args["node-id"])
    wait_for_parent_exit()


if __name__ == "__main__":
    main(sys.argv[1:])
