"""A simulated cluster for the fan-out tests: fake `srun`, `ssh`, `pdsh`, `squeue` on PATH.

Each node is a file in a folder: `<host>.json` (what `trainmedic probe --json` prints there) or
`<host>.mode` holding `hang`, `garbage` or `unreachable`. The fakes are small Python scripts run
by this interpreter; they log their argv (one JSON line per call) so tests can check the exact
command line trainmedic built.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cluster"


def healthy_payload(host: str) -> dict:
    """The healthy-node fixture (its first line is the provenance comment) for one host."""
    text = (FIXTURES / "healthy-node.json").read_text().split("\n", 1)[1]
    payload = json.loads(text)
    payload["host"] = host
    return payload


def patched(host: str, **changes: dict) -> dict:
    """A healthy payload with some facts changed: patched("n1", gpu={"count": 7})."""
    payload = copy.deepcopy(healthy_payload(host))
    for probe in payload["probes"]:
        key = probe["name"].replace("-", "_")
        if key in changes:
            probe["facts"].update(changes[key])
    return payload


_PRELUDE = f"""#!{sys.executable}
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / "src")!r})
CLUSTER = Path(os.environ["FAKE_CLUSTER"])
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(dict(pid=os.getpid(), argv=sys.argv)) + "\\n")

def mode(host):
    path = CLUSTER / (host + ".mode")
    return path.read_text().strip() if path.exists() else "json"

def stdout_of(host):
    path = CLUSTER / (host + ".json")
    return path.read_text() if path.exists() else ""
"""

_SRUN = _PRELUDE + r"""
from trainmedic.cluster.hostlist import expand
args = sys.argv[1:]
opts = {}
while args and args[0].startswith("--"):
    key, _, value = args.pop(0)[2:].partition("=")
    opts[key] = value
nodes = expand(opts["nodelist"])
if opts.get("jobid") not in (None, os.environ.get("FAKE_JOB", "")):
    print("srun: error: Unable to confirm allocation for job " + opts["jobid"] +
          ": Invalid job id specified", file=sys.stderr)
    sys.exit(1)
width = len(str(len(nodes) - 1))
hang = False
failed = False
for task, host in enumerate(nodes):
    kind = mode(host)
    if kind == "json":
        for line in stdout_of(host).splitlines():
            print(f"{task:>{width}}: {line}")
    elif kind == "garbage":
        print(f"{task:>{width}}: <html><body>502 Bad Gateway</body></html>")
    elif kind == "unreachable":
        failed = True
        print(f"srun: error: Task launch for StepId=4242.3 failed on node {host}: "
              "Communication connection failure", file=sys.stderr)
    elif kind == "hang":
        hang = True
    sys.stdout.flush()
if failed:
    print("srun: error: Application launch failed: Communication connection failure",
          file=sys.stderr)
sys.stderr.flush()
if hang:
    time.sleep(600)
sys.exit(0)
"""

_SSH = _PRELUDE + r"""
args = sys.argv[1:]
while args and args[0].startswith("-"):
    flag = args.pop(0)
    if flag in ("-o", "-l", "-J", "-p", "-i"):
        args.pop(0)
host = args.pop(0)
kind = mode(host)
if kind == "unreachable":
    print(f"ssh: connect to host {host} port 22: Connection refused", file=sys.stderr)
    sys.exit(255)
if kind == "hang":
    time.sleep(600)
if kind == "garbage":
    print("<html><body>502 Bad Gateway</body></html>")
    sys.exit(0)
sys.stdout.write(stdout_of(host))
sys.exit(0)
"""

_PDSH = _PRELUDE + r"""
from trainmedic.cluster.hostlist import expand
args = sys.argv[1:]
opts = {}
while args and args[0].startswith("-"):
    flag = args.pop(0)
    opts[flag] = args.pop(0)
command_timeout = float(opts["-u"])
hung = []
for host in expand(opts["-w"]):
    kind = mode(host)
    if kind == "json":
        for line in stdout_of(host).splitlines():
            print(f"{host}: {line}")
    elif kind == "garbage":
        print(f"{host}: <html><body>502 Bad Gateway</body></html>")
    elif kind == "unreachable":
        print(f"{host}: ssh: connect to host {host} port 22: Connection refused",
              file=sys.stderr)
        print(f"pdsh@login1: {host}: ssh exited with exit code 255", file=sys.stderr)
    elif kind == "hang":
        hung.append(host)
sys.stdout.flush()
if hung:
    time.sleep(command_timeout)
    for host in hung:
        print(f"pdsh@login1: {host}: command timeout", file=sys.stderr)
sys.exit(1 if hung else 0)
"""

_SQUEUE = _PRELUDE + r"""
job = sys.argv[sys.argv.index("-j") + 1]
if job != os.environ.get("FAKE_JOB"):
    print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
    sys.exit(1)
print(os.environ["FAKE_JOB_NODELIST"])
"""


class FakeCluster:
    """Writes nodes and fake tools under tmp_path and puts them first on PATH."""

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.root = tmp_path / "cluster"
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "calls.jsonl"
        self.root.mkdir()
        self.bin.mkdir()
        for name, body in (("srun", _SRUN), ("ssh", _SSH), ("squeue", _SQUEUE), ("pdsh", _PDSH)):
            path = self.bin / name
            path.write_text(body)
            path.chmod(0o755)
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        monkeypatch.setenv("FAKE_CLUSTER", str(self.root))
        monkeypatch.setenv("FAKE_LOG", str(self.log))
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
        monkeypatch.delenv("TRAINMEDIC_REMOTE", raising=False)
        monkeypatch.delenv("TRAINMEDIC_SRUN_ARGS", raising=False)
        monkeypatch.delenv("TRAINMEDIC_SSH_ARGS", raising=False)
        monkeypatch.delenv("TRAINMEDIC_FANOUT", raising=False)

    def node(self, host: str, payload: dict | None = None, *, mode: str = "json",
             indent: int | None = None) -> None:
        if mode != "json":
            (self.root / f"{host}.mode").write_text(mode)
            return
        text = json.dumps(payload or healthy_payload(host), indent=indent)
        (self.root / f"{host}.json").write_text(text + "\n")

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line)["argv"] for line in self.log.read_text().splitlines()]

    def pids(self) -> list[int]:
        if not self.log.exists():
            return []
        return [json.loads(line)["pid"] for line in self.log.read_text().splitlines()]


HEALTHY = [f"node{i:02d}" for i in range(1, 17)]

# host -> (how to build it, the words its verdict must contain)
FAULTS: dict[str, tuple[dict, tuple[str, ...]]] = {
    "gpu-a1": ({"gpu": {"count": 7, "missing": 1}, "topology": {"gpu_count": 7}},
               ("7 of 8 GPUs", "drain")),
    "gpu-a2": ({"gpu": {"driver_version": "535.183.01"}}, ("driver 535.183.01",)),
    "gpu-a3": ({"versions": {"nccl": "2.18.3"}}, ("nccl 2.18.3",)),
    "gpu-a4": ({"infiniband": {"ports_down": 1, "min_rate_gbps": 0.0}},
               ("1 of 8 IB ports down", "drain")),
    "gpu-a5": ({"env": {"ib_disabled": True}}, ("ib_disabled=True", "environment")),
    "gpu-a6": ({"gpu_processes": {"count": 1, "max_per_gpu": 1, "total_memory_mib": 30720.0},
                "gpu": {"max_memory_used_mib": 30720.0, "max_memory_fraction": 0.38}},
               ("stray process",)),
    "gpu-a7": ({"gpu": {"count": 7, "missing": 1},
                "kernel_xid": {"count": 1, "codes": [79], "fatal": True, "fallen_off_bus": True}},
               ("7 of 8 GPUs", "Xid 79", "drain")),
}
SPECIAL = {"gpu-a8": "hang", "gpu-a9": "garbage", "gpu-a10": "unreachable"}


def build_cluster(cluster: FakeCluster, *, indent: int | None = None) -> list[str]:
    """16 healthy nodes, one per fault, a hung one, a garbage one, an unreachable one."""
    for host in HEALTHY:
        cluster.node(host, indent=indent)
    for host, (changes, _words) in FAULTS.items():
        cluster.node(host, patched(host, **changes), indent=indent)
    for host, mode in SPECIAL.items():
        cluster.node(host, mode=mode)
    return [*HEALTHY, *FAULTS, *SPECIAL]
