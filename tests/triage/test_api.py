"""The library API the TUI and reports call: triage_text / triage_paths / to_dict."""

from __future__ import annotations

import json
import os

from trainmedic.triage import triage_paths, triage_text

from .conftest import FIXTURES


def test_paste_one_error_line():
    report = triage_text("RuntimeError: CUDA error: device-side assert triggered")
    assert [f.link for f in report.findings] == ["startup#device-assert"]
    ev = report.findings[0].evidence[0]
    assert (ev.file, ev.line) == ("<pasted>", 1)
    assert report.findings[0].walk_command == "trainmedic walk startup#device-assert"


def test_paste_a_whole_traceback_and_json_roundtrip():
    text = (FIXTURES / "flash_attn.log").read_text(encoding="utf-8")
    report = triage_text(text, name="paste-box")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["findings"][0]["link"] == "startup#flash-attn"
    assert data["findings"][0]["evidence"][0]["file"] == "paste-box"
    assert data["next"] == "trainmedic walk startup#flash-attn"
    assert not any(k.startswith("_") for k in data["findings"][0]["details"])


def test_loss_block_carries_what_a_sparkline_needs():
    values = [2.0 + (3.0 if i == 60 else 0.01 * (i % 3)) for i in range(1, 101)]
    lines = [f" iteration {i:8d}/ 1000 | lm loss: {v:.6E} |" for i, v in enumerate(values, 1)]
    loss = triage_text("\n".join(lines)).to_dict()["loss"]
    assert loss["count"] == 100 and len(loss["points"]) == 100
    assert loss["spikes"][0]["start"] == 60 and "recovery" in loss["spikes"][0]
    assert [60, 5.0] in loss["points"]


def test_secrets_in_evidence_are_redacted():
    token = "hf_" + "a" * 34
    report = triage_text(f"HF_TOKEN={token} RuntimeError: CUDA error: device-side assert triggered")
    text = report.findings[0].evidence[0].text
    assert token not in text


def test_unreadable_file_inside_a_folder_is_skipped(tmp_path):
    (tmp_path / "rank0.log").write_text("RuntimeError: CUDA error: device-side assert triggered\n")
    os.mkfifo(tmp_path / "rank1.fifo")
    report = triage_paths([str(tmp_path)])
    assert report.files == [str(tmp_path / "rank0.log")]
