"""Issue 20, secrets: every shape of the table through every output path this branch has.

Paths: the redact functions, triage (human, --json), the incident report (Markdown and --json),
a saved walk's JSON file, tree export (Markdown, Mermaid, JSON), probe results (runner) and a
cluster node's answer. Ordinary log text (hex checksums, git SHAs, GPU UUIDs, paths, token
counts) must come out unchanged: redacting evidence would ruin triage.
"""

from __future__ import annotations

import json
import shlex

import pytest
import yaml
from secret_shapes import KEEP, SHAPES

from trainmedic.cli import main
from trainmedic.redact import REDACTED, redact_argv, redact_command, redact_env, redact_text

IDS = [name for name, _, _ in SHAPES]
OOM = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. ctx: "


def one_line(text: str) -> str:
    """A multi-line secret as it stands in one log line (a repr, a JSON string)."""
    return text.replace("\n", "\\n")


def test_the_table_is_large_enough_and_holds_its_secrets():
    assert len(SHAPES) >= 40 and len({name for name, _, _ in SHAPES}) == len(SHAPES)
    for name, text, secret in SHAPES:
        assert secret in text, name  # the secret really is in the text before redaction


@pytest.mark.parametrize(("name", "text", "secret"), SHAPES, ids=IDS)
def test_redact_text_hides_every_shape_and_is_idempotent(name, text, secret):
    out = redact_text(text)
    assert secret not in out and REDACTED in out, out
    assert redact_text(out) == out
    assert secret not in redact_command(text)
    assert secret not in redact_text(one_line(text))


@pytest.mark.parametrize("text", KEEP)
def test_ordinary_log_text_is_not_redacted(text):
    assert redact_text(text) == text


COMMANDS = ["--password VALUE", "--password=VALUE", "--hf-token X", "--wandb-api-key X",
            "--token=X", "wandb login KEY", "wandb login --relogin KEY", "curl -u user:pass",
            "sshpass -p", "srun --export", "URL user:pass", "postgres URL"]


@pytest.mark.parametrize(("name", "text", "secret"),
                         [s for s in SHAPES if s[0] in COMMANDS],
                         ids=[s[0] for s in SHAPES if s[0] in COMMANDS])
def test_commands_split_into_words_are_redacted(name, text, secret):
    words = ["torchrun", *shlex.split(text.split(": ", 1)[-1])]
    assert secret not in " ".join(redact_argv(words))


def test_environment_values_of_secret_names_are_hidden():
    env = {text.split("=", 1)[0]: text.split("=", 1)[1] for _, text, _ in SHAPES
           if "=" in text and text.split("=", 1)[0].isupper() and " " not in text.split("=")[0]}
    assert len(env) >= 10
    shown = redact_env(env)
    for name, value in env.items():
        assert value not in shown[name], name


@pytest.mark.parametrize(("name", "text", "secret"), SHAPES, ids=IDS)
def test_triage_output_human_and_json(name, text, secret, tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(OOM + one_line(text) + "\n", encoding="utf-8")
    assert main(["triage", str(log), "--all", "--no-grep"]) == 1
    human = capsys.readouterr().out
    assert "CUDA out of memory" in human and secret not in human
    assert main(["triage", str(log), "--json"]) == 1
    data = capsys.readouterr().out
    assert "ctx:" in data and secret not in data and secret not in json.loads(data).__repr__()


def _session(text: str) -> dict:
    from trainmedic.probes.base import ProbeResult
    from trainmedic.probes.runner import _scrub
    from trainmedic.triage import triage_text

    probe = _scrub(ProbeResult(name="env", status="warn", summary=one_line(text)[:200],
                               facts={"comment": text}, raw=text, evidence={"comment": text}))
    return {
        "version": 1, "id": "20260101T000000-oom-abcd", "tree": "oom",
        "started": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:01:00Z",
        "current": "oom", "finished": False,
        "steps": [{"node": "oom", "question": "q", "answer": 0, "answer_text": "a",
                   "goto": "oom", "suggested": None, "evidence": [text]}],
        "stack": [], "probes": [probe.to_dict()],
        "triage": triage_text(OOM + one_line(text)).to_dict(),
        "launch_command": text, "notes": text,
    }


@pytest.mark.parametrize(("name", "text", "secret"), SHAPES, ids=IDS)
def test_incident_report_markdown_and_json(name, text, secret):
    from trainmedic.export.report import build_report, render_report
    from trainmedic.saved_walks import WalkRecord

    session = WalkRecord.from_dict(_session(text))
    assert secret not in render_report(session, None)
    assert secret not in json.dumps(build_report(session, None), ensure_ascii=False)


@pytest.mark.parametrize(("name", "text", "secret"), SHAPES, ids=IDS)
def test_saved_walk_file(name, text, secret):
    from trainmedic.probes.base import ProbeResult
    from trainmedic.probes.runner import _scrub
    from trainmedic.saved_walks import save_walk
    from trainmedic.trees import load_forest
    from trainmedic.triage import triage_text
    from trainmedic.triage.attachment import TriageAttachment
    from trainmedic.walk import WalkSession

    walk = WalkSession(load_forest([]), "oom")
    walk.launch_command = text
    walk.notes = text  # what the user typed, often pasted from a terminal
    walk.attach_probes([_scrub(ProbeResult(name="env", status="ok", summary="s",
                                           raw=text, facts={"comment": text}))])
    walk.triage = TriageAttachment.of(triage_text(OOM + one_line(text)))
    saved = save_walk(walk.record()).read_text(encoding="utf-8")
    assert secret not in saved and secret not in json.loads(saved).__repr__()


def test_tree_export_markdown_mermaid_and_json(tmp_path, capsys):
    tree = {"id": "leaky", "title": "Leaky", "summary": "s", "start": "q",
            "nodes": {"q": {"question": "q?", "answers": [
                {"text": f"a{i}", "goto": f"f{i}"} for i in range(len(SHAPES))]}}}
    for i, (_, text, _) in enumerate(SHAPES):
        tree["nodes"][f"f{i}"] = {"fix": one_line(text), "why": text,
                                  "steps": [{"do": text, "code": text}]}
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "leaky.yaml").write_text(yaml.safe_dump(tree), encoding="utf-8")
    for fmt in ("markdown", "mermaid", "json"):
        assert main(["--trees", str(tmp_path / "trees"), "export", "leaky", "--format", fmt]) == 0
        out = capsys.readouterr().out
        leaks = [name for name, _, secret in SHAPES if secret in out]
        assert not leaks, (fmt, leaks)


@pytest.mark.parametrize(("name", "text", "secret"), SHAPES, ids=IDS)
def test_cluster_node_answers_are_scrubbed(name, text, secret):
    from trainmedic.cluster.fanout import answer_from_output

    payload = {"probes": [{"name": "env", "status": "warn", "summary": text,
                           "facts": {"comment": text}, "raw": text}]}
    ok = answer_from_output("node1", json.dumps(payload), "", 0, 1.0)
    assert ok.state == "ok" and secret not in json.dumps(ok.to_dict())
    garbage = answer_from_output("node2", one_line(text), "", 0, 1.0)
    assert secret not in garbage.detail
