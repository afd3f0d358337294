"""Replica counts: autoscaling on a joined cluster, a fixed count where it could not move."""

from svclog.config import load_config
from svclog.serve.deployments import CLUSTER_MAX_REPLICAS, scaling


def test_local_single_node_gets_a_fixed_replica_count():
    assert scaling(load_config(None, []), 128) == {"num_replicas": 1}


def test_joined_cluster_autoscales_between_one_and_the_cluster_maximum():
    options = scaling(load_config(None, ["-ray.address=auto"]), 128)
    config = options["autoscaling_config"]
    assert (config["min_replicas"], config["max_replicas"]) == (1, CLUSTER_MAX_REPLICAS)
    assert config["target_ongoing_requests"] == 32
