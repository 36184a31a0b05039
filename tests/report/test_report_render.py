"""The incident report: path, suggestions, evidence, fix, probes, triage, checklist; no secrets."""

from __future__ import annotations

import json

from report_session import SECRETS, session_dict

from trainmedic.export import report
from trainmedic.export.repoinfo import RepoInfo
from trainmedic.export.report import redact_command
from trainmedic.walk import WalkRecord


def render_report(session: dict, forest, **kwargs) -> str:
    """The report of a walk saved as `session` (tests edit the saved form)."""
    return report.render_report(WalkRecord.from_dict(session), forest, **kwargs)


def build_report(session: dict, forest, **kwargs) -> dict:
    return report.build_report(WalkRecord.from_dict(session), forest, **kwargs)


def test_report_has_every_section_in_order(session, forest):
    page = render_report(session, forest)
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == ["## Outcome", "## Path taken", "## Probe results", "## Triage findings",
                        "## Minimum information for a bug report", "## Notes"]
    assert page.startswith("# Incident report: Checkpoint save fails\n")


def test_path_shows_each_question_answer_and_what_the_probes_suggested(session, forest):
    page = render_report(session, forest)
    assert "1. **What does the log say when the save fails?** (`disk-full#what-error`)" in page
    assert ("   - Answer: Yes (the probes suggested: No: only rank 0 enters a barrier) \u2192 "
            "`example-hang#all-stopped`") in page
    assert "     - `env.nccl_debug = INFO (== INFO)`" in page
    followed = session_dict()
    followed["steps"][2]["answer"] = 0
    followed["steps"][2]["answer_text"] = "No: only rank 0 enters a barrier"
    assert "(suggested by the probes)" in render_report(followed, forest)


def test_fix_reached_with_title_and_steps(session, forest):
    page = render_report(session, forest)
    assert "Fix reached: **Make every rank reach the same collectives**" in page
    assert '   ```bash\n   py-spy dump --pid "$PID"\n   ```' in page


def test_unfinished_walk_and_vanished_node_still_report(session, forest):
    session["current"], session["finished"] = "disk-full#other-tree-link", False
    assert "The walk stopped at a question (`disk-full#other-tree-link`)" in render_report(
        session, forest)
    session["current"] = "gone-tree#gone"
    session["steps"][0]["node"] = "gone-tree#q"
    assert "which the loaded trees no longer contain" in render_report(session, forest)
    assert "## Path taken" in render_report(session, None)


def test_probes_and_triage_evidence_lines_are_in_the_report(session, forest):
    page = render_report(session, forest)
    assert "| env | warn | 1 variable that no library reads |" in page
    assert ("logs/rank3.log:1042: [rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught "
            "collective operation timeout") in page
    assert "ranks 3, 7) \u2192 `trainmedic walk example-hang#barrier`" in page


def test_checklist_filled_from_versions_launch_command_and_repo(session, forest):
    repo = RepoInfo("/src/Megatron-LM", "0123456789abcdef0123456789abcdef01234567", True)
    page = render_report(session, forest, repo=repo)
    assert ("- [x] **Framework commit (Megatron-LM or the framework you run)**: "
            "0123456789abcdef0123456789abcdef01234567 (dirty: uncommitted changes)") in page
    assert ("- [x] **PyTorch / CUDA / NCCL / TransformerEngine versions**: PyTorch 2.4.0+cu124, "
            "CUDA (PyTorch build) 12.4, NCCL 2.21.5, TransformerEngine 1.9.0") in page
    assert "- [x] **The full launch command, copied as run**" in page
    assert "- [ ] **Does it reproduce with a smaller configuration (TP=1 PP=1)?**" in page
    assert "- [ ] **Does it reproduce in an NGC PyTorch container?**" in page
    assert "- [ ] **Complete logs with NCCL\\_DEBUG=INFO and TORCH\\_DISTRIBUTED\\_DEBUG=DETAIL**"\
        in page
    bare = session_dict() | {"probes": [], "launch_command": ""}
    checklist = build_report(bare, forest)["checklist"]
    assert [item["done"] for item in checklist] == [False] * 6


def test_no_secret_appears_in_markdown_or_json(session, forest):
    page = render_report(session, forest)
    data = json.dumps(build_report(session, forest))
    for name, secret in SECRETS.items():
        assert secret not in page, name
        assert secret not in data, name
    assert "<redacted>" in data and "redacted>" in page
    # what is not secret stays readable
    assert "--tokenizer-type GPT2BPETokenizer" in page and "NCCL_DEBUG=INFO" in page
    assert "https://<redacted>@etcd.internal:2379" in page


def test_secret_flag_values_in_launch_commands_are_hidden():
    command = ("torchrun train.py --hf-token abcdefgh123 --api-key=XYZ987654 "
               "--num-attention-heads 32 --kv-channels 128 --tokenizer-model /tok.model")
    redacted = redact_command(command)
    assert "abcdefgh123" not in redacted and "XYZ987654" not in redacted
    assert "--num-attention-heads 32 --kv-channels 128 --tokenizer-model /tok.model" in redacted


def test_report_is_deterministic(session, forest):
    assert render_report(session, forest) == render_report(session_dict(), forest)


def test_malformed_saved_data_still_renders(forest):
    odd = [{}, {"id": 5, "steps": "abc", "probes": {"a": 1},
                "triage": {"findings": ["x", None,
                                        {"evidence": ["y", {"file": 1}], "ranks": "3"}]}},
           {"steps": [{"node": None, "answer": "x", "suggested": 99}], "current": None},
           {"probes": [{"name": "env", "facts": "x", "raw": None}],
            "triage": {"files": "x", "findings": {"a": 1}}}]
    for session in odd:
        page = render_report(session, forest)
        assert page.startswith("# Incident report") and "## Minimum information" in page


def test_the_triage_of_a_walk_the_0_1_0_app_saved_is_in_its_report():
    """That app saved the chosen finding alone, in a shape its own report could not read."""
    from pathlib import Path

    from trainmedic.trees import load_forest

    saved = Path(__file__).resolve().parents[1] / "fixtures" / "saved_walks"
    data = json.loads((saved / "app-triage-walk.json").read_text(encoding="utf-8"))
    page = render_report(data, load_forest([saved / "trees"], builtin=False))
    triage = page.split("## Triage findings", 1)[1].split("## ", 1)[0]
    assert "No log triage is attached" not in triage
    assert "rank 1: CUDA out of memory (tried 22.78 GiB" in triage
    assert "rank1.log:2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 " \
           "GiB." in triage
    assert "`trainmedic walk oom#fragmentation`" in triage
