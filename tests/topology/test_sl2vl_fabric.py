"""SL2VL tables of another fabric are refused: most switches they list (by LID) are no switch in
the topology, or (OpenSM's dump, which names them) other switches by GUID. Every real capture of
the ring passes against the ring; one switch swapped since is no other fabric."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import ROOT
from topology.errors import ParseError
from topology.ibnetdiscover import read_ibnetdiscover
from topology.sl2vl import parse_sl2vl
from topology.sl2vl_fabric import check_tables_fabric

DATA = ROOT / "tests" / "data" / "sl2vl"
RING = DATA / "ibnetdiscover-ring5.txt"
FAT_TREE = ROOT / "tests" / "data" / "lft" / "ibnetdiscover-fattree-small.txt"
OPENSM = DATA / "opensm-sl2vl-ring5-dfsssp-qos.dump"
CAPTURES = sorted(p.name for p in DATA.glob("*sl2vl*"))


@pytest.mark.parametrize("name", CAPTURES)
def test_every_capture_is_of_its_own_fabric(name: str) -> None:
    check_tables_fabric(parse_sl2vl((DATA / name).read_text(), name), read_ibnetdiscover(RING))


def test_opensm_tables_of_another_fabric_are_refused_by_kind() -> None:
    t = parse_sl2vl(OPENSM.read_text(), "ring.dump")
    with pytest.raises(
        ParseError, match=r"LID 1 is a switch in the SL2VL tables but 'cn0001 mlx5_0', no switch"
    ):
        check_tables_fabric(t, read_ibnetdiscover(FAT_TREE))


def _switch_guids(text: str, keep: int) -> str:
    """The dump with the GUID of every switch header but the first ``keep`` changed."""
    seen = 0

    def swap(m: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return m.group(0) if seen <= keep else f"Switch 0x00000000deadbe{seen:02x}"

    return re.sub(r"^Switch 0x[0-9a-f]+", swap, text, flags=re.M)


def test_same_lids_other_switches_by_guid_are_refused() -> None:
    """A fabric cabled and numbered alike (same LIDs, same kinds): only the GUIDs tell."""
    t = parse_sl2vl(_switch_guids(OPENSM.read_text(), keep=2), "other.dump")
    with pytest.raises(
        ParseError, match=r"switch 0x00000000deadbe03 in the SL2VL tables .* \(3 of 5 switch LIDs"
    ):
        check_tables_fabric(t, read_ibnetdiscover(RING))


def test_one_switch_replaced_since_is_not_another_fabric() -> None:
    t = parse_sl2vl(_switch_guids(OPENSM.read_text(), keep=4), "one-swapped.dump")
    check_tables_fabric(t, read_ibnetdiscover(RING))


def test_tables_of_no_known_switch_are_refused() -> None:
    text = "# SL2VL table: Lid 900\n" + "".join(
        f"ports: in {i:2d}, out  1: |" + " 0|" * 16 + "\n" for i in range(3)
    )
    with pytest.raises(ParseError, match="none of the 1 switch LIDs of the SL2VL tables is in the topology"):
        check_tables_fabric(parse_sl2vl(text, "far.txt"), read_ibnetdiscover(RING))


def test_the_cli_says_it_in_one_line_exit_3(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main,
        [
            "routes", "check", "--input", str(FAT_TREE),
            "--tables", str(ROOT / "tests" / "data" / "lft" / "dump_fts-fattree-small-minhop.txt"),
            "--sl2vl", str(OPENSM),
        ],
    )  # fmt: skip
    assert res.exit_code == 3 and res.stdout == ""
    [line] = res.stderr.splitlines()
    assert line.startswith(f"ibfab: error: {OPENSM}: ") and line.endswith("tables of another fabric?")
