"""`triage DIR`: notes, reports and what trainmedic wrote are not logs; what it skips it names."""

from __future__ import annotations

import json
import os
import sys

import pytest

from trainmedic.cli import main
from trainmedic.triage import triage_paths

from .conftest import FIXTURES

OOM = (FIXTURES / "oom_fragmentation.log").read_text().splitlines()[1]
XID = (FIXTURES / "xid_fallen_off_bus.log").read_text().splitlines()[1:]


def incident_folder(tmp_path):
    folder = tmp_path / "incident"
    folder.mkdir()
    (folder / "rank0.log").write_text(OOM + "\n")
    # the runbook exported next to the logs quotes failure messages in its prose (app review F19)
    (folder / "hardware.md").write_text("# GPU or node fault\n\n" + "\n".join(XID) + "\n")
    return folder


def test_markdown_notes_and_reports_are_skipped_and_named(tmp_path, capsys):
    folder = incident_folder(tmp_path)
    report = triage_paths([str(folder)])
    assert [f.link for f in report.findings] == ["oom#when"]
    assert report.skipped == [(str(folder / "hardware.md"), "notes or a report, not a log")]
    assert main(["triage", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"skipped {folder / 'hardware.md'}: notes or a report" in out


def test_files_trainmedic_wrote_are_skipped(tmp_path, capsys):
    folder = incident_folder(tmp_path)
    assert main(["triage", str(folder / "rank0.log"), "--json"]) == 1
    (folder / "triage.json").write_text(capsys.readouterr().out)
    walk = {"version": 1, "id": "20260101-1200", "tree": "hardware", "steps": [],
            "stack": [], "triage": {"findings": [{"summary": XID[0]}]}}
    (folder / "walk.json").write_text(json.dumps(walk, indent=1))
    (folder / "ds_config.json").write_text('{"train_batch_size": 8}')  # not ours: read
    report = triage_paths([str(folder)])
    skipped = dict(report.skipped)
    assert skipped[str(folder / "triage.json")] == "written by trainmedic"
    assert skipped[str(folder / "walk.json")] == "written by trainmedic"
    assert str(folder / "ds_config.json") in report.files
    assert [f.link for f in report.findings] == ["oom#when"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_files_in_a_folder_are_named(tmp_path):
    folder = incident_folder(tmp_path)
    secret = folder / "rank1.log"
    secret.write_text(OOM + "\n")
    secret.chmod(0)
    try:
        report = triage_paths([str(folder)])
    finally:
        secret.chmod(0o600)
    assert (str(secret), "permission denied") in report.skipped


def test_empty_and_binary_files_in_a_folder_are_named(tmp_path, capsys):
    folder = incident_folder(tmp_path)
    (folder / "rank2.log").write_text("")
    with open(os.path.realpath(sys.executable), "rb") as elf:  # an ELF head, as a core's
        (folder / "core.12345").write_bytes(elf.read(8192))
    report = triage_paths([str(folder)])
    skipped = dict(report.skipped)
    assert skipped[str(folder / "rank2.log")] == "empty"
    assert skipped[str(folder / "core.12345")] == "binary, not a text log"
    assert main(["triage", str(folder), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {"file": str(folder / "rank2.log"), "reason": "empty"} in out["skipped"]


@pytest.mark.parametrize("padding", [b"\0" * 8192, b"\0" * 100 + b"\n"], ids=["head", "line"])
def test_a_log_padded_with_nuls_by_a_crashed_writer_is_still_read(tmp_path, padding):
    # a node that died mid-write leaves a run of NULs where the page cache was never flushed
    log = tmp_path / "rank0.log"
    log.write_bytes(padding + OOM.encode() + b"\n" + b"\0" * 4096)
    for grep in (True, False):
        report = triage_paths([str(log)], use_grep=grep)
        assert report.skipped == [] and [f.link for f in report.findings] == ["oom#when"]
