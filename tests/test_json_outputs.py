"""Every `--json` output starts with its schema version, and real outputs validate against the
schemas `trainmedic schema --output NAME` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SCRIPT = FIXTURES / "memory" / "megatron_llama3_8b_h100_fp8.sh"


def trainmedic(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRAINMEDIC_PROBE_TIMEOUT"}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run([sys.executable, "-m", "trainmedic", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)


def schema(name: str) -> dict:
    proc = trainmedic("schema", "--output", name)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


OUTPUTS = {
    "triage": ("triage", str(FIXTURES / "triage" / "multirank_oom"), "--json"),
    "memory": ("memory", "--script", str(SCRIPT), "--no-probe", "--json"),
    "preflight": ("preflight", "--script", str(SCRIPT), "--no-probe", "--json"),
    "probe": ("probe", "env", "--json"),
}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_real_output_validates_against_its_schema(name):
    proc = trainmedic(*OUTPUTS[name])
    data = json.loads(proc.stdout)
    assert next(iter(data)) == "schema_version"
    jsonschema.validate(data, schema(name))


def test_a_triage_guess_validates_too(monkeypatch):
    """A guess (no signature knows the error) in the JSON `triage --json` writes. The signatures
    are taken away so that a real corpus case is unknown whatever the trees learn later."""
    import trainmedic.triage as triage
    from trainmedic.commands.outputs import stamped
    from trainmedic.trees.forest import Forest
    from trainmedic.triage.signatures import compile_forest

    case = ROOT / "tests/corpus/cases/moe/alltoall_dispatcher_empty_output_view_megatron_1877.log"
    monkeypatch.setattr(triage, "_signatures", lambda trees: compile_forest(Forest()))
    report = triage.triage_text(case.read_text().split("\n# ---\n", 1)[1], name="x.log")
    data = json.loads(json.dumps(stamped("triage", report.to_dict()), default=str))
    assert data["findings"][0]["guess"] is True
    jsonschema.validate(data, schema("triage"))


@pytest.mark.parametrize("args", [("lint", "--json"), ("export", "oom", "--format", "json")])
def test_other_json_outputs_carry_the_version(args):
    data = json.loads(trainmedic(*args).stdout)
    assert next(iter(data)) == "schema_version" and data["schema_version"] >= 1


def test_schemas_are_valid_json_schemas():
    for name in OUTPUTS:
        jsonschema.Draft202012Validator.check_schema(schema(name))
