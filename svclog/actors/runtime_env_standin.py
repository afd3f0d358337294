"""What a local start runs in place of Ray's runtime-env agent (see svclog/actors/head.py).

Every raylet starts a runtime-env agent and shares its fate. The agent builds the environments that
actors ask for (pip, conda, working_dir, containers, ...); a local svclog asks for environment
variables only (`ARROW_DEFAULT_MEMORY_POOL` of the ingesters and the backend host), which need no
building: the agent answers them with a context that lists the variables, and the worker's setup
sets them before it execs. The real agent is an aiohttp server with Ray and its plugins imported
(~80 MB RSS); this stand-in answers the same three HTTP calls for such environments and refuses
every other kind with a message that names the way back (`ray.dashboard: true` starts Ray's own
agents). It runs as `python -I -S <this file> <the agent's arguments>`: standard library only (~12 MB).

The calls carry protobuf messages (Ray's runtime_env_agent.proto); the few fields they use are
strings and one enum, encoded here by hand rather than importing protobuf and Ray.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT_NAME = "runtime_env_agent_port"  # the port file the raylet reads, as Ray's persist_port names it
OK, FAILED = 0, 1  # AgentRpcStatus
# What an environment may hold to be answered here: its variables, and the config Ray adds to some.
SUPPORTED_KEYS = frozenset({"env_vars", "config"})


# ------------------------------------------------------------ protobuf wire format (the subset used)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def decode_fields(data: bytes) -> dict[int, bytes | int]:
    """A message's fields by number (the last occurrence wins, as protobuf merges scalars); length-
    delimited fields as bytes, varints as ints, fixed-width fields skipped."""
    fields: dict[int, bytes | int] = {}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields[number], pos = _read_varint(data, pos)
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            fields[number], pos = data[pos : pos + length], pos + length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return fields


def encode_reply(status: int, error_message: str = "", context: str = "") -> bytes:
    """GetOrCreateRuntimeEnvReply / DeleteRuntimeEnvIfPossibleReply: status = 1, error_message = 2,
    serialized_runtime_env_context = 3 (default values left out, as protobuf does)."""
    out = bytearray()
    if status:
        out += _varint(1 << 3) + _varint(status)
    for number, text in ((2, error_message), (3, context)):
        if text:
            raw = text.encode()
            out += _varint(number << 3 | 2) + _varint(len(raw)) + raw
    return bytes(out)


# ------------------------------------------------------------ the calls


def runtime_env_context(serialized_env: str) -> tuple[int, str, str]:
    """(status, error message, serialized context) for GetOrCreateRuntimeEnv: what Ray's agent answers
    for an environment of variables only (its RuntimeEnvContext as JSON)."""
    try:
        env = json.loads(serialized_env) if serialized_env else {}
    except ValueError as err:
        return FAILED, f"runtime env is not JSON: {err}", ""
    if not isinstance(env, dict):
        return FAILED, "runtime env is not a JSON object", ""
    unsupported = sorted(set(env) - SUPPORTED_KEYS)
    if unsupported:
        return (
            FAILED,
            f"runtime_env fields {unsupported} need Ray's runtime-env agent, which a local svclog start "
            "leaves out (it supports env_vars only); set ray.dashboard: true to start Ray's own agents",
            "",
        )
    env_vars = env.get("env_vars") or {}
    if not isinstance(env_vars, dict) or not all(isinstance(v, str) for v in env_vars.values()):
        return FAILED, "runtime_env env_vars must map names to strings", ""
    context: dict[str, object] = {
        "command_prefix": [],
        "env_vars": env_vars,
        "py_executable": sys.executable,
        "override_worker_entrypoint": None,
        "java_jars": [],
    }
    return OK, "", json.dumps(context)


def answer(path: str, body: bytes) -> bytes | None:
    """The reply body for one call, or None for a path the agent does not serve."""
    if path == "/get_or_create_runtime_env":
        serialized = decode_fields(body).get(1, b"")
        status, error, context = runtime_env_context(serialized.decode() if isinstance(serialized, bytes) else "")
        return encode_reply(status, error, context)
    if path == "/delete_runtime_env_if_possible":
        return encode_reply(OK)  # nothing was built, nothing to delete
    if path == "/get_runtime_envs_info":
        return b""  # no environments kept (an empty GetRuntimeEnvsInfoReply)
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the raylet keeps its connection open

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = answer(self.path, body)
        if reply is None:
            self.send_response(404)
            reply = b""
        else:
            self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet: the raylet logs failures
        pass


# ------------------------------------------------------------ process


def agent_arguments(argv: list[str]) -> dict[str, str]:
    """`--name=value` arguments of the agent's command line, by name."""
    return dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)


def publish_port(session_dir: str, node_id: str, port: int) -> None:
    """The port file the raylet waits for, written the way persist_port writes it (atomically)."""
    path = os.path.join(session_dir, f"{PORT_NAME}_{node_id}")
    with open(path + ".tmp", "w") as handle:
        handle.write(str(port))
    os.replace(path + ".tmp", path)


def exit_with_parent(poll_s: float = 1.0) -> None:
    """Exit once the process that started this one (the raylet) has exited (we are re-parented)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(0)


def main(argv: list[str]) -> None:
    args = agent_arguments(argv)
    port = int(args.get("runtime-env-agent-port") or 0)
    family, _, _, _, address = socket.getaddrinfo(args.get("node-ip-address", "127.0.0.1"), port)[0]

    class Server(ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

    server = Server((str(address[0]), int(address[1])), Handler)
    publish_port(args["session-dir"], args["node-id"], server.server_address[1])
    threading.Thread(target=exit_with_parent, name="parent-watch", daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
