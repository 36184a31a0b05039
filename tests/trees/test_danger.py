"""Dangerous and privileged steps: the `danger:`/`needs:` keys, the lint that demands them, and the
one warning line every front end prints before such a command."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml

from trainmedic.trees import Fix, load_forest
from trainmedic.trees.danger import (
    PATTERNS,
    mark_line,
    matches,
    placeholders,
    required_words,
    strip_comments,
)
from trainmedic.trees.lint import lint_forest
from trainmedic.trees.model import Source, Step, Text
from trainmedic.trees.schema import tree_schema

ROOT = Path(__file__).resolve().parents[2]
DECLARED: dict[str, dict[str, str]] = {}


def _tree(step_yaml: str) -> str:
    """A one-fix tree whose second step is `step_yaml` (the step's line is 17)."""
    lines = textwrap.dedent(step_yaml).strip("\n").splitlines()
    step = ["      - " + lines[0]] + ["        " + line for line in lines[1:]]
    return textwrap.dedent("""\
        id: t
        title: T
        summary: S
        start: q
        nodes:
          q:
            question: Q?
            answers:
              - {text: a, goto: f}
              - {text: b, goto: f}
          f:
            fix: F
            why: W
            steps:
              - do: Look first.
                code: nvidia-smi
        """) + "\n".join(step) + "\n"


def _lint(tmp_path: Path, step_yaml: str) -> list[str]:
    (tmp_path / "t.yaml").write_text(_tree(step_yaml))
    forest = load_forest([tmp_path], builtin=False)
    return [f"{p.line}: {p.severity}: {p.message}" for p in lint_forest(forest, DECLARED)]


def _fix(tmp_path: Path, step_yaml: str) -> Fix:
    (tmp_path / "t.yaml").write_text(_tree(step_yaml))
    fix = load_forest([tmp_path], builtin=False).trees["t"].nodes["f"]
    assert isinstance(fix, Fix)
    return fix


# One sample command per pattern of the table, with the mark that makes it pass.
SAMPLES = [
    ("sudo reboot", "reboot", ["root"]),
    ("sudo nvidia-smi -r -i <GPU_INDEX>", "gpu-reset", ["root"]),
    ("sudo nvidia-smi --gpu-reset -i <GPU_INDEX>", "gpu-reset", ["root"]),
    ("sudo nvidia-smi -i <GPU_INDEX> -pl <WATTS>", "power-limit", ["root"]),
    ("sudo modprobe -r nvidia_peermem", "kernel-module", ["root"]),
    ("sudo rmmod nvidia_uvm", "kernel-module", ["root"]),
    ("sudo dkms autoinstall", "kernel-module", ["root"]),
    ("sudo sysctl -w net.ipv4.ip_local_port_range='<LOW> <HIGH>'", "sysctl", ["root"]),
    ("sudo firewall-cmd --permanent --zone=trusted --add-source=<SUBNET_CIDR>", "firewall",
     ["root"]),
    ("sudo iptables -A INPUT -s <SUBNET_CIDR> -j ACCEPT", "firewall", ["root"]),
    ("sudo ufw allow from <SUBNET_CIDR>", "firewall", ["root"]),
    ("sudo systemctl restart nvidia-fabricmanager", "service-restart", ["root"]),
    ('scontrol update nodename=<NODE> state=drain reason="x"', "node-state", ["slurm-operator"]),
    ("scontrol update NodeName=<NODE> State=RESUME", "node-state", ["slurm-operator"]),
    ("kill <PID>", "kill", []),
    ("kill -9 <PID>", "kill", []),
    ("pkill -f pretrain_gpt.py", "kill", []),
    ("killall python", "kill", []),
    ("pip install --force-reinstall <PACKAGE>", "force-reinstall", []),
    ("rm -rf /tmp/ckpt/iter_0000100", "delete-data", []),
    ("sudo dcgmi diag -r 3", "stress-test", ["idle-gpus", "root"]),
]


def test_every_pattern_of_the_table_has_a_sample():
    named = {p.name for p in PATTERNS if p.kind}
    caught = set()
    for command, _kind, _needs in SAMPLES:
        caught |= {p.name for p in PATTERNS if p.kind and p.regex.search(command)}
    assert named - caught == set()


@pytest.mark.parametrize(("command", "kind", "needs"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_a_dangerous_command_without_its_mark_fails_lint(tmp_path, command, kind, needs):
    errors = _lint(tmp_path, f"do: Run it.\ncode: {command!r}\n")
    assert any(e.startswith("17: error: step runs") and f"kind: {kind}" in e for e in errors), \
        errors


@pytest.mark.parametrize(("command", "kind", "needs"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_the_same_command_with_its_mark_passes(tmp_path, command, kind, needs):
    needs_line = f"needs: [{', '.join(needs)}]\n" if needs else ""
    step = (f"do: Run it.\ncode: {command!r}\n"
            f"danger: {{kind: {kind}, effect: It disrupts the node.}}\n{needs_line}")
    assert _lint(tmp_path, step) == []


def test_a_missing_right_is_named(tmp_path):
    errors = _lint(tmp_path, "do: Drain.\ncode: scontrol update nodename=<NODE> state=drain\n"
                             "danger: {kind: node-state, effect: No new jobs land there.}\n")
    assert errors == ["17: error: step runs 'scontrol update state=' but does not say it needs "
                      "slurm-operator; add needs: [slurm-operator]"]


def test_sudo_alone_needs_root_but_no_danger_mark(tmp_path):
    assert _lint(tmp_path, "do: Read.\ncode: sudo dmesg -T | grep -i xid\n") == [
        "17: error: step runs 'sudo' but does not say it needs root; add needs: [root]"]
    assert _lint(tmp_path, "do: Read.\ncode: sudo dmesg -T | grep -i xid\nneeds: root\n") == []


@pytest.mark.parametrize("command", [
    "nvidia-smi -q -d RESET_STATUS",          # reads, resets nothing
    "sysctl net.ipv4.ip_local_port_range",     # reads a setting
    "systemctl status nvidia-fabricmanager",   # reads a service state
    "nvidia-smi -i 0 -q",                      # a hard-coded index is fine where nothing changes
    "pgrep -f pretrain_gpt.py",                # lists processes
    "sudo nvidia-smi -q  # reboot if this hangs",  # a comment is not a command (needs root only)
])
def test_read_only_commands_need_no_danger_mark(tmp_path, command):
    errors = _lint(tmp_path, f"do: Look.\ncode: {command!r}\nneeds: root\n")
    assert not [e for e in errors if "danger mark" in e or "hard-codes" in e], errors


@pytest.mark.parametrize(("command", "what", "placeholder"), [
    ("sudo nvidia-smi -r -i 3", "a GPU index", "<GPU_INDEX>"),
    ("sudo nvidia-smi -i <GPU_INDEX> -pl 700", "a wattage", "<WATTS>"),
    ("sudo firewall-cmd --permanent --zone=trusted --add-source=10.0.0.0/16", "a subnet",
     "<SUBNET_CIDR>"),
    ('scontrol update nodename=node123 state=drain reason="x"', "a node name", "<NODE>"),
    ("scontrol update NodeName=gpu-a7 State=DRAIN", "a node name", "<NODE>"),
])
def test_a_dangerous_step_must_not_hard_code_machine_values(tmp_path, command, what, placeholder):
    errors = _lint(tmp_path, f"do: Run.\ncode: {command!r}\n"
                             "danger: {kind: gpu-reset, effect: X.}\n"
                             "needs: [root, slurm-operator]\n")
    assert f"17: error: a dangerous step hard-codes {what}; write the placeholder " \
           f"{placeholder} for the reader to fill in" in errors


def test_the_current_node_is_not_a_hard_coded_name(tmp_path):
    step = ('do: Drain.\ncode: scontrol update nodename="$(hostname -s)" state=drain\n'
            "danger: {kind: node-state, effect: X.}\nneeds: slurm-operator\n")
    assert _lint(tmp_path, step) == []


def test_loader_reads_the_marks_and_keeps_their_lines(tmp_path):
    fix = _fix(tmp_path, "do: Reset.\ncode: sudo nvidia-smi -r -i <GPU_INDEX>\n"
                         "danger:\n  kind: gpu-reset\n  effect: Ends every process on the GPU.\n"
                         "needs: [root, drained-node, root]\n")
    step = fix.steps[1]
    assert step.danger is not None and step.danger.kind == "gpu-reset"
    assert str(step.danger.effect) == "Ends every process on the GPU."
    assert step.danger.src.line == 19
    assert step.needs == ["root", "drained-node"] and step.marked
    assert not fix.steps[0].marked


@pytest.mark.parametrize(("step", "message"), [
    ("danger: reboot\n",
     "19: error: 'danger' of a step of fix 'f' must be a mapping like {kind: reboot, "
     "effect: ...}, not a string"),
    ("danger: {kind: rebot, effect: X.}\n",
     "19: error: 'kind' of the danger mark of a step of fix 'f' is 'rebot' (did you mean "
     "'reboot'?); one of: reboot, gpu-reset, power-limit, kernel-module, sysctl, firewall, "
     "service-restart, node-state, kill, force-reinstall, delete-data, stress-test"),
    ("danger: {kind: reboot}\n",
     "19: error: the danger mark of a step of fix 'f' is missing required key 'effect'"),
    ("danger: {kind: reboot, effect: X., why: Y}\n",
     "19: error: unknown key 'why' in the danger mark of a step of fix 'f'; allowed: effect, "
     "kind"),
    ("needs: [root, sudoer]\n",
     "19: error: 'needs' of a step of fix 'f' names 'sudoer'; one of: root, slurm-operator, "
     "drained-node, idle-gpus"),
    ("needs: [rot]\n",
     "19: error: 'needs' of a step of fix 'f' names 'rot' (did you mean 'root'?); one of: root, "
     "slurm-operator, drained-node, idle-gpus"),
])
def test_malformed_marks_are_reported_with_their_line(tmp_path, step, message):
    errors = _lint(tmp_path, "do: Run.\ncode: echo hi\n" + step)
    assert message in errors


def test_a_mark_on_a_step_without_code_is_a_warning(tmp_path):
    errors = _lint(tmp_path, "do: Reboot by hand.\ndanger: {kind: reboot, effect: X.}\n")
    assert errors == ["18: warning: 'danger' of a step of fix 'f' marks a step that has no "
                      "'code'"]


def test_comments_are_stripped_but_quoted_hashes_stay():
    code = 'sudo nvidia-smi -q   # then reboot\necho "#not a comment" # gone'
    assert strip_comments(code, "bash") == 'sudo nvidia-smi -q   \necho "#not a comment" '
    assert strip_comments('{"a": "# b"}', "json") == '{"a": "# b"}'


def test_placeholders_are_listed_once_in_order():
    assert placeholders("nvidia-smi -i <GPU_INDEX> -pl <WATTS> -i <GPU_INDEX> <lower>") == [
        "<GPU_INDEX>", "<WATTS>"]


def test_mark_line_wording(tmp_path):
    fix = _fix(tmp_path, "do: Reset.\ncode: sudo nvidia-smi -r -i <GPU_INDEX>\n"
                         "danger: {kind: gpu-reset, effect: Ends every process on the GPU}\n"
                         "needs: [root, idle-gpus]\n")
    step = fix.steps[1]
    assert mark_line(step.danger, step.needs) == (
        "DANGER (gpu-reset): Ends every process on the GPU. Needs root on the node, "
        "GPUs with no process on them.")
    assert mark_line(None, ["slurm-operator"]) == "NEEDS a Slurm operator or admin."
    assert mark_line(None, []) is None


def test_schema_knows_the_marks():
    validator = jsonschema.Draft202012Validator(tree_schema())
    good = yaml.safe_load(_tree("do: R.\ncode: sudo reboot\n"
                                "danger: {kind: reboot, effect: X.}\nneeds: root\n"))
    assert list(validator.iter_errors(good)) == []
    for bad in ("danger: {kind: rebot, effect: X.}\n", "danger: reboot\n", "needs: [sudoer]\n",
                "danger: {kind: reboot}\n"):
        tree = yaml.safe_load(_tree("do: R.\ncode: sudo reboot\n" + bad))
        assert list(validator.iter_errors(tree)), bad


def test_plain_and_markdown_print_the_mark_before_the_command(tmp_path):
    from trainmedic.export.fixview import fix_view
    from trainmedic.export.markdown import tree_markdown
    from trainmedic.plain import make_console, print_fix

    (tmp_path / "t.yaml").write_text(_tree(
        "do: Reset.\ncode: sudo nvidia-smi -r -i <GPU_INDEX>\n"
        "danger: {kind: gpu-reset, effect: Ends every process on the GPU.}\nneeds: root\n"))
    forest = load_forest([tmp_path], builtin=False)
    fix = forest.trees["t"].nodes["f"]
    assert isinstance(fix, Fix)
    out = io.StringIO()
    print_fix(make_console(out), fix_view(fix, "t#f"))
    text = out.getvalue()
    mark = "DANGER (gpu-reset): Ends every process on the GPU. Needs root on the node."
    assert text.index(mark) < text.index("sudo nvidia-smi -r") < len(text)
    assert text.index("2. Reset.") < text.index(mark)
    page = tree_markdown(forest, forest.trees["t"])
    assert f"   > **{mark}**" in page
    assert page.index(mark) < page.index("sudo nvidia-smi -r")
    assert page.count("DANGER") == 1  # the ordinary first step has no mark


def test_the_docs_example_shows_both_marks():
    examples = ROOT / "docs" / "examples"
    forest = load_forest([examples], builtin=False)
    disk_space = forest.trees["disk-full"].nodes["disk-space"]
    quota = forest.trees["disk-full"].nodes["quota"]
    assert isinstance(disk_space, Fix) and isinstance(quota, Fix)
    assert disk_space.steps[1].danger is not None
    assert disk_space.steps[1].danger.kind == "delete-data"
    assert quota.steps[-1].needs == ["root"] and quota.steps[-1].danger is None
    assert placeholders(quota.steps[-1].code or "") == ["<PROJECT_ID>", "<LIMIT>"]
    doc = (ROOT / "docs" / "tree-format.md").read_text(encoding="utf-8")
    for word in ("danger:", "needs:", "<GPU_INDEX>", "delete-data", "slurm-operator"):
        assert word in doc, word


def test_the_incident_report_prints_the_mark_before_the_command():
    from trainmedic.export.report import render_report
    from trainmedic.walk import WalkRecord

    forest = load_forest([ROOT / "docs" / "examples"], builtin=False)
    session = {"version": 1, "id": "w", "tree": "disk-full", "current": "disk-full#disk-space",
               "finished": True, "steps": [], "stack": [], "probes": []}
    page = render_report(WalkRecord.from_dict(session), forest)
    mark = ("   > **DANGER (delete-data): Deletes every checkpoint but the two newest; they "
            "cannot be recovered.**")
    assert mark in page
    assert page.index(mark) < page.index("xargs -r rm -rf")


def _by_every_regex(code: str, lang: str = "bash") -> list[str]:
    """The table's patterns a command matches, found the slow way (every regex searched)."""
    code = strip_comments(code, lang)
    return [p.name for p in PATTERNS if p.regex.search(code)]


def test_the_words_prefilter_finds_what_every_regex_finds():
    # lint passes over a step that holds none of a pattern's words without searching; that
    # must never miss a match: every built-in step, the samples, and text where IGNORECASE
    # matches a non-ASCII letter to an ASCII one (the long s, the Kelvin sign)
    commands = [(s.code, s.lang) for tree in load_forest().trees.values()
                for fix in tree.fixes() for s in fix.steps if s.code]
    commands += [(c, "bash") for c, _kind, _needs in SAMPLES]
    commands += [("\u017fudo reboot", "bash"), ("\u212aill -9 1234", "bash"),
                 ("SUDO REBOOT", "bash"), ("echo 'rm -rf /' # not run", "bash")]
    assert all(p.words for p in PATTERNS)  # the prefilter has something to go on
    for code, lang in commands:
        step = Step(do=Text("x"), code=code, lang=lang, src=Source("t.yaml", 1))
        assert [p.name for p in matches(step)] == _by_every_regex(code, lang), code
    assert [p.name for p in matches(Step(do=Text("x"), code="\u017fudo reboot", lang="bash",
                                         src=Source("t.yaml", 1)))] == ["reboot", "sudo"]


@pytest.mark.parametrize(("pattern", "words"), [
    (r"\bsysctl\s+(-\w+\s+)*(-w|--write)\b", {"sysctl"}),
    (r"(?:^|[\s;&|(`])kill\s+(-\S+\s+)*(<|\$|%|\d)", {"kill"}),
    (r"(?<![\w-])(reboot|poweroff|shutdown\s+-r)\b", {"reboot", "poweroff", "shutdown"}),
    (r"(ab)+c?", {"ab"}),
    (r"x*(y|z?)", set()),  # nothing is required: every step is searched
    (r"\u212aelvin", {"elvin"}),  # a non-ASCII letter is never a word (IGNORECASE: it is "k")
])
def test_required_words_are_read_from_the_regex(pattern, words):
    assert required_words(pattern) == words


def test_line_ends_read_the_same_with_or_without_a_comment():
    # a vertical tab ends a line as "\n" does: `[^\n;|&]*` must not run across it
    assert strip_comments("nvidia-smi -q\x0b-r", "bash") == "nvidia-smi -q\n-r"
    assert strip_comments("nvidia-smi -q # x\x0b-r", "bash") == "nvidia-smi -q \n-r"
