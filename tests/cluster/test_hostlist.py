"""Hostlist expansion against Slurm's documented examples, compression, and bad specs.

Examples: Slurm::Hostlist(3pm), https://manpages.ubuntu.com/manpages/noble/man3/Slurm::Hostlist.3pm.html
("node1,node[2-5,12]", "tux[0-5,12,20-25]"), and slurm_hostlist_create(3) ("linux[1-3,6]").
"""

from __future__ import annotations

import random

import pytest

from trainmedic.cluster.hostlist import MAX_HOSTS, compress, expand
from trainmedic.errors import UsageError


def test_documented_examples():
    assert expand("linux[1-3,6]") == ["linux1", "linux2", "linux3", "linux6"]
    assert expand("node1,node[2-5,12]") == [
        "node1", "node2", "node3", "node4", "node5", "node12"]
    assert expand("tux[0-5,12,20-25]") == (
        [f"tux{i}" for i in range(6)] + ["tux12"] + [f"tux{i}" for i in range(20, 26)])
    assert expand("tux[0-3,5]") == ["tux0", "tux1", "tux2", "tux3", "tux5"]


def test_zero_padding_is_kept():
    assert expand("node[01-10]") == [f"node{i:02d}" for i in range(1, 11)]
    assert expand("gpu[008-011]") == ["gpu008", "gpu009", "gpu010", "gpu011"]


def test_several_brackets_multiply_in_order():
    assert expand("rack[0-1]_blade[0-2]") == [
        "rack0_blade0", "rack0_blade1", "rack0_blade2",
        "rack1_blade0", "rack1_blade1", "rack1_blade2"]


def test_commas_inside_brackets_and_mixed_lists():
    assert expand("node[01-02,07],gpu-a7 login1") == [
        "node01", "node02", "node07", "gpu-a7", "login1"]
    assert expand("a[1-2]-ib,b") == ["a1-ib", "a2-ib", "b"]


def test_duplicates_dropped_unless_asked():
    assert expand("n[1-2],n1") == ["n1", "n2"]
    assert expand("n[1-2],n1", unique=False) == ["n1", "n2", "n1"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("node[3-1]", "backwards"),
        ("node[01-", "never closed"),
        ("node[a-c]", "not a number"),
        ("", "empty"),
        ("   ", "empty"),
        (",", "empty"),
        ("node[]", "empty brackets"),
        ("node]1[", "without"),
        ("node[1-[2]]", "nested"),
        ("node[0-99999999]", "over"),
        ("a[0-999]b[0-999]", "more than"),
        ("node01,-oProxyCommand=touch_x", "starts with '-'"),
    ],
)
def test_bad_specs_get_one_line_errors(spec, words):
    with pytest.raises(UsageError) as info:
        expand(spec)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_cap_is_exact():
    assert len(expand(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS
    with pytest.raises(UsageError):
        expand(f"n[1-{MAX_HOSTS}],extra")


def test_compress_matches_slurm_forms():
    assert compress(expand("node[01-16],gpu-a7")) == "node[01-16],gpu-a7"
    assert compress(["tux0", "tux1", "tux2", "tux3", "tux5"]) == "tux[0-3,5]"
    assert compress(["node09", "node10", "node11"]) == "node[09-11]"
    assert compress(["login"]) == "login"
    assert compress(["n1-ib", "n2-ib"]) == "n[1-2]-ib"


def test_compress_round_trips_random_sets():
    rng = random.Random(7)
    for _ in range(200):
        hosts = sorted({
            f"{rng.choice(['n', 'gpu', 'rack1-'])}{rng.randint(0, 40):0{rng.choice([1, 3])}d}"
            for _ in range(rng.randint(1, 30))
        })
        assert sorted(expand(compress(hosts))) == hosts
