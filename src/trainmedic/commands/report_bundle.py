"""`trainmedic report --bundle FILE.tar.gz [SESSION] [--log PATH ...] [--repo PATH] [--force]`.

Gathers the sources at once (the probes, `nvidia-smi -q`, the kernel log and the triage of
`--log` run side by side, each under its own timeout), assembles the redacted archive
(`export/bundle.py`) and writes it atomically, 0600, never through a link and never over a file
it did not write unless `--force`.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainmedic.errors import UsageError
from trainmedic.textsafe import inert_line

if TYPE_CHECKING:
    from trainmedic.export.bundle import Bundle
    from trainmedic.probes.base import ProbeResult
    from trainmedic.saved_walks import WalkRecord


def _versions(probes: list[ProbeResult]) -> dict[str, Any]:
    from trainmedic import __version__

    probed = next((p for p in probes if p.name == "versions"), None)
    return {"trainmedic": __version__, "python": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(),
            "host": platform.node(),
            "versions_probe": None if probed is None else {
                "status": probed.status, "summary": probed.summary, "facts": probed.facts}}


def _walk(name: str | None) -> tuple[WalkRecord | None, str]:
    """The walk to report (named, or the latest), or None and why."""
    from trainmedic.saved_walks import find_walk

    saved, skipped = find_walk(name)
    for item in skipped:
        print(f"trainmedic: warning: {inert_line(str(item))}", file=sys.stderr)
    if saved is None:
        if name:
            raise UsageError(f"no saved walk '{name}' (see `trainmedic report --list`)")
        return None, "no saved walk yet (run `trainmedic walk TREE` first for the report)"
    return saved.record, ""


def run_bundle(args: argparse.Namespace) -> int:
    for flag, given in (("-o", args.output), ("--json", args.json), ("--list", args.list)):
        if given:
            raise UsageError(f"--bundle writes its own files; leave out {flag}")
    from trainmedic.export.bundle import Bundle, add_captured, add_environment
    from trainmedic.export.bundle_sources import kernel_excerpt, nvidia_smi_q
    from trainmedic.probes.base import NO_CONTEXT
    from trainmedic.probes.runner import run_probes

    target = Path(args.bundle)
    _check(target, force=args.force)  # refuse now, not after a minute of gathering
    walk, no_walk = _walk(args.session)
    repo = None
    if args.repo:
        from trainmedic.export.repoinfo import repo_info

        repo = repo_info(args.repo)
    context = walk.probe_context() if walk is not None else NO_CONTEXT
    with ThreadPoolExecutor(max_workers=4) as pool:
        probes_job = pool.submit(run_probes, None, context)
        nvsmi_job = pool.submit(nvidia_smi_q)
        kernel_job = pool.submit(kernel_excerpt)
        triage_job = pool.submit(_triage, args.log) if args.log else None
        probes = probes_job.result()
        nvsmi, kernel = nvsmi_job.result(), kernel_job.result()
        triage = triage_job.result() if triage_job is not None else None

    from trainmedic import __version__

    bundle = Bundle(created=datetime.now(UTC).replace(microsecond=0).isoformat()
                    .replace("+00:00", "Z"), version=__version__,
                    walk_id=walk.id if walk is not None else None)
    if walk is not None:
        from trainmedic.export.report import render_report
        from trainmedic.trees import load_forest

        forest = load_forest(args.trees)  # a report must work even while some tree has errors
        bundle.add_text("report.md", render_report(walk, forest, repo=repo,
                                                   fresh_probes=probes))
    else:
        bundle.skip("report.md", no_walk)
    bundle.add_json("probes.json", {"generated_by": "trainmedic report --bundle",
                                    "probes": [p.to_dict() for p in probes]})
    add_captured(bundle, "nvidia-smi-q.txt", nvsmi, "the GPUs as the driver sees them")
    add_environment(bundle, os.environ)
    bundle.add_json("versions.json", _versions(probes))
    add_captured(bundle, "kernel-xid-aer.txt", kernel, "NVIDIA Xid/NVRM and PCIe AER lines",
                 by_line=True)
    _add_triage(bundle, triage, walk)
    _write(bundle, target, force=args.force)
    kept = ", ".join(bundle.members)
    print(inert_line(f"wrote {target} (0600): {kept}, manifest.json"), file=sys.stderr)
    for item in bundle.skipped:
        print(inert_line(f"  skipped {item.name}: {item.why}"), file=sys.stderr)
    return 0


def _triage(paths: list[str]) -> dict[str, Any]:
    from trainmedic.triage import triage_paths

    return triage_paths(paths).to_dict()


def _add_triage(bundle: Bundle, triage: dict[str, Any] | None, walk: WalkRecord | None) -> None:
    if triage is not None:
        bundle.add_json("triage.json", {"generated_by": "trainmedic report --bundle",
                                        "source": "--log", **triage})
    elif walk is not None and walk.triage is not None:
        bundle.add_json("triage.json", {"generated_by": "trainmedic report --bundle",
                                        "source": f"the triage attached to walk {walk.id}",
                                        **walk.triage.to_dict()})
    else:
        bundle.skip("triage.json", "no triage attached to the walk and no --log given")


def _check(target: Path, *, force: bool) -> None:
    from trainmedic.safefile import check_target

    try:
        check_target(target, force=force)
    except OSError as exc:
        raise UsageError(f"{target}: cannot write: {exc.strerror or exc}") from None


def _write(bundle: Bundle, target: Path, *, force: bool) -> None:
    from trainmedic.safefile import PRIVATE, write_bytes

    try:
        write_bytes(target, bundle.archive(), mode=PRIVATE, force=force)
    except OSError as exc:
        raise UsageError(f"{target}: cannot write: {exc.strerror or exc}") from None
