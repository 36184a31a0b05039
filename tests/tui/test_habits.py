"""The habits of k9s and lazygit, and the review's findings that are about trust (issue 18):
keys with one meaning everywhere (F16), a footer cut cleanly (F17), search that finds commands
and flags (F8), a palette without internals (F23), marked commands asked twice (issue 13 item 2),
commands never broken inside a token (F13), a keyboard-scrollable evidence panel (F15), plain
words (F24) and the polish list (F25).
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, OptionList, Static, Tree
from tui_helpers import make_app, run, screen_text

from trainmedic.tui.dialogs.help import HelpScreen
from trainmedic.tui.dialogs.quit import QuitScreen
from trainmedic.tui.screens.browse import BrowseScreen
from trainmedic.tui.screens.home import HomeScreen
from trainmedic.tui.screens.walk import WalkScreen
from trainmedic.tui.widgets.codeblock import CodeBlock
from trainmedic.tui.widgets.evidence import EvidencePanel

_BUILTIN = None


def builtin_app():
    """The app on the built-in trees (search and layout are about the real knowledge)."""
    global _BUILTIN
    from trainmedic.trees import load_forest
    from trainmedic.tui.app import TrainmedicApp

    if _BUILTIN is None:
        _BUILTIN = load_forest()
    return TrainmedicApp(_BUILTIN, probes=False)


def _current(app) -> str:
    assert isinstance(app.screen, WalkScreen), app.screen
    return str(app.screen.session.current)


# -- F16: quitting, moving, help, search ---------------------------------------------------------
def test_q_quits_at_once_from_home_and_at_a_fix():
    async def go(keys):
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*keys)
            await pilot.pause()
        return app.return_code

    assert run(go(["q"])) == 0
    assert run(go([*"mem", "enter", "2", "q"])) == 0  # mem#leak is a fix: nothing to lose
    assert run(go(["ctrl+c"])) == 0


def test_quitting_mid_walk_asks_first_and_stays_on_n():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.press(*"mem", "enter", "1", "q")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen)
            await pilot.press("n")
            await pilot.pause()
            assert _current(app) == "mem#shrink"
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen)
            await pilot.press("q")  # q again: yes
            await pilot.pause()
        return app.return_code

    assert run(go()) == 0


def test_j_k_g_G_move_the_highlight_and_question_mark_opens_help_everywhere():
    async def go():
        app = make_app()
        async with app.run_test() as pilot:
            await pilot.pause()
            entries = app.screen.query_one("#entries", OptionList)
            await pilot.press("j", "j")
            assert entries.highlighted == 2
            await pilot.press("k")
            assert entries.highlighted == 1
            await pilot.press("G")
            assert entries.highlighted == entries.option_count - 1
            await pilot.press("g")
            assert entries.highlighted == 0
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert app.screen_stack[0].filter_text == ""  # not typed into the filter
            await pilot.press("question_mark")
            await pilot.pause()
            await pilot.press("slash", *"han", "question_mark")  # while filtering: help too
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert app.screen_stack[0].filter_text == "han"
            await pilot.press("escape", "enter")
            await pilot.pause()
            answers = app.screen.query_one("#answers", OptionList)
            await pilot.press("j")
            assert answers.highlighted == 1
    run(go())


def test_slash_searches_from_a_walk_and_ctrl_r_means_probes_everywhere():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press(*"mem", "enter", "slash")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen)
            assert isinstance(app.focused, Input) and app.focused.id == "search"
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, WalkScreen)
            bindings = {}
            for screen in ("HomeScreen", "WalkScreen", "TriageScreen", "BrowseScreen"):
                module = __import__(f"trainmedic.tui.screens.{screen[:-6].lower()}",
                                    fromlist=[screen])
                for b in getattr(module, screen).BINDINGS:
                    bindings.setdefault(b.key, set()).add(b.action.removeprefix("app."))
            assert bindings.get("ctrl+r", {"probes"}) == {"probes"}  # one meaning
            assert "slash" not in {b.key for b in app.BINDINGS} - {"slash"}
    run(go())


# -- F17: the footer is cut cleanly ---------------------------------------------------------------
def test_footer_leaves_no_stray_character_at_narrow_widths():
    """Narrow, the footer is the wide footer cut at the edge: nothing of another key after it
    (Textual's docked palette key left one: `…^r probes F▏^p paletteu`)."""
    async def go():
        app = make_app()
        async with app.run_test(size=(60, 20)) as pilot:
            await pilot.pause()
            for keys in ((), ("ctrl+b",), ("escape", *"mem", "enter"), ("escape", "ctrl+r")):
                await pilot.press(*keys)
                await pilot.pause()
                narrow = screen_text(app)[-1]
                await pilot.resize_terminal(200, 20)
                await pilot.pause()
                wide = screen_text(app)[-1]
                await pilot.resize_terminal(60, 20)
                await pilot.pause()
                assert "▏" not in narrow and wide.startswith(narrow), (narrow, wide)
                assert wide.endswith("? help ^p palette")
    run(go())


# -- F8, F23: search finds commands, flags, variables, myths --------------------------------------
def test_browse_and_home_find_flags_variables_and_commands():
    async def go():
        app = builtin_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("ctrl+b")
            await pilot.pause()
            search = app.screen.query_one("#search", Input)
            outline = app.screen.query_one("#outline", Tree)
            for query, node in (("expandable_segments", "oom#fragmentation"),
                                ("recompute-granularity", "oom#reduce-activations"),
                                ("py-spy", "nccl-hang"), ("nvidia-smi -r", "hardware")):
                search.value = query
                await pilot.pause()
                hits = [str(leaf.data) for branch in outline.root.children
                        for leaf in branch.children]
                assert any(h.startswith(node) for h in hits), (query, hits)
            await pilot.press("escape", "escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            await pilot.press(*"expandable_segments")
            await pilot.pause()
            keys = [e.key for e in app.screen.shown]
            assert "node:oom#fragmentation" in keys
            await pilot.press("enter")
            await pilot.pause()
            assert str(app.screen.session.current).startswith("compile#") or \
                _current(app) in {k.removeprefix("node:") for k in keys}
    run(go())


def test_palette_finds_a_variable_and_opens_a_walk_there():
    async def go():
        app = builtin_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"expandable_segments")
            await pilot.pause(0.8)
            await pilot.press("enter")
            await pilot.pause(0.3)
            assert isinstance(app.screen, WalkScreen)
            fix = app.screen.session.fix
            assert fix is not None
            assert any("expandable_segments" in (s.code or "") for s in fix.steps) \
                or "expandable_segments" in str(fix.why)
    run(go())


# -- issue 13 item 2: a marked command is copied on the second key --------------------------------
def test_a_marked_command_shows_its_mark_first_and_copies_on_the_second_key():
    async def go():
        app = make_app()
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await pilot.press(*"hang", "enter", "1")  # hang#straggler: step 2 ends a process
            await pilot.pause()
            lines = screen_text(app)
            mark = next(i for i, line in enumerate(lines) if "DANGER (kill)" in line)
            command = next(i for i, line in enumerate(lines) if "kill <PID>" in line)
            assert mark < command  # read before it is copied
            await pilot.press("1")  # an ordinary command: copied at once
            assert app.clipboard == 'py-spy dump --pid "$PID"'
            await pilot.press("2")
            await pilot.pause()
            assert app.clipboard == 'py-spy dump --pid "$PID"'  # not yet
            assert any("Ends the training process" in n.message and "Press 2 again" in n.message
                       for n in app._notifications)
            assert "y copy it" in screen_text(app)[-1]
            await pilot.press("2")
            assert app.clipboard == "kill <PID>"
            app.copy_to_clipboard("")
            await pilot.press("2", "1")  # another key in between: asked again
            await pilot.pause()
            assert app.clipboard == 'py-spy dump --pid "$PID"'
            await pilot.press("2", "y")
            assert app.clipboard == "kill <PID>"
    run(go())


# -- F13: never wrapped inside a token ------------------------------------------------------------
def test_commands_fold_between_words_never_inside_one():
    async def go():
        app = builtin_app()
        async with app.run_test(size=(60, 20)) as pilot:
            app.open_walk("oom#fragmentation")
            await pilot.pause(0.3)
            blocks = list(app.screen.query(CodeBlock))
            assert blocks
            for block in blocks:
                shown = str(block.query_one(".code-text").render())
                words = " ".join(row.removesuffix(" \\").strip()
                                 for row in shown.splitlines()).split()
                assert words == block.code.split(), (shown, block.code)  # only between words
            token = next(b for b in blocks if "expandable_segments:True" in b.code)
            token.focus()
            for _ in range(20):  # the pane scrolls to the focused block after a refresh
                app.screen.query_one("#main").scroll_to_widget(token, animate=False)
                await pilot.pause(0.05)
                lines = [line.strip(" │╭╮╰╯─") for line in screen_text(app)]
                if any("PYTORCH_CUDA_ALLOC_CONF" in line for line in lines):
                    break
            # folded before the token; the token itself whole, cut at the edge if it must be
            assert any("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:Tru" in line
                       for line in lines), lines
            assert not any(line.startswith(("s:True", ":True", "True", "ue", "e ")) or line == "e"
                           for line in lines)
    run(go())


def test_a_word_wider_than_the_block_scrolls_sideways():
    from rich.text import Text

    from trainmedic.tui.widgets.codeblock import fold_line

    rows = fold_line(Text("--load /a/very/long/checkpoint/folder/name --ckpt-step 200"), 20)
    assert [r.plain for r in rows] == ["--load \\", "  /a/very/long/checkpoint/folder/name \\",
                                       "  --ckpt-step 200"]
    rows = fold_line(Text('grep -E "a b c d e f" x.log'), 14)
    assert '  "a b c d e f" \\' in [r.plain for r in rows]  # never inside quotes


# -- F15: the evidence panel scrolls from the keyboard, and goes away when empty ------------------
def test_evidence_panel_takes_focus_scrolls_and_hides_when_empty():
    from trainmedic.probes.base import ProbeResult

    def many(_names=None, _context=None):
        return [ProbeResult(f"probe{i}", "ok", f"line {i} of the evidence") for i in range(40)]

    async def go():
        app = make_app(probe_runner=many)
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.press(*"hang", "enter")  # hang#stuck: runs env, which 'many' answers
            await app.workers.wait_for_complete()
            await pilot.pause()
            panel = app.screen.query_one(EvidencePanel)
            assert panel.display and not panel.empty
            await pilot.press("tab")
            await pilot.pause()
            assert app.focused is panel
            await pilot.press("pagedown")
            await pilot.pause()
            assert panel.scroll_y > 0  # the probes below the fold can be read
            await pilot.press("v")
            await pilot.pause()
            assert not panel.display  # v hides it
        app = make_app()
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.press(*"mem", "enter")
            await pilot.pause()
            panel = app.screen.query_one(EvidencePanel)
            assert panel.empty and not panel.display  # nothing to say: the question gets it all
            await pilot.press("v")
            await pilot.pause()
            assert panel.display and "No evidence yet" in panel.text.plain
            assert "rules" not in panel.text.plain  # F24: no format jargon
    run(go())


# -- F25: the polish list -------------------------------------------------------------------------
def test_home_detail_says_where_it_was_cut():
    async def go():
        app = builtin_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            detail = str(app.screen.query_one("#detail", Static).render())
            assert detail.rstrip().endswith("…"), detail
    run(go())


def test_browse_cuts_labels_with_an_ellipsis_lists_trees_as_home_and_expands_search_hits():
    async def go():
        app = builtin_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+b")
            await pilot.pause()
            outline = app.screen.query_one("#outline", Tree)
            assert str(outline.root.children[0].label).startswith("triage")  # as home
            await pilot.press("enter", "asterisk")
            await pilot.pause()
            assert outline.virtual_size.width <= outline.size.width  # no sideways scrollbar
            assert any(line.rstrip().endswith("…") for line in screen_text(app)[:20])
            app.screen.query_one("#search", Input).value = "fragmented"
            await pilot.pause()
            outline.focus()
            await pilot.press("down", "asterisk")
            await pilot.pause()
            assert sum(1 for _ in outline.root.children) >= 1
            expanded = [n for b in outline.root.children for n in b.children if n.is_expanded]
            assert expanded or all(not n.allow_expand for b in outline.root.children
                                   for n in b.children)
    run(go())


def test_the_report_screen_folds_the_probes_raw_facts():
    from trainmedic.tui.screens.report import on_screen

    page = ("## Probe results\n\n<details><summary>gpu: facts and raw output</summary>\n\n"
            "```json\n{\"a\": 1}\n```\n\n</details>\n")
    shown = on_screen(page)
    assert "```json" not in shown and "*gpu: facts and raw output: in the saved file.*" in shown


def test_memory_estimate_from_home_matches_the_cli_and_names_an_unreadable_path():
    from trainmedic.commands.memory_args import load_config
    from trainmedic.memory import add_suggestions, estimate, run_checks
    from trainmedic.memory.summary import summarize
    from trainmedic.tui.screens.memory import MemoryScreen

    script = Path(__file__).resolve().parents[1] / "fixtures" / "memory" / \
        "megatron_llama3_8b_h100_fp8.sh"

    from types import SimpleNamespace

    args = SimpleNamespace(passthrough=[], script_args="", script=str(script))
    config, _cmd = load_config(args)
    report = add_suggestions(estimate(config))
    report.checks = run_checks(config)
    cli = summarize(report)  # what `trainmedic memory --script X --no-probe` prints

    async def go():
        app = make_app()
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press(*"memory est", "enter")
            await pilot.pause()
            assert isinstance(app.screen, MemoryScreen)
            app.screen.query_one("#launch").text = str(script)
            await pilot.press("ctrl+s")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.screen.summary == cli
            text = "\n".join(screen_text(app))
            assert cli.verdict_line.split(";")[0] in " ".join(text.split())
            assert "Cheapest changes that fit" in text or "closest" in text
            app.screen.query_one("#launch").text = "/no/such/train.sh"
            await pilot.press("ctrl+s")
            await app.workers.wait_for_complete()
            await pilot.pause()
            status = str(app.screen.query_one("#memory-status", Static).render())
            assert status == "cannot read /no/such/train.sh: no such file"
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert "Memory estimate" in titles
    run(go())
