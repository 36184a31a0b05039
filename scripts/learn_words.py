"""Learn the guess's words from the corpus's tune cases: writes trees/learned/words.json.

    PYTHONPATH=src python scripts/learn_words.py [--check]

Reads every case of tests/corpus whose header says `split: tune` (any batch); a held-out case is
recognised from its header and never read further. From each incident it takes its error lines
and traceback frames (`error_lines`; the guess's own input, `guess_input`, is among them) and
counts their words per expected place, `tree#node` (`trainmedic.triage.words.fit`). `--check`
says whether the shipped file is what this run would write (exit 1 if not), without writing; the
corpus commit it names is left aside there (a commit that changes no tune case changes no count).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from corpus import CASES, SEPARATOR, Case, read_case  # noqa: E402

from trainmedic.triage import lineinfo  # noqa: E402
from trainmedic.triage.unmatched import NEEDLES, ErrorTracker, classify  # noqa: E402
from trainmedic.triage.words import ALPHA, LearnedWords, fit, read_learned  # noqa: E402

OUT = ROOT / "trees" / "learned" / "words.json"
SCRIPT = "scripts/learn_words.py"
# kinds of error line whose words the guess reads (an exit code or a kill has none)
WORDY = ("exception", "nccl", "cuda", "crash", "logged")


def tune_paths(root: Path = CASES) -> Iterator[Path]:
    """Case files whose header says `split: tune`; the header alone is read to decide."""
    for path in sorted(root.glob("*/*.log")):
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.rstrip("\n") == SEPARATOR:
                    break
                if line.rstrip("\n") == "# split: tune":
                    yield path
                    break


def tune_incidents(trees: set[str] | None = None) -> list[Case]:
    """The tune cases that are incidents (not healthy), of trees in `trees` if given."""
    out = []
    for path in tune_paths():
        case = read_case(path)
        if case.split != "tune" or case.healthy or case.tree is None:
            continue
        if trees is None or case.tree in trees:
            out.append(case)
    return out


def _lines(excerpt: str) -> Iterator[tuple[int, str]]:
    for lineno, raw in enumerate(excerpt.splitlines(), 1):
        for seg in lineinfo.segments(raw):
            yield lineno, lineinfo.clean(seg)


def guess_input(excerpt: str) -> str | None:
    """What the guess would read if no signature knew any line of `excerpt`: the last error
    of the source (an exception rather than its launcher echo) and its frame; None when that
    error has no words (an exit code, a kill) or there is none."""
    tracker = ErrorTracker()
    tracker.new_source("excerpt")
    for lineno, text in _lines(excerpt):
        if any(n in text for n in NEEDLES):
            tracker.add(text, lineno)
    tracker.finish()
    errors = tracker.uncovered
    if not errors or errors[0].kind not in WORDY:
        return None
    return f"{errors[0].text} {errors[0].frame or ''}"


def error_lines(excerpt: str) -> str:
    """Every line of `excerpt` that reports an error with words, and every traceback frame."""
    out = []
    for _lineno, text in _lines(excerpt):
        if '", line ' in text:
            out.append(text)
            continue
        found = classify(text)
        if found is not None and found[0] in WORDY:
            out.append(text)
    return "\n".join(out)


def training_text(case: Case) -> str:
    """The words a case teaches: its error lines (the guess's own input among them). In
    cross-validation these did as well as the guess's input alone or the whole excerpt, and
    they keep out the progress lines' words."""
    return error_lines(case.excerpt)


def learn(cases: list[Case], provenance: dict[str, str] | None = None,
          alpha: float = ALPHA) -> LearnedWords:
    return fit(((c.expect, training_text(c)) for c in cases), alpha=alpha,
               provenance=provenance)


def inputs_digest(cases: list[Case]) -> str:
    """sha256 over the cases' names, expected places and excerpts: what the model is from."""
    h = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.name):
        h.update(f"{case.name}\0{case.expect}\0{case.excerpt}\0".encode())
    return h.hexdigest()


def corpus_commit() -> str:
    """The last commit that touched the corpus (unknown outside a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%H", "--", "tests/corpus/cases"],
                             cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def build(commit: str | None = None) -> LearnedWords:
    """The model from the current corpus, with its provenance."""
    cases = tune_incidents()
    provenance = {
        "script": SCRIPT,
        "corpus_commit": commit if commit is not None else corpus_commit(),
        "cases": str(len(cases)),
        "split": "tune",
        "inputs_sha256": inputs_digest(cases),
        "text": "the error lines of each excerpt and its traceback frames",
    }
    return learn(cases, provenance)


def render(model: LearnedWords) -> str:
    return json.dumps(model.to_dict(), indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the shipped file differs from what this run would write")
    args = ap.parse_args()
    if args.check:
        shipped = read_learned(OUT)
        commit = shipped.provenance.get("corpus_commit") if shipped is not None else None
        try:
            same = OUT.read_text(encoding="utf-8") == render(build(commit))
        except OSError:
            same = False
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'STALE: run ' + SCRIPT}")
        return 0 if same else 1
    model = build()
    text = render(model)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    counted = sum(model.docs.values())
    trees = {place.partition("#")[0] for place in model.counts}
    print(f"wrote {OUT.relative_to(ROOT)}: {len(trees)} trees ({len(model.counts)} places), "
          f"{len({w for c in model.counts.values() for w in c})} words, from {counted} of "
          f"{model.provenance['cases']} tune incidents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
