"""A lean local start: inside the block Ray's head parameters leave out the monitors (and the
dashboard API server unless kept); outside it, Ray's own behaviour is back."""

from ray._private import node as node_module
from ray._private.parameter import RayParams

from svclog.actors.head import lean_local_head


def test_monitors_left_out_only_inside_the_block():
    assert RayParams().include_log_monitor is None and RayParams().no_monitor is False
    with lean_local_head(keep_dashboard=False):
        params = RayParams()
        assert params.include_log_monitor is False and params.no_monitor is True
        assert node_module.Node.start_api_server.__name__ == "no_api_server"
    assert RayParams().include_log_monitor is None and RayParams().no_monitor is False
    assert node_module.Node.start_api_server.__name__ == "start_api_server"


def test_dashboard_kept_when_asked():
    with lean_local_head(keep_dashboard=True):
        assert node_module.Node.start_api_server.__name__ == "start_api_server"
        assert RayParams().no_monitor is True


def test_restored_after_an_error_in_the_block():
    try:
        with lean_local_head(keep_dashboard=False):
            raise RuntimeError("ray.init failed")
    except RuntimeError:
        pass
    assert node_module.Node.start_api_server.__name__ == "start_api_server"
    assert RayParams().no_monitor is False


def test_ruler_ring_only_where_more_than_one_ruler_can_run():
    from svclog.config import load_config
    from svclog.launch import needs_ruler_ring

    assert not needs_ruler_ring(load_config(None, []))  # -target=all, one ruler: it owns every group
    assert needs_ruler_ring(load_config(None, ["-ray.num-rulers=2"]))
    assert needs_ruler_ring(load_config(None, ["-target=backend"]))


def test_serve_controller_hook_leaves_out_the_fallback_proxy(monkeypatch):
    from ray.serve._private.proxy_state import ProxyStateManager
    from ray.serve._private.utils import import_attr

    from svclog.actors import head

    # the import path a local start hands Serve's controller names the hook itself
    assert import_attr(head.NO_FALLBACK_PROXY) is head.no_fallback_proxy
    monkeypatch.setattr(
        ProxyStateManager, "_start_fallback_proxy_if_needed", ProxyStateManager._start_fallback_proxy_if_needed
    )
    started = []
    monkeypatch.setattr(ProxyStateManager, "_start_proxy", lambda self, **kwargs: started.append(kwargs))
    manager = object.__new__(ProxyStateManager)  # just the state the method reads: a head node, HAProxy on
    manager._head_node_id, manager._running_native_proxies, manager._fallback_proxy_state = "head", True, None
    head.no_fallback_proxy()
    manager._start_fallback_proxy_if_needed("head", "127.0.0.1", "instance")
    assert started == [] and manager._fallback_proxy_state is None


def test_background_serve_start_hands_its_error_to_the_start():
    import pytest

    from svclog.launch import BackgroundCall, wait_for_serve_controller

    def failing_start():
        raise OSError("port in use")

    call = BackgroundCall(failing_start)
    call.thread.join()  # finished before the wait looks for a controller (no Ray here)
    with pytest.raises(OSError, match="port in use"):
        wait_for_serve_controller(call)  # the start fails there instead of polling for a controller forever
    done = BackgroundCall(lambda: None)
    done.join()
    assert done.done() and done.error is None


def test_agents_replaced_by_the_standins_only_inside_the_block():
    import sys

    from ray._private import services

    from svclog.actors import agent_standin, runtime_env_standin

    def build(component: str, session_dir: str) -> list[str]:  # what Ray's start calls, patched or not
        return services._build_python_executable_command_memory_profileable(component, session_dir)

    with lean_local_head(keep_dashboard=False):
        assert build("dashboard_agent", "/tmp/s") == [sys.executable, "-I", "-S", agent_standin.__file__]
        assert build("runtime_env_agent", "/tmp/s") == [sys.executable, "-I", "-S", runtime_env_standin.__file__]
        assert build("raylet", "/tmp/s")[0:2] == [sys.executable, "-u"]  # every other component keeps Ray's command
    with lean_local_head(keep_dashboard=True):
        assert build("dashboard_agent", "/tmp/s")[1] == "-u" and build("runtime_env_agent", "/tmp/s")[1] == "-u"
    assert build("runtime_env_agent", "/tmp/s")[1] == "-u"


def test_standin_publishes_the_agent_ports_as_unused_and_leaves_with_its_parent(tmp_path):
    import subprocess
    import sys
    import time

    from svclog.actors import agent_standin

    # a parent that starts the stand-in as the raylet does (agent.py's arguments), then exits
    agent_args = ["agent.py", "--node-id=abc", f"--session-dir={tmp_path}", "--grpc-port=0", "--head"]
    launcher = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-S', {agent_standin.__file__!r}, *{agent_args!r}]); "
        "print(p.pid, flush=True); time.sleep(1.5)"
    )
    parent = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    standin = int(parent.stdout.readline())
    for name in agent_standin.PORT_NAMES:
        path = tmp_path / f"{name}_abc"
        for _ in range(100):
            if path.exists():
                break
            time.sleep(0.05)
        assert path.read_text() == "-1"
    parent.wait(timeout=10)
    for _ in range(60):  # re-parented once the launcher exited: gone within its 1 s poll
        try:
            with open(f"/proc/{standin}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # exited; nobody has reaped it yet
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the stand-in outlived its parent")


def test_local_cluster_frees_unreferenced_objects_promptly(monkeypatch):
    import os

    import ray

    from svclog import launch
    from svclog.config import load_config

    seen: list[dict] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: seen.append(kwargs))
    monkeypatch.setattr(os, "environ", dict(os.environ))  # connect's Serve settings stay in this test
    launch.connect(load_config(None, []))
    # objects freed every 10 ms, and no worker prestarted for a driver that runs no tasks (~80 MB idle)
    assert seen[-1]["_system_config"] == {
        "free_objects_period_milliseconds": 10,
        "prestart_worker_first_driver": False,
        "worker_niceness": 0,
    }
    launch.connect(load_config(None, ["-ray.address=127.0.0.1:6379"]))  # a joined cluster keeps its own settings
    assert "_system_config" not in seen[-1] and seen[-1]["address"] == "127.0.0.1:6379"
