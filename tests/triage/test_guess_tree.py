"""The never-silent guess's tree: the words of an error no signature knows, weighed against the
trees' signatures and, at a quarter of the weight, the trees' own prose.

Lines come from the public corpus (tests/corpus, tune cases; source URL on each case's line 1).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from trainmedic.triage import triage_text
from trainmedic.triage.signatures import forest_signatures

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402


def case_excerpt(relative: str) -> str:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    return case.excerpt


def line_with(relative: str, words: str) -> str:
    return next(line for line in case_excerpt(relative).splitlines() if words in line)


def test_prose_of_the_tree_decides_an_nccl_cuda_failure_no_signature_knows():
    """'NCCL WARN Cuda failure 'operation not supported'': the signatures' words alone leaned
    to multi-node; the nccl-hang tree's questions speak of NCCL's own CUDA failures. (The words
    learned from the tune incidents lean to containers for this bare line since batch 9's two
    container cases with NCCL's `init.cc` set-up lines were learned, beside the NVLS and shm
    "Cuda failure" ones; the whole excerpt's answer is unchanged.)"""
    relative = (
        "nccl-hang/nccl_warn_cuda_failure_operation_not_supported_mempool_ci_torchtune_2556.log")
    line = line_with(relative, "NCCL WARN Cuda failure")
    signatures = forest_signatures()
    scores = signatures.word_scores(line, signatures.disowned(line))
    assert max(scores, key=scores.__getitem__) == "nccl-hang"
    top = triage_text(case_excerpt(relative)).findings[0]
    assert top.tree == "nccl-hang"


def test_one_common_word_of_prose_names_no_tree():
    """'terminate called after throwing an instance of ...' shares one plain word with some
    tree's prose and none with any signature: the trees' words name no tree, rather than a
    chance one. (The words learned from the tune incidents, where this abort follows NCCL
    watchdog timeouts, do name one: tests/triage/test_learned_words.py.)"""
    relative = "nccl-hang/first_allreduce_seqnum1_timeout_picotron_6.log"
    line = line_with(relative, "terminate called after throwing")
    sigs = dataclasses.replace(forest_signatures(), words=None)
    assert sigs.word_scores(line) == {}
    assert sigs.guess_tree(line) == (None, 0.0)


def test_signature_words_outweigh_prose_words():
    """Every tree's prose holds words of other trees' signatures; a signature word still
    decides: an out-of-memory line is the oom tree's."""
    sigs = forest_signatures()
    assert sigs.guess_tree("torch.OutOfMemoryError: CUDA out of memory.")[0] == "oom"
    assert all(not (words & set(sigs.vocabulary.get(tree, ())))
               for tree, words in sigs.knowledge.items())
