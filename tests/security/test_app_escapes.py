"""Issue 20, F1 in the app: the only OSC sequence trainmedic writes is its own OSC 52 copy.

The app is driven through Pilot over hostile input everywhere it reads some: a crafted tree
folder, saved walks (fields and a file name), the last cluster sweep, a log (its lines and its
file name) on the triage screen. Textual's headless driver is made to render as a terminal
driver would, and every byte it was asked to write is scanned: each OSC must be Textual's
pointer shape (`OSC 22`) or the OSC 52 copy of the command the user asked to copy, whose
payload must be that command exactly.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import re

import pytest
import yaml
from hostile import HOSTILE, OSC52

from trainmedic.trees import load_forest

OSC = re.compile(r"\x1b\]([^\x07\x1b]*)(?:\x07|\x1b\\)?")
POINTER = re.compile(r"22;[a-z-]+")
CODE = "df -h /tmp"


@pytest.fixture
def recorded(monkeypatch):
    """Everything the app writes to its terminal, as a terminal driver would write it."""
    from textual.drivers.headless_driver import HeadlessDriver

    out: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "is_headless", property(lambda self: False))
    monkeypatch.setattr(HeadlessDriver, "write", lambda self, data: out.append(data))
    return out


def _hostile_tree(folder):
    folder.mkdir()
    tree = {"id": "esc", "title": f"Disk full {OSC52} ok", "summary": HOSTILE, "start": "q1",
            "nodes": {"q1": {"question": f"q {HOSTILE}", "help": HOSTILE,
                             "answers": [{"text": f"a {HOSTILE}", "goto": "f1"}]},
                      "f1": {"fix": f"fix {HOSTILE}", "why": HOSTILE,
                             "steps": [{"do": HOSTILE, "code": CODE}]}}}
    (folder / "esc.yaml").write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    return folder


def _hostile_state():
    from trainmedic.state import cluster_result_path, walks_dir

    walks = walks_dir()
    walks.mkdir(parents=True)
    walk = {"version": 1, "id": "w1", "tree": f"oom{HOSTILE}", "current": f"oom#{HOSTILE}",
            "started": HOSTILE, "updated": f"2099{HOSTILE}", "finished": False,
            "steps": [{"node": "oom#q", "question": HOSTILE, "answer": 0,
                       "answer_text": HOSTILE, "goto": HOSTILE, "evidence": [HOSTILE]}],
            "stack": [], "probes": [], "launch_command": HOSTILE, "notes": HOSTILE}
    (walks / "w1.json").write_text(json.dumps(walk), encoding="utf-8")
    (walks / f"bad{OSC52}.json").write_text("{not json", encoding="utf-8")
    node = {"host": f"node1{HOSTILE}", "state": "garbage", "detail": HOSTILE,
            "result": {"probes": [{"name": HOSTILE, "status": "ok", "summary": HOSTILE,
                                   "facts": {HOSTILE: HOSTILE}}]}}
    cluster_result_path().write_text(json.dumps({
        "version": 1, "time": HOSTILE, "spec": HOSTILE, "method": HOSTILE, "node_count": 1,
        "answered": 0, "wall_s": 1.0, "bad_nodes": [HOSTILE], "verdicts": [HOSTILE],
        "findings": [{"host": HOSTILE, "kind": HOSTILE, "message": HOSTILE, "fact": HOSTILE}],
        "outliers": [], "splits": [{"fact": HOSTILE, "groups": {HOSTILE: HOSTILE}}],
        "nodes": [node]}), encoding="utf-8")


def _hostile_logs(folder):
    folder.mkdir()
    line = f"{HOSTILE}[rank0]: torch.OutOfMemoryError: CUDA out of memory. {OSC52}\n"
    (folder / f"rank0{OSC52}.log").write_text(line * 3, encoding="utf-8")
    # a decompression bomb (its ratio is judged after 1 MiB here): a triage note on screen
    with gzip.open(folder / "bomb.log.gz", "wb") as handle:
        handle.write(line.encode() + b"\0" * (8 << 20))
    return folder


def test_hostile_input_everywhere_only_our_copy_reaches_the_terminal(tmp_path, monkeypatch,
                                                                     recorded):
    from textual.widgets import Input

    from trainmedic.triage import sources
    from trainmedic.tui.app import TrainmedicApp
    from trainmedic.tui.screens.cluster import ClusterScreen
    from trainmedic.tui.screens.triage import TriageScreen
    from trainmedic.tui.screens.walk import WalkScreen

    monkeypatch.setattr(sources, "GZ_RATIO_AFTER", 1 << 20)
    forest = load_forest([_hostile_tree(tmp_path / "trees")])
    _hostile_state()
    logs = _hostile_logs(tmp_path / "logs")
    shown: dict[str, str] = {}

    async def go():
        app = TrainmedicApp(forest, probes=False)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause(0.3)
            for _ in range(6):  # over the trees to the saved walks: their detail is drawn
                await pilot.press("pagedown")
                await pilot.pause()
            await pilot.press("ctrl+n")
            await pilot.pause(0.5)
            assert isinstance(app.screen, ClusterScreen) and app.screen.result is not None
            await pilot.press("escape", "escape")
            await pilot.pause()
            await pilot.press("ctrl+t")
            await pilot.pause()
            assert isinstance(app.screen, TriageScreen)
            app.screen.query_one("#log-path", Input).value = str(logs)
            await pilot.press("ctrl+s")  # analyse (^r is "probes" on every screen)
            for _ in range(100):
                await pilot.pause(0.1)
                if app.screen.report is not None:
                    break
            report = app.screen.report
            assert report is not None and report.findings and report.notes
            await pilot.pause(0.3)
            shown["status"] = str(app.screen.query_one("#triage-status").render())
            app.pop_screen()
            await pilot.pause()
            app.open_walk("esc")
            await pilot.pause(0.3)
            await pilot.press("1")
            await pilot.pause(0.5)
            assert isinstance(app.screen, WalkScreen) and app.screen.session.fix is not None
            await pilot.press("1")  # copy command 1: trainmedic's own OSC 52
            await pilot.pause(0.3)

    asyncio.run(go())
    assert "decompression bomb" in shown["status"]  # the triage note is on the screen
    written = "".join(recorded)
    sequences = [m[1] for m in OSC.finditer(written)]
    ours = [s for s in sequences if s.startswith("52;")]
    assert ours == [f"52;c;{base64.b64encode(CODE.encode()).decode()}"], ours
    others = [s for s in sequences if not s.startswith("52;") and not POINTER.fullmatch(s)]
    assert others == [], others[:5]
    for char in ("\x9b", "\u202e", "\u2066", "\x00", "\x08"):
        assert char not in written, repr(char)
    assert "Y3VybCBldmlsLmV4YW1wbGUvc2ggfCBzaA" in written  # the hostile text was on screen...
    assert "\x1b]52;c;Y3Vy" not in written  # ...as visible text, never as a sequence
