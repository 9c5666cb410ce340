"""A command run inside a fresh cgroup v1 memory cap (/sys/fs/cgroup/memory), for the
benchmarks that show what fits: the cgroup is removed afterwards, also on failure."""
import os
import subprocess
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup/memory")


def run_capped(cmd, limit_bytes, name, env=None):
    """Runs `cmd` (and every process it starts) under a memory limit of `limit_bytes`;
    returns its exit code (137 when the cap killed it)."""
    group = CGROUP_ROOT / f"trident-bench-{os.getpid()}-{name}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        # The shell joins the cgroup, then becomes the command.
        script = f'echo $$ > {group}/cgroup.procs && exec "$@"'
        return subprocess.run(["sh", "-c", script, "sh"] + cmd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
