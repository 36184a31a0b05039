"""The static bash subset used to read launch scripts."""

from __future__ import annotations

from trainmedic.launch.shell import UNKNOWN, interpret


def argv_of(text: str) -> list[str]:
    shell = interpret(text)
    assert shell.commands, "no command recorded"
    return shell.commands[-1].argv


def test_defaults_and_alternatives():
    text = (
        'A=${UNSET:-fallback}\nB=${A:+set}\nC=${EMPTY-dash}\nEMPTY=\nD=${EMPTY:-colon}\n'
        'E=${EMPTY-nocolon}\n: ${F:=assigned}\nrun "$A" "$B" "$C" "$D" "[$E]" "$F"\n'
    )
    assert argv_of(text) == ["run", "fallback", "set", "dash", "colon", "[]", "assigned"]


def test_arithmetic_and_unknowns():
    text = (
        "G=8\nN=2\nW=$(($G*$N))\nX=$(( ${W} / 4 + 1 ))\nH=`hostname`\nY=$((H*2))\n"
        "run $W $X $H $Y $1 ${2:-two}\n"
    )
    assert argv_of(text) == ["run", "16", "5", UNKNOWN, UNKNOWN, "two"]


def test_arrays_quoted_and_unquoted():
    text = (
        'ARGS=(\n  --a 1   # comment\n  "--b two words"\n)\nARGS+=(--c)\n'
        'run "${ARGS[@]}" / ${ARGS[@]} / ${#ARGS[@]} "${ARGS[2]}"\n'
    )
    assert argv_of(text) == [
        "run", "--a", "1", "--b two words", "--c", "/", "--a", "1", "--b", "two", "words",
        "--c", "/", "4", "--b two words",
    ]


def test_multiline_string_with_backslash_newlines_splits_into_flags():
    text = 'OPTS="\n    --x 1 \\\n    --y 2 \\\n"\nOPTS="$OPTS --z"\nrun $OPTS\n'
    assert argv_of(text) == ["run", "--x", "1", "--y", "2", "--z"]


def test_if_elif_else_and_nested_and_inactive():
    text = (
        "M=13\nif [[ $M -eq 7 ]]; then V=a\nelif [ \"$M\" == 13 ] && [ -n \"$M\" ]; then\n"
        "  if [ -z \"$UNSET\" ]; then V=b; else V=c; fi\nelse\n  V=d\nfi\n"
        "if [ \"$M\" != 13 ] || [ 1 -gt 2 ]; then W=yes; else W=no; fi\nrun $V $W\n"
    )
    assert argv_of(text) == ["run", "b", "no"]


def test_undecidable_if_takes_the_first_branch_with_a_note():
    shell = interpret('if [ -f /etc/x ]; then V=first; else V=second; fi\nrun $V\n')
    assert shell.commands[-1].argv == ["run", "first"]
    assert shell.notes and "could not decide" in shell.notes[0]


def test_eval_of_a_command_string_and_exports():
    text = 'export NCCL_DEBUG=INFO\nCMD="torchrun train.py --n 1"\neval $CMD\n'
    shell = interpret(text)
    assert shell.commands[-1].argv == ["torchrun", "train.py", "--n", "1"]
    assert shell.exported == {"NCCL_DEBUG": "INFO"}


def test_env_prefix_and_separators():
    shell = interpret("A=1 B=2 python x.py --k $A; echo ok && ls | wc -l\n")
    assert [c.argv[0] for c in shell.commands] == ["python", "echo", "ls", "wc"]
    assert shell.commands[0].argv == ["python", "x.py", "--k", "1"]


def test_case_statements():
    text = (
        "SIZE=${1:-13B}\n"
        "case $SIZE in\n"
        "  7B)\n    H=4096\n    ;;\n"
        "  13B|14B) H=5120 ;;  # two names\n"
        "  *) H=0 ;;\n"
        "esac\n"
        "case x in\n  y) K=no ;;\n  *) K=default\nesac\n"
        "run $H $K\n"
    )
    assert argv_of(text) == ["run", "5120", "default"]
    shell = interpret(text, argv=["7B"])
    assert shell.commands[-1].argv == ["run", "4096", "default"]


def test_case_inside_an_inactive_branch_stays_inactive():
    text = "if [ 1 -eq 2 ]; then\ncase a in\n a) V=bad ;;\nesac\nfi\nrun ${V:-good}\n"
    assert argv_of(text) == ["run", "good"]


def test_here_documents_are_data():
    text = (
        "cat > hostfile <<'EOF'\nnode1 slots=8\ndon't parse me (\nEOF\n"
        "cat <<-END >> notes\n\tpython train.py --num-layers 1\n\tEND\n"
        "run after\n"
    )
    shell = interpret(text)
    assert [c.argv for c in shell.commands] == [["cat", ">", "hostfile"],
                                                ["cat", ">>", "notes"], ["run", "after"]]
