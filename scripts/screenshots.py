"""Drive the app headless and save SVG screenshots of its main screens into `screenshots/`.

    .venv/bin/python scripts/screenshots.py [--out screenshots] [--size 100x32]

Uses the built-in trees; probes are replaced by stub results (so the pictures show a suggestion
with its evidence on any machine) and saved walks go to a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASTED_ERROR = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has "
    "a total capacity of 79.11 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
    "process has 78.04 GiB memory in use. Of the allocated memory 71.23 GiB is allocated by "
    "PyTorch, and 5.87 GiB is reserved by PyTorch but unallocated."
)


def stub_probes(names, _context=None):
    """What a busy node might report: a second process on GPU 3, default allocator settings."""
    from trainmedic.probes.base import ProbeResult

    known = {
        "gpu-processes": ProbeResult(
            "gpu-processes", "warn", "GPU 3 is shared by 2 compute processes",
            facts={"count": 9, "max_per_gpu": 2, "total_memory_mib": 652288.0},
            evidence={"max_per_gpu": "GPU 3: pid 48211 (python, 78.0 GiB) and pid 1907 "
                                     "(jupyter, 1.2 GiB)"}),
        "env": ProbeResult(
            "env", "ok", "no myth variables; NCCL_DEBUG unset",
            facts={"expandable_segments": False, "nccl_debug": "", "myth_count": 0},
            evidence={"expandable_segments": "PYTORCH_CUDA_ALLOC_CONF is not set"}),
    }
    from trainmedic.probes.base import unavailable

    return [known.get(n) or unavailable(n, "not run for this screenshot") for n in names or []]


SPIKE_LOG = "tests/fixtures/tui/megatron_spike_synthesised.log"
MEMORY_SCRIPT = "tests/fixtures/memory/megatron_llama3_8b_h100_fp8.sh"


def save_stub_cluster_result() -> None:
    """A 16-node sweep (every node the healthy fixture, node07 with a GPU fallen off the bus),
    aggregated as `trainmedic probe --nodes` does and saved as the last result, 12 min old."""
    import copy
    import json
    from datetime import UTC, datetime, timedelta

    from trainmedic.cluster.aggregate import aggregate
    from trainmedic.cluster.fanout import FanoutRun, NodeAnswer
    from trainmedic.cluster.store import save_last_result

    text = (ROOT / "tests/fixtures/cluster/healthy-node.json").read_text().split("\n", 1)[1]
    healthy = json.loads(text)
    hosts = [f"node{i:02d}" for i in range(1, 17)]
    answers = []
    for host in hosts:
        payload = copy.deepcopy(healthy)
        payload["host"] = host
        if host == "node07":
            for probe in payload["probes"]:
                if probe["name"] == "gpu":
                    probe["facts"].update(count=7, missing=1)
                if probe["name"] == "kernel-xid":
                    probe["facts"].update(count=1, codes=[79], fatal=True, fallen_off_bus=True)
        answers.append(NodeAnswer(host, "ok", payload, "", 0.8))
    result = aggregate(FanoutRun("srun", hosts, answers, [], 4.2), "slurm")
    result.time = (datetime.now(UTC) - timedelta(minutes=12)).isoformat(timespec="seconds")
    save_last_result(result)


async def shoot(out: Path, size: tuple[int, int]) -> list[Path]:
    from trainmedic.trees import Ref, load_forest_or_fail
    from trainmedic.tui.app import TrainmedicApp

    forest = load_forest_or_fail([])
    saved: list[Path] = []

    async def settle(pilot) -> None:
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.3)

    def save(app, name: str) -> None:
        app.save_screenshot(filename=f"{name}.svg", path=str(out))
        saved.append(out / f"{name}.svg")

    app = TrainmedicApp(forest, probe_runner=stub_probes)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        save(app, "home")
        app.open_walk("oom")
        await settle(pilot)
        save(app, "question")
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        save(app, "fix")
        await pilot.press("i")
        await settle(pilot)
        save(app, "report")
        app.pop_screen()
        app.open_browse(Ref("oom", "unallocated"))
        await settle(pilot)
        save(app, "browse")
        app.go_home()
        app.action_triage()
        await settle(pilot)
        app.screen.query_one("#paste").text = PASTED_ERROR
        app.screen.action_analyse()
        await settle(pilot)
        save(app, "triage")
        app.pop_screen()
        app.action_triage()  # the same screen: it keeps the last analysis
        await settle(pilot)
        app.screen.query_one("#paste").text = ""
        app.screen.query_one("#log-path").value = SPIKE_LOG
        app.screen.action_analyse()
        await settle(pilot)
        save(app, "triage-loss")
        await pilot.press("enter")  # the spike's fix, with the commands the log fills in
        await settle(pilot)
        save(app, "fix-from-log")
        app.go_home()
        app.open_walk("hardware#gpu-reset")  # a marked command, asked for twice
        await settle(pilot)
        command = next(s.key for s in app.screen.query_one("#fix").view.steps if s.mark)
        app.screen.query_one("#fix").block(command).scroll_visible(animate=False)
        await pilot.press(str(command))
        await settle(pilot)
        save(app, "danger")
        app.go_home()
        app.action_memory()
        await settle(pilot)
        app.screen.query_one("#launch").text = MEMORY_SCRIPT
        app.screen.action_estimate()
        await settle(pilot)
        save(app, "memory")
        app.go_home()
        save_stub_cluster_result()
        app.action_cluster()
        await settle(pilot)
        save(app, "cluster")
        app.go_home()
        app.action_help()
        await settle(pilot)
        save(app, "help")
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    parser.add_argument("--size", default="100x32")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as state:
        os.environ["XDG_STATE_HOME"] = state  # no real saved walks in the pictures
        os.chdir(ROOT)  # the log path shown in the triage picture is relative
        for path in asyncio.run(shoot(out, (width, height))):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
