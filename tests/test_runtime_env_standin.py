"""The runtime-env agent stand-in answers the raylet's calls as Ray's agent does for environments of
variables only, in Ray's own protobuf messages, and refuses every other kind with a clear message."""

import json
import os
import subprocess
import sys
import time
import urllib.request

from ray.core.generated import runtime_env_agent_pb2 as pb

from svclog.actors import runtime_env_standin as standin


def _request(env: dict) -> bytes:
    return pb.GetOrCreateRuntimeEnvRequest(
        serialized_runtime_env=json.dumps(env), job_id=b"\x01\x00\x00\x00", source_process="raylet"
    ).SerializeToString()


def test_an_environment_of_variables_gets_the_context_rays_agent_builds():
    reply = pb.GetOrCreateRuntimeEnvReply.FromString(
        standin.answer("/get_or_create_runtime_env", _request({"env_vars": {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}}))
    )
    assert reply.status == pb.AGENT_RPC_STATUS_OK and not reply.error_message
    context = json.loads(reply.serialized_runtime_env_context)
    assert context == {
        "command_prefix": [],
        "env_vars": {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"},
        "py_executable": sys.executable,
        "override_worker_entrypoint": None,
        "java_jars": [],
    }
    # the worker's setup reads it with Ray's own class
    from ray._private.runtime_env.context import RuntimeEnvContext

    assert RuntimeEnvContext.deserialize(reply.serialized_runtime_env_context).env_vars == context["env_vars"]


def test_other_environments_are_refused_with_the_way_back():
    reply = pb.GetOrCreateRuntimeEnvReply.FromString(
        standin.answer("/get_or_create_runtime_env", _request({"pip": ["requests"], "env_vars": {"A": "1"}}))
    )
    assert reply.status == pb.AGENT_RPC_STATUS_FAILED and "['pip']" in reply.error_message
    assert "ray.dashboard: true" in reply.error_message
    bad = pb.GetOrCreateRuntimeEnvReply.FromString(
        standin.answer(
            "/get_or_create_runtime_env",
            pb.GetOrCreateRuntimeEnvRequest(serialized_runtime_env="{").SerializeToString(),
        )
    )
    assert bad.status == pb.AGENT_RPC_STATUS_FAILED and "not JSON" in bad.error_message


def test_delete_and_info_calls_and_unknown_paths():
    delete = pb.DeleteRuntimeEnvIfPossibleRequest(serialized_runtime_env='{"env_vars": {}}').SerializeToString()
    assert (
        pb.DeleteRuntimeEnvIfPossibleReply.FromString(standin.answer("/delete_runtime_env_if_possible", delete)).status
        == 0
    )
    info = standin.answer("/get_runtime_envs_info", pb.GetRuntimeEnvsInfoRequest(limit=10).SerializeToString())
    assert pb.GetRuntimeEnvsInfoReply.FromString(info).total == 0
    assert standin.answer("/nope", b"") is None


def test_decoding_skips_fields_it_does_not_use():
    request = pb.GetOrCreateRuntimeEnvRequest(serialized_runtime_env="{}", source_process="x" * 300)
    request.runtime_env_config.setup_timeout_seconds = 600
    request.runtime_env_config.eager_install = True
    fields = standin.decode_fields(request.SerializeToString())
    assert fields[1] == b"{}" and fields[4] == b"x" * 300


def test_the_process_publishes_its_port_and_serves_http(tmp_path):
    # run as the raylet runs it: isolated, standard library only, with the agent's arguments
    proc = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            os.path.abspath(standin.__file__),
            "/ray/agent/main.py",
            "--node-id=abc",
            "--node-ip-address=127.0.0.1",
            "--runtime-env-agent-port=0",
            f"--session-dir={tmp_path}",
            "--gcs-address=x:1",
        ]
    )
    try:
        port_file = tmp_path / "runtime_env_agent_port_abc"
        deadline = time.monotonic() + 10
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        port = int(port_file.read_text())
        http = urllib.request.Request(
            f"http://127.0.0.1:{port}/get_or_create_runtime_env", data=_request({"env_vars": {"X": "1"}}), method="POST"
        )
        with urllib.request.urlopen(http, timeout=5) as response:
            reply = pb.GetOrCreateRuntimeEnvReply.FromString(response.read())
        assert reply.status == 0 and json.loads(reply.serialized_runtime_env_context)["env_vars"] == {"X": "1"}
    finally:
        proc.kill()
        proc.wait()
