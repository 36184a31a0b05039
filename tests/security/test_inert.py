"""Issue 20, escape sequences: untrusted text never reaches a terminal as control characters.

`textsafe.inert` itself, then every output path on this branch: tree text as loaded (so every
front end shows escapes), `lint`, exports, triage (log lines and file names, human and JSON),
the incident report of a crafted saved walk, `report --list`, probe results and cluster nodes.
"""

from __future__ import annotations

import json
import sys
import unicodedata

from hostile import HOSTILE, leaks

from trainmedic.cli import main
from trainmedic.textsafe import has_controls, inert, inert_deep, inert_line


def test_every_control_and_format_character_is_made_visible():
    missed = []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") and char not in "\n\t":
            shown = inert("a" + char + "b")
            if char in shown or not shown.startswith("a\\"):
                missed.append(hex(code))
    assert not missed


def test_printable_text_holds_nothing_to_escape():
    # `inert`, `inert_line` and `has_controls` answer printable text without a search: that is
    # only right while no character they escape is printable. The "\n" makes the text
    # unprintable, so the search itself runs over every printable character.
    printable = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isprintable())
    assert not has_controls(printable + "\n")
    assert inert(printable + "\n") == printable + "\n"


def test_layout_characters_stay_and_the_result_is_stable():
    assert inert("a\tb\nc\r\n") == "a\tb\nc\r\n"
    assert inert("progress\rdone") == "progress\\rdone"
    assert inert("\x1b]0;x\x07") == "\\x1b]0;x\\a"
    assert inert("\u202eabc") == "\\u202eabc"
    assert inert("日本語 ok") == "日本語 ok"
    assert inert(inert(HOSTILE)) == inert(HOSTILE)
    assert not leaks(inert(HOSTILE))
    assert inert_line("a\nb\tc") == "a\\nb\\tc"
    assert has_controls(HOSTILE) and not has_controls("a\r\nb")
    assert inert_deep({"k\x1b": ["\x1b", 1]}) == {"k\\x1b": ["\\x1b", 1]}


def _hostile_tree(folder):
    folder.mkdir()
    (folder / "esc.yaml").write_text(json.dumps({
        "id": "esc", "title": f"Disk full {HOSTILE}", "summary": HOSTILE, "start": "q1",
        "nodes": {
            "q1": {"question": f"q {HOSTILE}", "help": HOSTILE,
                   "answers": [{"text": f"a {HOSTILE}", "goto": "f1"}]},
            "f1": {"fix": f"f {HOSTILE}", "why": HOSTILE, "verify": HOSTILE,
                   f"k{HOSTILE}": "x", "steps": [{"do": HOSTILE, "code": f"df -h {HOSTILE}"}],
                   "refs": [{"title": HOSTILE, "url": "https://example.com"}]}}}),
        encoding="utf-8")  # JSON is YAML; json.dumps writes the controls as \\u escapes
    return folder


def test_tree_text_is_inert_as_loaded_and_lint_reports_it(tmp_path, capsys):
    from trainmedic.trees import load_forest

    trees = _hostile_tree(tmp_path / "trees")
    forest = load_forest([trees], builtin=False)
    tree = forest.trees["esc"]
    texts = [tree.title, tree.summary]
    for node in tree.nodes.values():
        texts += [str(v) for v in vars(node).values() if isinstance(v, str)]
    texts += [s.code for s in tree.nodes["f1"].steps]
    assert any("\\x1b]52" in t for t in texts)
    assert not [t for t in texts if leaks(t)]
    assert main(["lint", str(trees)]) == 1
    out = capsys.readouterr()
    assert "control character" in out.out and not leaks(out.out + out.err)
    assert main(["lint", str(trees), "--json"]) == 1
    assert not leaks(capsys.readouterr().out)


def test_exports_of_a_hostile_tree_are_inert(tmp_path):
    from trainmedic.commands.export import render
    from trainmedic.trees import load_forest

    forest = load_forest([_hostile_tree(tmp_path / "trees")], builtin=False)
    for fmt in ("markdown", "mermaid", "json"):
        out = render(forest, "esc", fmt)
        assert "PWNED" in out or fmt == "mermaid", fmt
        assert not leaks(out), (fmt, leaks(out))


def test_triage_log_lines_and_file_names_are_inert(tmp_path, capsys):
    folder = tmp_path / "logs"
    folder.mkdir()
    name = folder / "rank0\x1b]0;NAME\x07.log"
    name.write_bytes((HOSTILE + "[rank0]: torch.OutOfMemoryError: CUDA out of memory. "
                      "Tried to allocate 2.00 GiB. " + HOSTILE + "\n").encode())
    for args in ([], ["--all"], ["--no-grep"]):
        assert main(["triage", str(folder), *args]) == 1
        out = capsys.readouterr().out
        assert "CUDA out of memory" in out and "PWNED" in out and "NAME" in out
        assert not leaks(out), leaks(out)
    assert main(["triage", str(folder), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert not leaks(json.dumps(data, ensure_ascii=False))


def _crafted_walk() -> dict:
    return {"version": 1, "id": "crafted", "tree": f"oom{HOSTILE}", "started": HOSTILE,
            "updated": HOSTILE, "current": "oom", "finished": False,
            "steps": [{"node": f"oom{HOSTILE}", "question": HOSTILE, "answer": 0,
                       "answer_text": HOSTILE, "goto": HOSTILE, "suggested": None,
                       "evidence": [HOSTILE]}],
            "stack": [], "probes": [{"name": HOSTILE, "status": HOSTILE, "summary": HOSTILE,
                                     "facts": {HOSTILE: HOSTILE}, "raw": HOSTILE}],
            "triage": {"findings": [{"summary": HOSTILE, "signature": HOSTILE, "link": HOSTILE,
                                     "confidence": HOSTILE, "ranks": [HOSTILE],
                                     "evidence": [{"file": HOSTILE, "line": 1,
                                                   "text": HOSTILE}]}],
                       "files": [HOSTILE]},
            "launch_command": HOSTILE, "notes": HOSTILE}


def test_report_of_a_crafted_saved_walk_is_inert(tmp_path, capsys):
    from trainmedic.state import walks_dir

    walks_dir().mkdir(parents=True)
    path = walks_dir() / "crafted.json"
    path.write_text(json.dumps(_crafted_walk()), encoding="utf-8")
    for args in ([str(path)], [str(path), "--json"], ["--list"]):
        assert main(["report", *args]) == 0
        out = capsys.readouterr()
        assert "PWNED" in out.out or args == ["--list"]
        assert not leaks(out.out + out.err), (args, leaks(out.out))


def test_probe_results_and_cluster_answers_are_inert():
    from trainmedic.cluster.aggregate import aggregate
    from trainmedic.cluster.fanout import FanoutRun, answer_from_output
    from trainmedic.commands.probe_nodes import render_text
    from trainmedic.probes.base import ProbeResult
    from trainmedic.probes.runner import _scrub

    probe = _scrub(ProbeResult(name="env", status="warn", summary=HOSTILE, raw=HOSTILE,
                               facts={"x": HOSTILE}, evidence={"x": HOSTILE}))
    assert not leaks(json.dumps(probe.to_dict(), ensure_ascii=False))
    garbage = answer_from_output("node1", '{"probes": 12}' + HOSTILE, "", 0, 1.0)
    payload = {"probes": [{"name": "env", "status": "ok", "summary": HOSTILE,
                           "facts": {"slurm_job_comment": HOSTILE}}]}
    ok = answer_from_output("node2", json.dumps(payload), "", 0, 1.0)
    result = aggregate(FanoutRun("ssh", ["node1", "node2"], [garbage, ok], [], 1.0))
    shown = render_text(result, all_columns=True, width=200)
    assert "node1" in shown and not leaks(shown), leaks(shown)
    assert not leaks(json.dumps(result.to_dict(), ensure_ascii=False))


def test_resuming_a_crafted_saved_walk_prints_it_inert(tmp_path, capsys, monkeypatch):
    import io

    from trainmedic.state import walks_dir
    from trainmedic.trees import load_forest
    from trainmedic.walk import WalkSession

    session = WalkSession(load_forest([]), "oom", walk_id="crafted")
    session.answer(0)  # a walk that fits the trees, then crafted text in every free field
    walk = session.to_dict()
    walk["steps"][0].update(question=f"q {HOSTILE}", answer_text=f"a {HOSTILE}",
                            evidence=[HOSTILE])
    walk.update(started=HOSTILE, updated=HOSTILE, launch_command=HOSTILE, notes=HOSTILE)
    walks_dir().mkdir(parents=True, exist_ok=True)
    (walks_dir() / "crafted.json").write_text(json.dumps(walk), encoding="utf-8")
    ahead = WalkSession.from_dict(session.forest, walk)
    answers = []
    while ahead.question is not None:  # answer 1 until the fix
        ahead.answer(0)
        answers.append("1")
    assert main(["walk", "--resume", "crafted", "--answers", ",".join(answers),
                 "--no-probes"]) == 0
    out = capsys.readouterr()
    assert "PWNED" in out.out and not leaks(out.out + out.err), leaks(out.out + out.err)
    monkeypatch.setattr(sys, "stdin", io.StringIO("b\nq\n"))
    assert main(["walk", "--resume", "crafted", "--plain", "--no-probes"]) == 0
    out = capsys.readouterr()
    assert not leaks(out.out + out.err), leaks(out.out + out.err)


def test_memory_and_preflight_print_a_hostile_script_inert(tmp_path, capsys):
    hostile = HOSTILE.replace("\x00", "")  # a NUL makes it a binary file, refused whole
    script = tmp_path / "launch.sh"
    script.write_text(
        "torchrun --nproc-per-node 8 "
        f"'pre{hostile}train.py' --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
        "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
        f"--global-batch-size 8 --tokenizer-model '{hostile}' --data-path '{hostile}'\n",
        encoding="utf-8")
    for command in ("memory", "preflight"):
        main([command, "--script", str(script)])
        out = capsys.readouterr()
        assert "PWNED" in out.out and not leaks(out.out + out.err), (command, leaks(out.out))


def test_a_saved_cluster_sweep_is_inert_when_read_back():
    from trainmedic.cluster.result import ClusterResult
    from trainmedic.commands.probe_nodes import render_text

    node = {"host": HOSTILE, "state": "garbage", "detail": HOSTILE,
            "result": {"probes": [{"name": HOSTILE, "facts": {HOSTILE: HOSTILE}}]}}
    result = ClusterResult.from_dict({
        "time": HOSTILE, "spec": HOSTILE, "method": HOSTILE, "node_count": 1, "answered": 0,
        "bad_nodes": [HOSTILE], "verdicts": [HOSTILE], "splits": [{"fact": HOSTILE,
                                                                  "groups": {HOSTILE: HOSTILE}}],
        "findings": [{"host": HOSTILE, "kind": "x", "message": HOSTILE}], "nodes": [node]})
    assert not leaks(json.dumps(result.to_dict(), ensure_ascii=False))
    shown = render_text(result, all_columns=True, width=200)
    assert "PWNED" in shown and not leaks(shown)


def test_command_errors_are_one_inert_redacted_line(tmp_path, capsys):
    missing = tmp_path / f"x{HOSTILE}WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567"
    assert main(["triage", str(missing)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and not leaks(err), err
    assert "0123456789abcdef0123456789abcdef01234567" not in err
