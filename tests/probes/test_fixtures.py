"""Fixture hygiene: every fixture says where it comes from on its first line."""

from .helpers import FIXTURES


def test_every_fixture_names_its_source_or_says_it_is_synthetic():
    files = sorted(p for p in FIXTURES.iterdir() if p.is_file())
    assert len(files) >= 20
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first.startswith(("# source: https://github.com/", "# synthetic:")), path.name
