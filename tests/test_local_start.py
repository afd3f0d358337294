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
