"""The cable inventory of the real NDR ibdiagnet run: `ibfab topology cable` (text, --json, from
the run or from the store), the TUI's read model, and health's note when failing links share a
vendor, part number or length beyond chance (clean and population-explained cases say nothing)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.app.discovery.cables import read_inventory
from fabric.app.health.assess import assess_store
from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from fabric.cli.main import main
from fabric.health.cables import shared_cable_traits, tail_chance
from fabric.present.cables import NO_INVENTORY
from fabric.store import Store
from tests.conftest import REALDATA
from tests.tui_data import counter_rows
from topology.ibdiag_csv import db_csv_sections, read_db_csv, read_db_csv_fabric
from topology.model import Fabric, Link, LinkKey

IBDIAG_DIR = REALDATA / "ibdiagnet"
DB_CSV = IBDIAG_DIR / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
CABLES = IBDIAG_DIR / "garyli-ndr-272nodes-ibdiagnet2.cables"
CAPTURE = REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"
HCA_PORT = "is-north-7-compute-1 mlx5_0/1"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def cables_block(port_guid: str, port: int) -> str:
    """The raw .cables record of one port, cut from the file by its header line."""
    text = CABLES.read_text()
    start = re.search(rf"^Port={port} Lid=\S+ GUID={port_guid}\b.*$", text, re.M)
    assert start is not None
    end = text.find("\nPort=", start.end())
    return text[start.start() : end if end > 0 else None]


def port_guid_of(node_guid: str, port: int) -> str:
    for row in db_csv_sections(read_db_csv(DB_CSV))["PORTS"].rows:
        if int(row["NodeGuid"], 16) == int(node_guid, 16) and int(row["PortNum"]) == port:
            return row["PortGuid"]
    raise AssertionError(f"{node_guid}/{port} not in PORTS")


def test_cable_detail_from_the_run_matches_the_raw_files() -> None:
    code, out, err = run("topology", "cable", HCA_PORT, "--ibdiagnet", str(IBDIAG_DIR), "--json")
    assert code == 0, err
    d = json.loads(out)
    near, far = d["near"], d["far"]
    assert near["name"] == "is-north-7-compute-1 mlx5_0" and near["port"] == 1
    assert far is not None and d["width"] == 4 and d["speed"] == "NDR"
    sections = db_csv_sections(read_db_csv(DB_CSV))
    fec = {(int(r["NodeGuid"], 16), int(r["PortNum"])): int(r["FECActv"]) for r in sections["FEC_MODE"].rows}
    temps = {int(r["NodeGUID"], 16): int(r["CurrentTemperature"]) for r in sections["TEMP_SENSING"].rows}
    for end in (near, far):
        # The HCA's record is under its port GUID in .cables, the switch's under its node GUID.
        guid = port_guid_of(end["guid"], end["port"]) if end is near else end["guid"]
        block = cables_block(guid, end["port"])
        m = end["module"]
        for key, field in (("vendor", "Vendor"), ("part_number", "PN"), ("serial", "SN"), ("type", "Type")):
            assert re.search(rf"^{field}\s*:\s*{re.escape(m[key])}\s*$", block, re.M), (key, block[:300])
        assert f"Temperature: {m['temperature_c']:g}C" in block
        assert len(m["rx_power_dbm"]) == len(re.findall(r"^RX\d Power", block, re.M)) > 0
        assert fec[(int(end["guid"], 16), end["port"])] == 4 and end["fec"] == "RS_FEC_544_514"
        assert end["node_temperature_c"] == temps[int(end["guid"], 16)]
    assert d["inventory"] == str(DB_CSV) and d["inventory_taken_at"] == 1743464598.0
    code, text, _ = run("topology", "cable", HCA_PORT.replace("/", ":"), "--ibdiagnet", str(IBDIAG_DIR))
    assert code == 0 and text.startswith("Cable is-north-7-compute-1 mlx5_0:1 <-> ")
    for word in (near["module"]["serial"], far["module"]["serial"], "RS_FEC_544_514", "TX bias per lane"):
        assert word in text


def test_kept_inventory_serves_a_stored_fabric_and_the_tui() -> None:
    code, direct, _ = run("topology", "cable", HCA_PORT, "--ibdiagnet", str(IBDIAG_DIR), "--json")
    assert code == 0
    # Nothing kept yet: the cable is shown, the inventory said to be missing.
    code, out, _ = run("topology", "cable", HCA_PORT, "--input", str(CAPTURE), "--json")
    bare = json.loads(out)
    assert code == 0 and bare["inventory"] is None and bare["near"]["module"] is None
    code, text, _ = run("topology", "cable", HCA_PORT, "--input", str(CAPTURE))
    assert code == 0 and NO_INVENTORY in text
    code, out, _ = run("counters", "collect", "--ibdiagnet", str(IBDIAG_DIR))
    assert code == 0 and "cable inventory of 510 modules kept" in out
    # No source: the stored snapshot and the kept inventory, the same cable as from the run.
    code, out, err = run("topology", "cable", HCA_PORT, "--json")
    assert code == 0 and "using stored topology snapshot 1" in err
    assert json.loads(out) == json.loads(direct)
    service = FabricService(open_session())
    view = service.load_view()
    assert view is not None
    d = json.loads(direct)
    detail = service.cable_detail(view, d["near"]["guid"], 1)
    assert detail.to_dict() == d


def test_uncabled_port_and_bad_spellings() -> None:
    fabric = read_db_csv_fabric(DB_CSV)
    switch = next(n for n in fabric.switches() if "ib-switch-sequoia" in n.description)
    cabled = {p for p, _, _ in fabric.neighbours(switch.guid)}
    free = next(p for p in range(1, switch.nports + 1) if p not in cabled)
    code, out, _ = run("topology", "cable", f"{switch.guid}/{free}", "--ibdiagnet", str(IBDIAG_DIR), "--json")
    d = json.loads(out)
    assert code == 0 and d["far"] is None and d["width"] is None
    code, out, _ = run("topology", "cable", f"{switch.guid}/{free}", "--ibdiagnet", str(IBDIAG_DIR))
    assert "nothing cabled to it" in out
    for bad in ("ib-switch-sequoia", "nosuchnode/1", f"{switch.guid}/999"):
        code, out, err = run("topology", "cable", bad, "--ibdiagnet", str(IBDIAG_DIR))
        assert code == 2 and out == "" and err.count("\n") == 1, bad


# -- health: failing links that share a cable trait ------------------------------------------------
def links_by(fabric: Fabric, want: Any) -> list[Link]:
    """Links one of whose modules satisfies ``want``, in the run's link order."""
    inv = read_inventory(IBDIAG_DIR)
    out = []
    for lk in fabric.links:
        modules = [inv.module(e) for e in (lk.a, lk.b)]
        if any(m is not None and want(m) for m in modules):
            out.append(lk)
    return out


def test_shared_traits_on_the_real_inventory() -> None:
    fabric = read_db_csv_fabric(DB_CSV)
    inv = read_inventory(IBDIAG_DIR)
    cabled = [lk.key for lk in fabric.links]
    finisar = links_by(fabric, lambda m: m.vendor == "FINISAR CORP.")
    copper = links_by(fabric, lambda m: m.copper)
    assert len(finisar) == 7 and len(copper) > 50
    # Clean: no failing link, nothing to say.
    assert shared_cable_traits([], inv.cables, cabled) == ()
    # Three failing FINISAR links (7 of 271 in the fabric): the vendor, and the part number two share.
    failing = [lk.key for lk in finisar[:3]]
    notes = shared_cable_traits(failing, inv.cables, cabled)
    said = {(n.trait, n.value): n for n in notes}
    assert set(said) == {("vendor", "FINISAR CORP."), ("part number", "FTCE8627E1PCA-4N")}
    vendor = said[("vendor", "FINISAR CORP.")]
    assert set(vendor.links) == set(failing) and vendor.population_with == 7
    assert vendor.chance == pytest.approx(tail_chance(vendor.population_known, 7, 3, 3))
    assert len(said[("part number", "FTCE8627E1PCA-4N")].links) == 2
    # One failing FINISAR link is not a pattern.
    assert shared_cable_traits(failing[:1], inv.cables, cabled) == ()
    # Three failing copper links, when copper is a third of the fabric: the population explains it,
    # and so does the FS vendor every switch port carries.
    assert shared_cable_traits([lk.key for lk in copper[:3]], inv.cables, cabled) == ()
    # Failing links the inventory does not know say nothing either.
    assert shared_cable_traits(failing, {}, cabled) == ()


def store_with_errors(db: Path, bad_links: list[LinkKey]) -> None:
    """The run kept in the store, then an hour of counters in which ``bad_links`` gather symbol
    errors (critical) and every other link is clean."""
    code, _, err = run("counters", "collect", "--ibdiagnet", str(IBDIAG_DIR), "--db", str(db))
    assert code == 0, err
    fabric = read_db_csv_fabric(DB_CSV)
    bad = {key[0]: {"symbol_errors": 4000} for key in bad_links}
    now = time.time()
    with Store.open(db) as store:
        topo = store.load_topology("latest").id
        for i in range(8):
            when = now - 3000 + i * 300
            store.save_counter_snapshot(when, "synthetic", topo, counter_rows(fabric, when, i, bad))


def test_health_notes_the_shared_vendor_and_only_then(tmp_path: Path) -> None:
    fabric = read_db_csv_fabric(DB_CSV)
    finisar = [lk.key for lk in links_by(fabric, lambda m: m.vendor == "FINISAR CORP.")[:3]]
    copper = [lk.key for lk in links_by(fabric, lambda m: m.copper)[:3]]
    cases: list[tuple[str, list[LinkKey], set[tuple[str, str]]]] = [
        ("clean", [], set()),
        ("copper", copper, set()),
        ("finisar", finisar, {("vendor", "FINISAR CORP."), ("part number", "FTCE8627E1PCA-4N")}),
    ]
    for name, bad, expected in cases:
        db = tmp_path / f"{name}.db"
        store_with_errors(db, bad)
        with Store.open(db) as store:
            view = assess_store(store, since_s=3600, record=False)
        failing = {lk.key for lk in view.report.links if lk.status.rank >= 2}
        assert failing == set(bad), name
        assert {(n.trait, n.value) for n in view.cable_notes} == expected, name
        code, out, _ = run("health", "--since", "1h", "--db", str(db), "--no-record", "--json")
        doc = json.loads(out)
        assert code == 0 and {(n["trait"], n["value"]) for n in doc["cable_notes"]} == expected
        code, text, _ = run("health", "--since", "1h", "--db", str(db), "--no-record")
        assert code == 0
        notes = [line for line in text.splitlines() if line.startswith("note: ")]
        assert len(notes) == len(expected), (name, notes)
        if expected:
            assert "3 of 3 failing links have vendor FINISAR CORP., against 7 of the " in text
            assert "(cable inventory from the ibdiagnet run " in text


def test_discover_save_keeps_the_inventory_too(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    code, _, err = run("discover", "--ibdiagnet", str(IBDIAG_DIR), "--save", "--db", db)
    assert code == 0, err
    code, out, _ = run("topology", "cable", HCA_PORT, "--db", db, "--json")
    d = json.loads(out)
    assert code == 0 and d["inventory"] == str(DB_CSV)
    assert d["near"]["module"]["vendor"] == "FS" and d["far"]["fec"] == "RS_FEC_544_514"


def test_counter_history_labels_show_their_peak_whole() -> None:
    """A lab's traffic peaks at 3.47e-05 Gb/s: the label kept 'max' and lost the value past its
    34 columns. Every label fits, its peak whole."""
    from fabric.present.cables import SERIES_LABEL_WIDTH, series_label

    cases = {
        ("xmit_data", 3.47e-05): "port  17 xmit Gb/s     max 3.5e-05",
        ("xmit_data", 197.34): "port  17 xmit Gb/s     max 197.3",
        ("xmit_data", 0.0): "port  17 xmit Gb/s     max 0",
        ("symbol_errors", 4000.0): "port  17 symbol errors max 4000",
        ("link_downed", 2.0): "port  17 link downs    max 2",
        ("symbol_errors", 65535.0 * 1000): "port  17 symbol errors max 6.6e+07",
    }
    for (counter, peak), want in cases.items():
        assert series_label(17, counter, peak) == want
        assert len(want) <= SERIES_LABEL_WIDTH
