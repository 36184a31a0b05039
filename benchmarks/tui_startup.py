"""Time from process start to the first painted home screen, against a minimal Textual app.

Each app exits itself on Textual's `Ready` event (sent once the first frame is displayed), runs
headless at 80x24 in its own interpreter, and the two are timed alternately over N runs; medians
are compared. Budget (DESIGN.md): at most 1.15x the minimal app.

Both apps run as an installed app does (`_timing.program_env`): byte-code cached in a temporary
PYTHONPYCACHEPREFIX, filled by the warm-up runs, so a checkout under PYTHONDONTWRITEBYTECODE does
not time trainmedic's compiler against Textual's compiled modules; caches and state of their own
(no saved walks; tree cards written by the warm-up run, not emptied by another checkout's run).
The size is fixed because, headless and without a terminal, Textual takes its first size from
Rich (80x25) and the next from the driver (80x24): an app whose first frame comes late is laid
out and painted again for a resize no terminal sends.

    .venv/bin/python benchmarks/tui_startup.py [--runs N] [--trees DIR ...]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import program_env

MINIMAL = """
from textual.app import App
from textual.widgets import Footer, Static

class Minimal(App):
    def compose(self):
        yield Static("hello")
        yield Footer()

    def on_ready(self):
        self.exit()

Minimal().run(headless=True, size=(80, 24))
"""

TRAINMEDIC = """
import sys
from trainmedic.tui.app import TrainmedicApp
from trainmedic.tui.start import build_home_app

class Timed(TrainmedicApp):
    def on_ready(self):
        from textual.widgets import OptionList

        entries = self.screen.query_one(OptionList).option_count
        self.painted = f"{type(self.screen).__name__}:{entries}"
        self.exit()

app = build_home_app(sys.argv[1:], app_class=Timed)
app.run(headless=True, size=(80, 24))
print(app.painted)
"""


def time_once(code: str, args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, timeout=120)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark app failed:\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--trees", action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = program_env(Path(folder))
        time_once(MINIMAL, [], env)  # warm the file and bytecode caches for both
        time_once(TRAINMEDIC, args.trees, env)
        _, painted = time_once(TRAINMEDIC, args.trees, env)
        screen, _, entries = painted.partition(":")
        if screen != "HomeScreen" or int(entries or 0) == 0:
            raise SystemExit(f"first painted frame was {painted}, not the filled home screen")
        minimal: list[float] = []
        ours: list[float] = []
        for _ in range(args.runs):
            minimal.append(time_once(MINIMAL, [], env)[0])
            ours.append(time_once(TRAINMEDIC, args.trees, env)[0])
    m, o = statistics.median(minimal), statistics.median(ours)
    print(f"minimal Textual app : median {m * 1000:7.1f} ms, best {min(minimal) * 1000:7.1f} ms "
          f"over {args.runs} runs")
    print(f"trainmedic home     : median {o * 1000:7.1f} ms, best {min(ours) * 1000:7.1f} ms "
          f"over {args.runs} runs")
    # The best-of ratio is printed too: on a shared, busy machine it moves less than the median.
    print(f"ratio               : {o / m:.3f}x median (budget 1.15x), "
          f"{min(ours) / min(minimal):.3f}x best-of")
    return 0


if __name__ == "__main__":
    sys.exit(main())
