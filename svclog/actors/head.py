"""Starting a lean local Ray head: only the processes a single-node svclog uses.

`ray.init()` on a fresh machine also starts the dashboard's API server, the autoscaler monitor
and the log monitor (~300 MB RSS and three processes on this machine). A local single-node
cluster never autoscales, svclog does not forward worker logs to the driver
(`log_to_driver=False`), and without `ray.dashboard` nothing reads the API server, so a local
start leaves them out. `ray.init` has no switch for these, so this module adjusts the head's
start parameters for the duration of that one call; if a Ray release renames what it touches,
the start falls back to Ray's full set of processes (logged), never fails.

The raylet also starts a dashboard agent and a runtime-env agent, and exits when either does.
Without `ray.dashboard` a local start runs stand-ins in their places: `svclog/actors/agent_standin.py`
(~8 MB instead of ~127 MB RSS) publishes the dashboard agent's ports as unused, as Ray's minimal
install does for its metrics ports; `svclog/actors/runtime_env_standin.py` (~12 MB instead of ~80 MB)
answers the runtime environments a local start uses, environment variables only. Both live as long
as the raylet.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from svclog.actors import agent_standin, runtime_env_standin

log = logging.getLogger("svclog")


@contextlib.contextmanager
def lean_local_head(keep_dashboard: bool) -> Iterator[None]:
    """Within this block, a local `ray.init()` starts its head without the monitors (and without
    the dashboard API server unless `keep_dashboard`)."""
    try:
        from ray._private import node as node_module
        from ray._private import parameter as parameter_module
        from ray._private import ray_constants, services

        params_init = parameter_module.RayParams.__init__
        start_api_server = node_module.Node.start_api_server
        python_command = services._build_python_executable_command_memory_profileable
        standins = {
            ray_constants.PROCESS_TYPE_DASHBOARD_AGENT: agent_standin.__file__,
            ray_constants.PROCESS_TYPE_RUNTIME_ENV_AGENT: runtime_env_standin.__file__,
        }
    except (ImportError, AttributeError) as err:
        log.info("lean Ray head unavailable on this Ray release (%s): starting Ray's full head", err)
        yield
        return

    def lean_params(self, *args, **kwargs):
        params_init(self, *args, **kwargs)
        self.include_log_monitor = False
        self.no_monitor = True

    def no_api_server(self, **_kwargs):
        self._webui_url = None

    def standin_agent(component: str, *args, **kwargs) -> list[str]:
        # an agent's command is this interpreter followed by the agent's script and its arguments:
        # the stand-in takes the script's place as the one run, reads the same arguments, and runs
        # isolated (-I -S: standard library only, no script directory on its path)
        if component in standins:
            return [sys.executable, "-I", "-S", os.path.abspath(standins[component])]
        return python_command(component, *args, **kwargs)

    parameter_module.RayParams.__init__ = lean_params
    if not keep_dashboard:
        node_module.Node.start_api_server = no_api_server
        services._build_python_executable_command_memory_profileable = standin_agent
    try:
        yield
    finally:
        parameter_module.RayParams.__init__ = params_init
        node_module.Node.start_api_server = start_api_server
        services._build_python_executable_command_memory_profileable = python_command


# Read by Serve's controller when it starts (Ray Serve's controller-callback hook): a local start
# sets it to `no_fallback_proxy` below. The controller inherits the driver's environment there.
SERVE_CONTROLLER_CALLBACK = "RAY_SERVE_CONTROLLER_CALLBACK_IMPORT_PATH"
NO_FALLBACK_PROXY = "svclog.actors.head.no_fallback_proxy"


def no_fallback_proxy() -> None:
    """Serve's controller callback for a local start: no fallback proxy beside HAProxy.

    With HAProxy, Serve also starts a Python proxy on the head as HAProxy's backup server for a
    route with no replica up (scaling from zero). A local start has one gateway replica that never
    scales to zero, and its port is held by svclog's PortHolder until HAProxy lists the replica, so
    the backup is never used; it cost one Ray worker (~160 MB RSS) and its boot during
    `serve.start`. Without it HAProxy answers 503 itself if the replica is ever down. If a Ray
    release renames what this touches, the fallback proxy starts as before (logged)."""
    try:
        from ray.serve._private.proxy_state import ProxyStateManager

        original = ProxyStateManager._start_fallback_proxy_if_needed
    except (ImportError, AttributeError) as err:
        log.warning("svclog: Serve's fallback proxy cannot be left out on this Ray release (%s)", err)
        return

    def skip(self, *_args, **_kwargs) -> None:
        return None

    skip.__wrapped__ = original  # type: ignore[attr-defined]
    ProxyStateManager._start_fallback_proxy_if_needed = skip


def serve_controller_created() -> bool:
    """Has Serve's controller (a named actor) been created in this cluster?"""
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    try:
        ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    except ValueError:
        return False
    return True
