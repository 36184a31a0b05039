"""Fixture hygiene: every fixture says where it comes from on its first line: a public thread,
a recording on a real GPU machine, or that it is synthetic."""

from .helpers import FIXTURES


def test_every_fixture_names_its_source_or_says_it_is_synthetic():
    files = sorted(p for p in FIXTURES.iterdir() if p.is_file())
    assert len(files) >= 20
    for path in files:
        first = path.read_text().splitlines()[0]
        # a public thread, a recording on a real machine (scripts/device_fixtures.sh), or said
        assert first.startswith(("# source: https://github.com/", "# source: real output of ",
                                 "# synthetic:")), path.name
