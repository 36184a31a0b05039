"""The probes screen fills in row by row as results arrive (F10), and says where the facts were
read (F21)."""

from __future__ import annotations

import threading

from tui_helpers import make_app, run, screen_text

from trainmedic.probes.base import ProbeResult
from trainmedic.probes.registry import PROBES
from trainmedic.tui.screens.probes import ProbesScreen


class SlowGpuRunner:
    """A streaming runner: every probe but `gpu` answers at once; `gpu` waits to be released
    (as a hung nvidia-smi runs out its timeout)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, names, context):
        return list(self.stream(names, context))

    def stream(self, names, _context):
        for name in PROBES:
            if name != "gpu":
                yield ProbeResult(name, "ok", f"{name} answered", source="this shell"
                                  if name == "env" else "")
        self.release.wait(30)
        yield ProbeResult("gpu", "fail", "nvidia-smi hung (timed out after 10s)")


def table(app) -> str:
    return "\n".join(screen_text(app))


def test_rows_fill_in_before_the_slowest_probe_is_back():
    runner = SlowGpuRunner()

    async def go():
        app = make_app(probe_runner=runner)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press("ctrl+r")
            for _ in range(20):  # the fast rows arrive while gpu is still out
                await pilot.pause(0.05)
                if "versions answered" in table(app):
                    break
            assert isinstance(app.screen, ProbesScreen)
            text = table(app)
            assert "env answered" in text and "read from this shell" in text
            assert "gpu" in text and "running…" in text  # gpu's row is there, still running
            assert "hung" not in text
            runner.release.set()
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = table(app)
            assert "FAIL" in text and "nvidia-smi hung" in text and "running…" not in text
            # rows keep the registry's order: gpu first, though it came back last
            assert text.index("gpu") < text.index("env answered")
    run(go())
