"""Freed memory goes back once a process idles after work: the decision, and the object store's
pages a process stops counting (a real shared mapping, as Ray's store is)."""

import mmap
import os
import subprocess
import sys
import textwrap

import pytest

from svclog.actors.idle_release import IdleRelease
from svclog.actors.shared_pages import release_object_store_pages, shared_mappings


class Clocks:
    def __init__(self):
        self.cpu = 0.0
        self.now = 0.0

    def period(self, cpu_used: float, seconds: float = 1.0) -> None:
        self.cpu += cpu_used
        self.now += seconds


def _idle_release(clocks: Clocks, releases: list) -> IdleRelease:
    return IdleRelease(
        release=lambda: releases.append(clocks.now),
        idle_share=0.05,
        worked_cpu_s=0.5,
        busy_release_s=60.0,
        cpu_seconds=lambda: clocks.cpu,
        clock=lambda: clocks.now,
    )


def test_releases_once_when_the_process_idles_after_work():
    clocks, releases = Clocks(), []
    idle = _idle_release(clocks, releases)
    for _ in range(5):  # busy: a core's worth a second
        clocks.period(1.0)
        assert not idle.tick()
    clocks.period(0.01)  # the work stopped
    assert idle.tick() and releases == [6.0]
    for _ in range(40):  # idle afterwards: nothing more to hand back (for a while, see below)
        clocks.period(0.01)
        assert not idle.tick()
    assert releases == [6.0]


def test_background_crumbs_alone_release_rarely():
    clocks, releases = Clocks(), []
    idle = _idle_release(clocks, releases)
    for _ in range(120):  # Ray's threads: 1% of a core, never 0.5 s of work within a minute
        clocks.period(0.01)
        idle.tick()
    assert len(releases) <= 3


def test_a_process_that_never_idles_releases_every_busy_period():
    clocks, releases = Clocks(), []
    idle = _idle_release(clocks, releases)
    for _ in range(150):
        clocks.period(0.9)
        idle.tick()
    assert releases == [61.0, 122.0]


def test_a_failing_release_is_logged_and_counted_as_done():
    clocks = Clocks()

    def fail():
        raise OSError("no")

    idle = IdleRelease(release=fail, cpu_seconds=lambda: clocks.cpu, clock=lambda: clocks.now)
    clocks.period(1.0)
    idle.tick()
    clocks.period(0.0)
    assert idle.tick() and idle.releases == 1
    clocks.period(0.0)
    assert not idle.tick()


def test_shared_mappings_finds_only_the_stores_shared_file():
    maps = textwrap.dedent(
        """\
        7eff80000000-7f0140000000 rw-s 00000000 00:1b 2379                       /dev/shm/plasma1LmJ9y (deleted)
        7f0140000000-7f0140200000 rw-p 00000000 00:00 0
        7f0150000000-7f0150001000 r--p 00000000 08:01 1234                       /tmp/plasma-private
        7f0160000000-7f0160100000 rw-s 00000000 00:1b 99                         /dev/shm/other
        """
    )
    assert shared_mappings(maps) == [(0x7EFF80000000, 0x7F0140000000 - 0x7EFF80000000)]


def _shmem_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssShmem:"))


def test_released_pages_leave_the_rss_and_keep_their_bytes(tmp_path):
    if not os.path.isdir("/dev/shm"):
        pytest.fail("the service runs on Linux, where /dev/shm holds Ray's object store")
    size = 32 << 20
    path = f"/dev/shm/plasma-svclog-test-{os.getpid()}"
    with open(path, "w+b") as file:
        os.unlink(path)  # as Ray's store: mapped, deleted
        file.truncate(size)
        view = mmap.mmap(file.fileno(), size, flags=mmap.MAP_SHARED)
        try:
            for offset in range(0, size, 4096):
                view[offset] = offset // 4096 % 251
            before = _shmem_kib()
            released = release_object_store_pages(prefix=f"plasma-svclog-test-{os.getpid()}")
            after = _shmem_kib()
            assert released == size
            assert before - after >= (size >> 10) * 0.9, (before, after)
            # the bytes are still there: read back through the same mapping
            assert all(view[offset] == offset // 4096 % 251 for offset in range(0, size, 4096))
        finally:
            view.close()


def test_a_process_without_the_store_releases_nothing():
    assert release_object_store_pages(prefix="no-such-store-here") == 0


def test_the_serve_command_gives_its_process_jemalloc(tmp_path):
    # pyarrow fixes its default pool when it is imported: the driver's choice (options.driver_arrow_pool)
    # only applies if nothing the command ran before imported it
    code = textwrap.dedent(
        """
        import sys, types
        def start(cfg, host_gateway=False):
            import os, pyarrow as pa
            print(pa.default_memory_pool().backend_name)
            raise SystemExit(0)
        sys.modules["svclog.launch"] = types.SimpleNamespace(start=start)
        from svclog.cli import main
        main(["serve", "-server.http-listen-port=3999"])
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.stdout.split() == ["jemalloc"], out.stderr[-2000:]


def test_arenas_are_limited_here_and_for_the_processes_started_from_here():
    code = (
        "import os; from svclog.actors.malloc_trim import limit_malloc_arenas; limit_malloc_arenas(); "
        "print(os.environ['MALLOC_ARENA_MAX'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "2"
    env["MALLOC_ARENA_MAX"] = "4"  # an operator's choice stays
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "4"
