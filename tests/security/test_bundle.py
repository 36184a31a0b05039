"""`trainmedic report --bundle`: secrets planted in every source never reach the archive.

Every shape of the redactor's table (`secret_shapes.SHAPES`) is planted in each source the bundle
reads: environment variables, a saved walk (its launch command, notes, a step's evidence, a
probe's output, its triage), a log given with `--log`, a fake `nvidia-smi` and a fake `dmesg`.
The bundle is built by the real command in a child process; then the archive is opened and
searched, whole and member by member. Markers beside the secrets prove each source did reach the
archive (so the search cannot pass because a source was left out).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from hostile import HOSTILE, leaks
from secret_shapes import SHAPES

ROOT = Path(__file__).resolve().parents[2]
WALK_ID = "20261130T080000-oom-plnt"
OOM = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. ctx: "
SINGLE = [(i, text) for i, (_, text, _) in enumerate(SHAPES) if "\n" not in text]


def one_line(text: str) -> str:
    return text.replace("\n", "\\n")


def fake_program(folder: Path, name: str, output: str, *, sleep: int = 0) -> None:
    data = folder / f"{name}.out"
    data.write_text(output, encoding="utf-8")
    script = folder / name
    pause = f"{shutil.which('sleep')} {sleep}" if sleep else ""
    script.write_text(f"#!/bin/sh\n{pause}\n{shutil.which('cat')} '{data}'\n")
    script.chmod(0o755)


def planted_walk() -> dict:
    texts = [text for _, text, _ in SHAPES]
    return {
        "version": 1, "id": WALK_ID, "tree": "oom", "started": "2026-11-30T08:00:00Z",
        "updated": "2026-11-30T08:05:00Z", "current": "oom", "finished": False,
        "steps": [{"node": "triage#what", "question": "q", "answer": 1, "answer_text": "a",
                   "goto": "oom", "suggested": None,
                   "evidence": ["PLANT-STEP", *texts, HOSTILE]}],
        "stack": [],
        "probes": [{"name": "planted", "status": "warn", "summary": "PLANT-PROBE " + HOSTILE,
                    "facts": {f"f{i}": t for i, t in enumerate(texts)},
                    "evidence": {f"e{i}": t for i, t in enumerate(texts)},
                    "raw": "\n".join(texts)}],
        "triage": {"files": ["rank0.log"], "chosen": 0, "findings": [{
            "signature": "oom", "tree": "oom", "node": None, "summary": "PLANT-TRIAGE",
            "evidence": [{"file": "rank0.log", "line": i + 1, "text": one_line(t)}
                         for i, t in enumerate(texts)]}]},
        "launch_command": "torchrun train.py PLANT-LAUNCH \\\n" + " \\\n".join(texts),
        "notes": "PLANT-NOTES\n" + "\n".join(texts) + HOSTILE,
    }


def build(tmp_path: Path, *args: str, nvsmi_sleep: int = 0, nvsmi: bool = True,
          extra_env: dict | None = None) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    texts = [text for _, text, _ in SHAPES]
    if nvsmi:
        fake_program(fake, "nvidia-smi", "==============NVSMI LOG==============\nPLANT-NVSMI\n"
                     + "\n".join(texts) + "\n" + HOSTILE + "\n", sleep=nvsmi_sleep)
    fake_program(fake, "dmesg", "".join(
        f"[   12.{i:03d}] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, PLANT-DMESG-{i} {text}\n"
        for i, text in SINGLE) + f"[   13.000] NVRM: Xid (PCI:0000:3b:00): 79, {HOSTILE}\n")
    # PATH holds only the fakes: a real nvidia-smi or dmesg (a GPU runner) is not the test's
    env = {**os.environ, "PATH": str(fake),
           "PYTHONPATH": str(ROOT / "src"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "TRAINMEDIC_PROBE_TIMEOUT": "3",
           **{f"TM_PLANT_{i}": text for i, (_, text, _) in enumerate(SHAPES)},
           "HF_TOKEN": SHAPES[0][2], **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "trainmedic", "report", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def planted(tmp_path):
    walks = tmp_path / "state" / "trainmedic" / "walks"
    walks.mkdir(parents=True)
    (walks / f"{WALK_ID}.json").write_text(json.dumps(planted_walk()), encoding="utf-8")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text("".join(f"{OOM}PLANT-LOG-{i} {one_line(text)}\n"
                                            for i, (_, text, _) in enumerate(SHAPES)))
    return tmp_path


def members(archive: Path) -> dict[str, tuple[tarfile.TarInfo, str]]:
    with tarfile.open(archive, "r:gz") as tar:
        return {Path(info.name).name: (info, tar.extractfile(info).read().decode("utf-8"))
                for info in tar.getmembers()}


def test_no_planted_secret_reaches_the_bundle(planted):
    result = build(planted, "--bundle", "out.tar.gz", "--log", "logs")
    assert result.returncode == 0, result.stderr
    archive = planted / "out.tar.gz"
    raw = gzip.decompress(archive.read_bytes()).decode("utf-8", "replace")
    got = members(archive)
    assert set(got) == {"report.md", "probes.json", "nvidia-smi-q.txt", "environment.txt",
                        "versions.json", "kernel-xid-aer.txt", "triage.json", "manifest.json"}
    texts = {name: text for name, (_info, text) in got.items()}
    for name, text in list(texts.items()):  # JSON: the decoded strings too
        if name.endswith(".json"):
            texts[name + " (decoded)"] = json.dumps(json.loads(text), ensure_ascii=False)
    leaked = [(shape, where) for shape, _text, secret in SHAPES
              for where, text in [("archive", raw), *texts.items()] if secret in text]
    assert leaked == []
    assert {name: leaks(text) for name, text in texts.items() if leaks(text)} == {}
    # each source reached the archive, beside its (redacted) secrets
    assert "PLANT-NVSMI" in texts["nvidia-smi-q.txt"]
    assert "PLANT-DMESG-0" in texts["kernel-xid-aer.txt"]
    assert sum(f"PLANT-DMESG-{i} " in texts["kernel-xid-aer.txt"] for i, _ in SINGLE) == \
        len(SINGLE)
    assert "PLANT-LOG-0" in texts["triage.json"]
    assert all(f"TM_PLANT_{i}=" in texts["environment.txt"] for i in range(len(SHAPES)))
    assert "HF_TOKEN=<redacted>" in texts["environment.txt"]
    for marker in ("PLANT-LAUNCH", "PLANT-NOTES", "PLANT-STEP", "PLANT-PROBE", "PLANT-TRIAGE",
                   WALK_ID):
        assert marker in texts["report.md"], marker
    assert "<redacted>" in texts["nvidia-smi-q.txt"] and "<redacted>" in texts["report.md"]


def test_modes_manifest_and_checksums(planted):
    result = build(planted, "--bundle", "out.tar.gz")
    assert result.returncode == 0, result.stderr
    archive = planted / "out.tar.gz"
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    got = members(archive)
    folders = {Path(info.name).parent.name for info, _ in got.values()}
    assert len(folders) == 1 and folders.pop().startswith("trainmedic-bundle-")
    assert all(stat.S_IMODE(info.mode) == 0o600 and info.isfile() and info.uid == 0
               and info.uname == "" for info, _ in got.values())
    manifest = json.loads(got["manifest.json"][1])
    assert manifest["walk"] == WALK_ID and manifest["trainmedic_version"]
    listed = {f["name"]: f for f in manifest["files"]}
    assert set(listed) == set(got) - {"manifest.json"}
    for name, entry in listed.items():
        data = got[name][1].encode("utf-8")
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert {s["name"] for s in manifest["skipped"]} == {"triage.json"} - (
        {"triage.json"} if "triage.json" in got else set())
    assert "triage.json" in got  # the walk's own triage, without --log
    assert "the triage attached to walk" in got["triage.json"][1]


def test_refuses_to_overwrite_without_force_and_never_through_a_link(planted):
    target = planted / "out.tar.gz"
    target.write_text("someone's file")
    refused = build(planted, "--bundle", "out.tar.gz")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "trainmedic: error: out.tar.gz: cannot write: exists and was not written by trainmedic")
    assert target.read_text() == "someone's file"
    assert build(planted, "--bundle", "out.tar.gz", "--force").returncode == 0
    assert tarfile.is_tarfile(target)
    elsewhere = planted / "elsewhere.txt"
    elsewhere.write_text("keep")
    link = planted / "link.tar.gz"
    link.symlink_to(elsewhere)
    linked = build(planted, "--bundle", "link.tar.gz", "--force")
    assert linked.returncode == 2 and "symbolic link" in linked.stderr
    assert elsewhere.read_text() == "keep" and link.is_symlink()


def test_missing_and_hung_programs_become_notes(planted, tmp_path):
    hung = build(planted, "--bundle", "hung.tar.gz", nvsmi_sleep=30,
                 extra_env={"TRAINMEDIC_PROBE_TIMEOUT": "1"})
    assert hung.returncode == 0, hung.stderr
    manifest = json.loads(members(planted / "hung.tar.gz")["manifest.json"][1])
    skipped = {s["name"]: s["why"] for s in manifest["skipped"]}
    assert "timed out" in skipped["nvidia-smi-q.txt"]
    (planted / "bin" / "nvidia-smi").unlink()
    gone = build(planted, "--bundle", "gone.tar.gz", "--log", "logs", nvsmi=False)
    assert gone.returncode == 0, gone.stderr
    manifest = json.loads(members(planted / "gone.tar.gz")["manifest.json"][1])
    assert {s["name"]: s["why"] for s in manifest["skipped"]} == {
        "nvidia-smi-q.txt": "nvidia-smi: not found on PATH"}


@pytest.mark.parametrize(("args", "message"), [
    (["--bundle", "b.tar.gz", "-o", "r.md"], "--bundle writes its own files; leave out -o"),
    (["--log", "logs"], "--log goes with --bundle"),
    (["--bundle", "b.tar.gz", "nosuch"], "no saved walk 'nosuch'"),
    (["--bundle", "b.tar.gz", "--log", "missing.log"], "missing.log"),
])
def test_bad_usage_is_one_line(planted, args, message):
    result = build(planted, *args)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr and not (planted / "b.tar.gz").exists()
