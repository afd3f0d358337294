"""cluster.yaml passes Ray's own cluster-config validation (offline), and broken variants do not.

`ray up` resolves a config with `prepare_config` (merge the provider's defaults.yaml, merge
setup commands, fill per-type worker bounds) and checks it with `validate_config` (Ray's JSON
schema plus head-type and worker-count rules) before it talks to the cloud; both are
called here exactly like that, without network access. The rest checks that the file and
svclog agree: the node types advertise the resources svclog places actors by, the embedded
svclog config loads, and the head starts `svclog serve --address=auto -config.file=...`.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from svclog.actors.options import BACKEND_RESOURCE, READ_RESOURCE, WRITE_RESOURCE, choose_node
from svclog.config import load_config

CLUSTER_YAML = Path(__file__).resolve().parents[1] / "cluster.yaml"


def _raw() -> dict:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def _validated(config: dict) -> dict:
    """What `ray up` does before touching the cloud: prepare, then validate."""
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    return prepared


def _heredoc(commands: list[str], marker: str) -> str:
    for command in commands:
        found = re.search(rf"<<'{marker}'\n(.*?)\n{marker}\b", command, re.DOTALL)
        if found:
            return found.group(1)
    raise AssertionError(f"no here-document {marker} in the head setup commands")


def test_cluster_yaml_passes_ray_validation():
    prepared = _validated(_raw())
    assert prepared["provider"]["type"] == "aws"
    assert prepared["head_node_type"] in prepared["available_node_types"]


def test_node_types_advertise_what_svclog_targets():
    config = _raw()
    types = config["available_node_types"]
    by_resource = {res: name for name, spec in types.items() for res in spec["resources"] if res != "CPU"}
    assert {WRITE_RESOURCE, READ_RESOURCE, BACKEND_RESOURCE} <= set(by_resource)
    for name in by_resource.values():
        assert 0 <= types[name]["min_workers"] <= types[name]["max_workers"]
    assert sum(spec.get("min_workers", 0) for spec in types.values()) <= config["max_workers"]
    assert config["upscaling_speed"] > 0 and config["idle_timeout_minutes"] > 0


def test_embedded_svclog_config_loads_and_matches_the_write_nodes(tmp_path):
    config = _raw()
    path = tmp_path / "svclog.yaml"
    path.write_text(_heredoc(config["head_setup_commands"], "SVCLOG_CONFIG"))
    cfg = load_config(str(path))
    assert cfg.ray.address == "auto"
    assert cfg.schema_config.configs[-1].object_store == "s3"  # every node must see the same chunks
    write_type = next(s for s in config["available_node_types"].values() if WRITE_RESOURCE in s["resources"])
    # one ingester per write node from the start: every replica set spans rf machines
    assert write_type["min_workers"] >= cfg.common.replication_factor
    unit = _heredoc(config["head_setup_commands"], "UNIT")
    assert f"svclog-wait-for-write-nodes.py {write_type['min_workers']}" in unit


def test_head_installs_svclog_and_starts_it_after_ray():
    prepared = _validated(_raw())
    assert any("svclog-src" in command and "pip install" in command for command in prepared["setup_commands"])
    unit = _heredoc(prepared["head_setup_commands"], "UNIT")
    assert re.search(r"ExecStart=\S*svclog serve --address=auto -config.file=\S+", unit)
    assert "Restart=always" in unit
    start = prepared["head_start_ray_commands"]
    ray_start = next(i for i, c in enumerate(start) if "ray start --head" in c)
    svclog_start = next(i for i, c in enumerate(start) if "systemctl restart" in c and "svclog" in c)
    assert ray_start < svclog_start
    assert any("ray start --address=$RAY_HEAD_IP" in c for c in prepared["worker_start_ray_commands"])


def _break_unknown_key(c: dict) -> None:
    c["autoscaling"] = True  # not a cluster-config field


def _break_head_type(c: dict) -> None:
    c["head_node_type"] = "svclog.missing"


def _break_min_workers(c: dict) -> None:
    c["max_workers"] = 2  # below the sum of the types' min_workers


def _break_fractional_resource(c: dict) -> None:
    c["available_node_types"]["svclog.write"]["resources"][WRITE_RESOURCE] = 0.5


def _break_missing_node_config(c: dict) -> None:
    del c["available_node_types"]["svclog.read"]["node_config"]


def _break_commands_type(c: dict) -> None:
    c["head_start_ray_commands"] = "ray start --head"


@pytest.mark.parametrize(
    ("breaks", "reason"),
    [
        (_break_unknown_key, "'autoscaling' was unexpected"),
        (_break_head_type, "head_node_type` must be one of"),
        (_break_min_workers, "smaller than the sum of `min_workers`"),
        (_break_fractional_resource, "0.5 is not of type 'integer'"),
        (_break_missing_node_config, "'node_config' is a required property"),
        (_break_commands_type, "is not of type 'array'"),
    ],
)
def test_broken_configs_are_rejected(breaks, reason):
    config = _raw()
    breaks(config)
    with pytest.raises((jsonschema.ValidationError, ValueError)) as caught:
        _validated(config)
    assert reason in str(caught.value)


# ------------------------------------------------------------ placement over the node types


def _node(node_id: str, cpus: float = 4, alive: bool = True, **custom) -> dict:
    return {"NodeID": node_id, "Alive": alive, "Resources": {"CPU": cpus, **custom}}


def test_ingesters_go_round_robin_to_tagged_write_nodes():
    nodes = [
        _node("head", 2),
        _node("w2", svclog_write=1),
        _node("w1", svclog_write=1),
        _node("r1", svclog_read=1),
        _node("w3", svclog_write=1),
    ]
    assert [choose_node(nodes, WRITE_RESOURCE, i, 1) for i in range(4)] == ["w1", "w2", "w3", "w1"]
    assert choose_node(nodes, READ_RESOURCE, 1, 1, tagged_only=True) == "r1"


def test_untagged_nodes_spread_and_dead_or_small_nodes_are_skipped():
    nodes = [_node("a"), _node("b", alive=False), _node("c"), _node("d", cpus=0.1)]
    assert {choose_node(nodes, WRITE_RESOURCE, i, 0.25) for i in range(4)} == {"a", "c"}


def test_nothing_to_spread_over_leaves_placement_to_ray():
    assert choose_node([_node("only")], WRITE_RESOURCE, 0, 0.25) is None
    assert choose_node([_node("a"), _node("b")], BACKEND_RESOURCE, 0, 0.1, tagged_only=True) is None
