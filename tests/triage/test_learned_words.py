"""The guess's learned words (trees/learned/words.json): one tolerant reader, a shipped file that
is what scripts/learn_words.py makes of the current corpus, and guesses it decides.

Lines and logs come from the public corpus (tests/corpus, tune cases only; source URL on each
case's first line). The model was learned from these same cases, so the guesses below show what
the shipped file does, not how well it generalises (benchmarks/guess_cv.py measures that).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from trainmedic.trees.paths import builtin_tree_dir
from trainmedic.triage import triage_text
from trainmedic.triage.signatures import LEARNED_MIN_WORDS, combine, forest_signatures
from trainmedic.triage.words import ALPHA, LearnedWords, builtin_words, fit, read_learned, tokens

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import learn_words  # noqa: E402
from corpus import CASES, read_case  # noqa: E402

SHIPPED = builtin_tree_dir() / "learned" / "words.json"


def tune_case(relative: str):
    case = read_case(CASES / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    return case


# ---- the reader ----------------------------------------------------------------------------

def test_a_missing_file_means_no_learned_words(tmp_path):
    assert read_learned(tmp_path / "words.json") is None


@pytest.mark.parametrize("text", [
    "", "{", "not json", "\x00\xff", "[1, 2]", "null", "42", '{"format": 1}',
    '{"format": 2, "counts": {"oom#when": {"cuda": 1}}}',
    '{"format": 1, "counts": []}',
    '{"format": 1, "counts": {"oom#when": ["cuda"]}}',
    '{"format": 1, "counts": {"oom#when": {"cuda": "3"}}}',
    '{"format": 1, "counts": {"#when": {"cuda": 3}}}',
    "[" * 100000,
])
def test_a_garbled_or_mistyped_file_means_no_learned_words(tmp_path, text):
    path = tmp_path / "words.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    assert read_learned(path) is None


def test_a_file_that_is_not_utf8_or_not_a_file_means_no_learned_words(tmp_path):
    path = tmp_path / "words.json"
    path.write_bytes(b'{"format": 1, "counts": {"oom#when": {"\xff\xfe": 1}}}')
    assert read_learned(path) is None
    assert read_learned(tmp_path) is None  # a folder


def test_a_wrongly_typed_entry_is_left_out_and_the_rest_kept():
    model = LearnedWords.from_dict({
        "format": 1, "alpha": "much", "provenance": {"script": "x", "cases": 3},
        "docs": {"oom#when": 2, "nccl-hang#?": True, "gone#x": 1},
        "counts": {"oom#when": {"cuda": 2, "memory": True, "alloc": -1, "out": 1.5},
                   "nccl-hang#?": {"nccl": 1}, "bad#x": "nccl", 3: {"x": 1}},
    })
    assert model is not None
    assert model.counts == {"oom#when": {"cuda": 2}, "nccl-hang#?": {"nccl": 1}}
    assert model.docs == {"oom#when": 2}
    assert model.alpha == ALPHA  # the default, for a non-number
    assert model.provenance == {"script": "x"}


@pytest.mark.parametrize("alpha", [0, -1, float("nan"), float("inf"), True])
def test_a_smoothing_that_is_not_a_positive_number_falls_back_to_the_default(alpha):
    model = LearnedWords.from_dict({"format": 1, "alpha": alpha,
                                    "counts": {"oom#when": {"cuda": 1}}})
    assert model is not None and model.alpha == ALPHA


def test_the_record_round_trips():
    model = fit([("oom#when", "torch.OutOfMemoryError: CUDA out of memory"),
                 ("nccl-hang#?", "NCCL WARN Call to connect returned Connection refused")],
                provenance={"script": "test"})
    assert LearnedWords.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_no_learned_words_leaves_the_signature_words_guess_as_it_was():
    sigs = forest_signatures()
    bare = dataclasses.replace(sigs, words=None)
    line = "RuntimeError: write(): fd 29 failed with Input/output error"
    scores = bare.word_scores(line)
    assert bare.guess_tree(line) == combine(scores, {})
    assert combine(scores, {})[0] == max(sorted(scores), key=lambda t: scores[t])
    assert bare.guess_node(line, "checkpoint") is None


# ---- the words -----------------------------------------------------------------------------

def test_tokens_keep_library_names_and_drop_numbers_hex_and_path_furniture():
    line = ("[rank3]: torch.distributed.DistBackendError: NCCL error in: /usr/lib/python3.10/"
            "site-packages/torch/csrc/ProcessGroupNCCL.cpp:1970, cudaMalloc failed ibv_reg_mr "
            "ZeRO 0x7f3a2b1c 12345 deadbeef1")
    words = tokens(line)
    for kept in ("nccl", "cudamalloc", "ibv_reg_mr", "zero", "distbackenderror",
                 "processgroupnccl", "torch"):
        assert kept in words
    for dropped in ("0x7f3a2b1c", "12345", "deadbeef1", "usr", "lib", "site", "packages",
                    "python3", "rank3", "cpp", "1970"):
        assert dropped not in words


# ---- the shipped file ----------------------------------------------------------------------

def test_the_shipped_file_is_what_the_script_makes_of_the_current_corpus():
    """Not stale: relearned from the tune cases now, it is the same file (the corpus commit it
    names aside: a commit that changes no tune case changes no count)."""
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    fresh = learn_words.build(commit=shipped["provenance"]["corpus_commit"])
    assert learn_words.render(fresh) == SHIPPED.read_text(encoding="utf-8"), \
        "trees/learned/words.json is stale: run scripts/learn_words.py"


def test_the_shipped_file_says_where_it_comes_from():
    model = builtin_words()
    assert model is not None
    assert model.provenance["script"] == "scripts/learn_words.py"
    assert model.provenance["split"] == "tune"
    assert int(model.provenance["cases"]) == len(learn_words.tune_incidents())
    assert forest_signatures().words == model


def test_the_learner_reads_no_held_out_case():
    paths = list(learn_words.tune_paths())
    assert paths and all(read_case(p).split == "tune" for p in paths)


# ---- guesses the learned words decide ------------------------------------------------------

@pytest.mark.parametrize(("relative", "words", "place"), [
    # "write(): fd N failed with Input/output error": a failed torch.save on a full disk
    ("checkpoint/torch_save_write_fd_input_output_error_disk_full_pytorch_10577.log",
     "RuntimeError: write(): fd", ("checkpoint", "disk-full")),
    # "unable to write to file </torch_...>": a DataLoader worker's shared memory ran out
    ("data-pipeline/unable_to_write_torch_shm_file_nnunet_294.log",
     "RuntimeError: unable to write to file", ("data-pipeline", "shm-exhausted")),
    # "cuda runtime error (30) : unknown error" at CUDA's start: a driver that needs a reload
    ("hardware/unknown_error_30_cuda_init_reboot_maskrcnn_238.log",
     "cuda runtime error (30)", ("hardware", "driver-broken")),
])
def test_learned_words_decide_a_guess_the_signature_words_got_wrong(relative, words, place):
    case = tune_case(relative)
    line = learn_words.guess_input(case.excerpt)
    assert line is not None and words in line
    sigs = forest_signatures()
    assert dataclasses.replace(sigs, words=None).guess_tree(line)[0] != place[0]
    tree, _score = sigs.guess_tree(line)
    assert (tree, sigs.guess_node(line, tree or "")) == place


def test_the_guess_finding_names_the_learned_place_and_says_it_is_a_guess():
    """A C++ abort of c10::DistBackendError shares no word with any signature; in the tune
    incidents it follows the NCCL watchdog's timeout."""
    case = tune_case("nccl-hang/watchdog_broadcast_1800s_distbackenderror_catalyst_15.log")
    line = next(x for x in case.excerpt.splitlines() if x.startswith("terminate called after"))
    assert dataclasses.replace(forest_signatures(), words=None).guess_tree(line)[0] is None
    top = triage_text(line).findings[0]
    assert (top.kind, top.guess, top.link) == ("guess", True, "nccl-hang#watchdog-timeout")
    assert "its words point to nccl-hang#watchdog-timeout" in top.summary
    assert top.confidence < 0.5


def test_the_learned_words_keep_out_of_a_message_they_do_not_know():
    """Where the error holds fewer than LEARNED_MIN_WORDS words the model knows well, the
    signature words decide alone (the gate cross-validation chose)."""
    sigs = forest_signatures()
    line = "RuntimeError: frobnication of the widget failed"
    assert sigs.words is not None and sigs.words.known(line) < LEARNED_MIN_WORDS
    assert sigs.guess_tree(line) == dataclasses.replace(sigs, words=None).guess_tree(line)
    assert sigs.guess_node(line, "startup") is None


def test_a_word_model_never_makes_a_finding_on_a_healthy_log():
    healthy = [read_case(p) for p in learn_words.tune_paths() if p.parent.name == "healthy"]
    assert healthy
    for case in healthy:
        assert triage_text(case.excerpt, name=case.name).findings == [], case.name


def test_a_word_every_tree_holds_weighs_nothing_in_the_posterior():
    """A word all trees' incidents hold ("runtimeerror") neither decides nor tips a guess: the
    posterior weights each word by how few trees hold it."""
    model = fit([("oom#a", "RuntimeError CUDA out of memory"),
                 ("startup#b", "RuntimeError ImportError libfoo"),
                 ("startup#c", "RuntimeError ImportError libbar")])
    assert model.posterior("RuntimeError") == {}
    # unweighted, the word common to both would favour oom (fewer words, so each is likelier)
    assert max(model.posterior("RuntimeError memory").items(), key=lambda kv: kv[1])[0] == "oom"
    assert max(model.posterior("RuntimeError ImportError").items(),
               key=lambda kv: kv[1])[0] == "startup"
