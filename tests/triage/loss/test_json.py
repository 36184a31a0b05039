"""`--json` carries the series (downsampled) and every event with its global step."""

from __future__ import annotations

import json
import math

from trainmedic.cli import main
from trainmedic.triage.loss.detect import MAX_POINTS
from trainmedic.triage.loss.model import LossAnalysis

from .gen import decline, megatron_log


def write_run(tmp_path):
    v = decline(20_000, seed=31)
    for i in range(12_000, 12_030):
        v[i] *= 3.0
    v[15_000] = math.nan
    grads = [0.8] * 20_000
    grads[17_000] = 60.0
    path = tmp_path / "train.log"
    path.write_text(megatron_log(v, grads=grads, saves_every=1000))
    return path


def test_json_carries_series_events_marks_and_recovery(tmp_path, capsys):
    code = main(["triage", str(write_run(tmp_path)), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    loss = out["loss"]
    assert loss["framework"] == "megatron-lm" and loss["count"] == 20_000 - 1
    assert len(loss["points"]) < MAX_POINTS and loss["stride"] > 1
    assert ["nan", "nan"] not in loss["points"] and any(p[1] == "nan" for p in loss["points"])
    kinds = {(e["kind"], e["step"]) for e in loss["events"]}
    assert {("spike", 12_001), ("nan", 15_001), ("grad-explosion", 17_001)} <= kinds
    assert all(isinstance(e["step"], int) for e in loss["events"])
    assert {"kind": "rollback", "step": 12_000, "to": None} in loss["marks"]
    rec = loss["recoveries"][0]
    assert rec["framework"] == "megatron-lm" and rec["checkpoint"] == 12_000
    assert rec["skip"][0] == [12_001, 12_030]
    spike = next(f for f in out["findings"] if f["signature"] == "loss-spike")
    assert spike["evidence"][0]["line"] == 12_001 + 1 + 12  # interval line, 12 save lines
    assert "iteration    12001/" in spike["evidence"][0]["text"]


def test_round_trip_through_from_dict(tmp_path, capsys):
    main(["triage", str(write_run(tmp_path)), "--json"])
    loss = json.loads(capsys.readouterr().out)["loss"]
    again = LossAnalysis.from_dict(loss).to_dict()
    assert json.loads(json.dumps(again)) == loss


def test_from_dict_is_tolerant():
    a = LossAnalysis.from_dict({"points": [[1, "nan"], ["x", 2], [3]], "spikes": [{"peak": 1}],
                                "loss_scale": "bad", "recoveries": [{"skip": [[1, "z"]]}]})
    assert len(a.points) == 1 and math.isnan(a.points[0][1])
    assert a.spikes == [] and a.recoveries[0].skip == []
    assert LossAnalysis.from_dict(None).count == 0
