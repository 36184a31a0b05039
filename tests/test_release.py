"""Release-ready: the wheel and the sdist build and pass `twine check`; the wheel installs into a
training environment without touching its Textual, and works from any folder (issue 21).

Needs the package registry (the test downloads Textual 8.2.7, build, twine and hatchling); it
skips, saying so, where the registry cannot be reached. About a minute on two cores.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from trainmedic import __version__

ROOT = Path(__file__).resolve().parents[1]
JOB_TEXTUAL = "8.2.7"  # a training environment's own Textual, older than our test pin

APP_STARTS = """
import asyncio
from trainmedic.tui.start import build_home_app

async def main():
    app = build_home_app([])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        print("screen:", type(app.screen).__name__, "trees:", len(app.cards))

asyncio.run(main())
"""


def sh(*argv: str | Path, cwd: Path | str | None = None, env: dict[str, str] | None = None,
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})},
                          stdin=subprocess.DEVNULL)


def make_venv(folder: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    return folder / "bin"


def test_wheel_and_sdist_install_into_a_training_env_and_keep_its_textual(tmp_path: Path):
    tools = make_venv(tmp_path / "tools")
    wheels = tmp_path / "wheels"
    fetched = sh(tools / "pip", "download", "--no-deps", "--quiet", "-d", wheels,
                 f"textual=={JOB_TEXTUAL}")
    if fetched.returncode != 0:
        pytest.skip("the package registry cannot be reached (offline): "
                    + (fetched.stderr.strip().splitlines() or ["no output"])[-1][:200])
    got = sh(tools / "pip", "install", "--quiet", "build>=1.2", "twine>=5")
    assert got.returncode == 0, got.stderr[-2000:]

    dist = tmp_path / "dist"
    built = sh(tools / "python", "-m", "build", "--outdir", dist, ROOT)  # sdist, then a wheel
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next(dist.glob(f"trainmedic-{__version__}-*.whl"))
    sdist = dist / f"trainmedic-{__version__}.tar.gz"
    assert sdist.is_file()
    checked = sh(tools / "twine", "check", "--strict", wheel, sdist)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout

    job = make_venv(tmp_path / "job")  # a training environment that already has Textual
    first = sh(job / "pip", "install", "--quiet", "--find-links", wheels,
               f"textual=={JOB_TEXTUAL}")
    assert first.returncode == 0, first.stderr[-2000:]
    ours = sh(job / "pip", "install", "--quiet", wheel)
    assert ours.returncode == 0, ours.stderr[-2000:]
    kept = sh(job / "python", "-c", "from importlib.metadata import version; "
              "print(version('textual'))")
    assert kept.stdout.strip() == JOB_TEXTUAL  # installing trainmedic left it alone

    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "c"),
             "PYTHONPATH": ""}  # the installed wheel, not this checkout
    lint = sh(job / "trainmedic", "lint", cwd="/", env=state)
    assert lint.returncode == 0, lint.stdout[-2000:] + lint.stderr[-2000:]
    assert sh(job / "trainmedic", "--version", cwd="/", env=state).stdout.strip() == \
        f"trainmedic {__version__}"
    started = sh(job / "python", "-c", APP_STARTS, cwd="/", env=state)
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.startswith("screen: HomeScreen trees: "), started.stdout
    assert int(started.stdout.split("trees: ")[1]) >= 10  # the built-in trees came along


def test_the_range_a_user_gets_and_the_pin_the_snapshots_need():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [d for d in project["dependencies"] if d.startswith("textual")]
    assert runtime == ["textual>=8.0,<9"]
    assert "textual==8.2.8" in project["optional-dependencies"]["test"]
