"""Discovery shows director chassis and pods: in the text summary, in ``--json``, in the TUI's
overview and node detail, and in the scheduler tree (Slurm topology.conf)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fabric.app.discovery.discover import discover_text, discovery_to_dict
from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.cli.main import main
from fabric.exports.slurm import topology_conf
from fabric.exports.tree import build_tree
from fabric.present.discovery import render_discovery
from fabric.present.overview import overview_sections
from tests.conftest import REALDATA
from tests.tui_data import build_store
from topology.generate import generate, to_ibnetdiscover

MCS8500 = REALDATA / "ibnetdiscover" / "superbench-faked-hdr-mcs8500-full-f-flags.txt"
SELENE = REALDATA / "ibnetdiscover" / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"
# The issue's shape at a tenth of its size: leaves in 8 pods, each pod on its own line board of
# each of four directors.
PODS = "leafspine:leaves=16,hosts=4,directors=4,pods=8,fabric_boards=4"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout


def test_text_names_the_chassis_and_its_pods() -> None:
    code, out = run("discover", "--input", str(MCS8500))
    assert code == 0
    lines = out.splitlines()
    assert "  chassis 0xb8599f0300c2f06a (rmd70-0101-0908-01ib1-A): 2 line boards, 1 fabric board" in lines
    assert "  not rail-optimized; 2 pods of 2-3 leaves" in lines
    header = next(line for line in lines if line.startswith("pod "))
    assert header.split() == ["pod", "leaves", "hosts", "uppers", "uplinks/leaf", "leaf", "names"]
    assert "No wiring anomalies." in lines


def test_json_chassis_pods_and_each_node() -> None:
    code, out = run("discover", "--input", str(MCS8500), "--json")
    assert code == 0
    d = json.loads(out)
    (box,) = d["chassis"]
    assert box["guid"] == "0xb8599f0300c2f06a" and box["name"] == "rmd70-0101-0908-01ib1-A"
    assert (len(box["line_boards"]), len(box["fabric_boards"]), box["unsure_boards"]) == (2, 1, [])
    nodes = {n["guid"]: n for n in d["nodes"]}
    assert {nodes[g]["name"] for g in box["line_boards"]} == {
        "rmd70-0101-0908-01ib1-A/L01",
        "rmd70-0101-0908-01ib1-A/L02",
    }
    for g in box["line_boards"] + box["fabric_boards"]:
        assert nodes[g]["chassis"] == box["guid"]
    assert nodes[box["fabric_boards"][0]]["board"] == "fabric"
    boards = set(box["line_boards"] + box["fabric_boards"])
    others = [n for n in d["nodes"] if n["kind"] == "switch" and n["guid"] not in boards]
    assert len(others) == 5 and all(n["chassis"] is None and n["board"] is None for n in others)  # the leaves
    assert [(len(p["leaves"]), len(p["uppers"]), p["hosts"]) for p in d["pods"]] == [(3, 1, 6), (2, 1, 4)]
    leaf = next(n for n in d["nodes"] if n["name"] == "rmd70-0101-0919-11ib0")
    host = next(n for n in d["nodes"] if n["host"] == "RMD701091906003")
    assert leaf["pod"] == host["pod"] == 1 and leaf["group"] == 1
    s = d["summary"]
    assert (s["chassis"], s["pods"], s["groups"], s["group_kind"]) == (1, 2, 2, "pod")
    assert s["chassis_boards"] == {"line": 2, "fabric": 1, "unsure": 0}


def test_the_issue_shape_is_pods_not_loose_switches() -> None:
    d = discover_text(to_ibnetdiscover(generate(PODS)), "pods")
    text = render_discovery(d)
    assert "  not rail-optimized; 8 pods of 2 leaves" in text.splitlines()
    assert text.count(": 8 line boards, 4 fabric boards") == 4
    assert "chassis 0x0c42a10300a60003 (director-04)" in text
    assert "No wiring anomalies." in text


def test_a_clean_fabric_without_directors_says_nothing_of_chassis() -> None:
    d = discover_text(to_ibnetdiscover(generate("fattree-small")), "fattree")
    assert "chassis" not in render_discovery(d)
    doc = discovery_to_dict(d)
    assert doc["chassis"] == [] and doc["summary"]["chassis"] == 0
    assert all(n["chassis"] is None and n["board"] is None for n in doc["nodes"])


def test_units_keep_their_place_and_name_their_pod() -> None:
    code, out = run("discover", "--input", str(SELENE))
    assert code == 0
    assert "  rail-optimized: 2 rails (HCA indexes 4, 10), 42 scalable units in 4 pods of 16 leaves" in out
    header = next(line for line in out.splitlines() if line.startswith("group"))
    assert header.split() == ["group", "leaves", "hosts", "rails", "pod", "uplinks/leaf", "leaf", "names"]


def test_scheduler_tree_has_a_pod_level_and_a_chassis_on_top() -> None:
    d = discover_text(to_ibnetdiscover(generate(PODS)), "pods")
    tree = build_tree(d.fabric, d.classification)
    assert [len(level) for level in tree.levels] == [16, 8, 4]
    assert [sw.name for sw in tree.levels[1]] == [f"pod0{i}" for i in range(1, 9)]
    assert tree.levels[1][0].children == ("leaf-01", "leaf-02")
    assert {sw.name for sw in tree.levels[2]} == {f"director-0{i}" for i in range(1, 5)}
    assert all(sw.children == tuple(f"pod0{i}" for i in range(1, 9)) for sw in tree.levels[2])
    # Tier values (Kubernetes labels): the leaf, its pod, the set of all four directors.
    assert tree.host_tiers["cn0001"] == ("leaf-01", "pod01", "cores-01")
    conf = topology_conf(tree).text.splitlines()
    assert "SwitchName=pod01 Switches=leaf-[01-02]" in conf
    assert "SwitchName=director-01 Switches=pod[01-08]" in conf
    switches = [line for line in conf if line.startswith("SwitchName=")]
    assert len(switches) == 16 + 8 + 4 and not any("director-01-" in line for line in switches)  # no board


def test_tui_overview_and_node_detail(tmp_path: Path) -> None:
    path, _, _, _ = build_store(tmp_path / "s.db", snapshots=1, spec=PODS, faults=())
    svc = FabricService(open_session(db=path))
    view = svc.load_view()
    assert view is not None
    ov = svc.overview(view, None, svc.state())
    fabric_text = dict(overview_sections(ov))["FABRIC"]
    assert "chassis 4: 32 line boards, 16 fabric boards" in fabric_text
    assert "pods 8" in fabric_text
    board = next(g for g, c in view.discovery.classification.nodes.items() if c.name == "director-02/S03")
    detail = svc.node_detail(view, board, None)
    assert (detail.chassis, detail.board, detail.pod) == ("director-02", "fabric", None)
    leaf = next(g for g, c in view.discovery.classification.nodes.items() if c.name == "leaf-03")
    assert svc.node_detail(view, leaf, None).pod == 1


def test_a_leaf_cabled_to_no_upper_switch_is_in_no_pod() -> None:
    # An `ibnetdiscover -p` excerpt: ib-i4l1s01's spine cables are not in it.
    code, out = run(
        "discover", "--input", str(REALDATA / "ibnetdiscover" / "treydock-ibnetdiscover-p-ports-edr-osc.txt")
    )
    assert code == 0
    lines = out.splitlines()
    assert "  not rail-optimized; 1 pod of 1 leaf, 1 leaf in no pod" in lines
    assert next(line for line in lines if line.endswith("ib-i4l1s01")).split()[0] == "-"
