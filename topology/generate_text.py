"""Write a generated design as an ibsim net file or as ``ibnetdiscover`` topology output.

Both writers use the as-built cables (faults applied); absent HCAs are left out. The ibsim net file
runs NDR as HDR (ibsim 0.10 has no NDR) and annotates every port with its width and speed, so a
degraded link is annotated on both ends (OpenSM undoes a one-sided degradation). The
ibnetdiscover text keeps the intended speeds and assigns LIDs: switches first, then HCAs, except
where a fault of the subnet manager's making says otherwise (:attr:`Design.lids`,
:attr:`Design.guids`); the simulator cannot show those (its OpenSM assigns LIDs), so the net file
refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable

from topology.design import VENDOR_ID, Design, DesignHca, DesignSwitch
from topology.errors import UsageError
from topology.model import Guid, Link

# ibsim 0.10 built-in limits and the options that raise them.
_SIM_LIMITS = (("-N", 2048), ("-S", 256), ("-P", 13312), ("-L", 30720))
# File-global enabled masks for ports without an annotation (and cables added later with Link):
# width 1x|4x, speed SDR|DDR|QDR, extended FDR|EDR|HDR (or FDR|EDR on an EDR fabric).
_EXT_MASK = {"EDR": 3, "HDR": 7, "NDR": 7}


def sim_speed(speed: str) -> str:
    """The speed a link runs at in ibsim 0.10: NDR is emitted as HDR."""
    return "HDR" if speed == "NDR" else speed


def simulator_notes(design: Design) -> tuple[str, ...]:
    """What the simulator runs otherwise than ``design`` says, for people (the tools then read it)."""
    if any(sim_speed(lk.speed) != lk.speed for lk in design.built):
        return (
            "ibsim 0.10 has no NDR: the design's NDR links run at HDR in the simulator, so the tools "
            "read HDR there (widths and slower speeds as designed)",
        )
    return ()


def _ports(design: Design) -> dict[Guid, list[tuple[int, Guid, int, Link]]]:
    ports: dict[Guid, list[tuple[int, Guid, int, Link]]] = {}
    for lk in design.built:
        ports.setdefault(lk.a.guid, []).append((lk.a.port, lk.b.guid, lk.b.port, lk))
        ports.setdefault(lk.b.guid, []).append((lk.b.port, lk.a.guid, lk.a.port, lk))
    for rows in ports.values():
        rows.sort(key=lambda row: row[0])
    return ports


def _attach(design: Design) -> DesignHca | None:
    """The HCA the simulator's clients attach to by default: the first present one."""
    present = design.present_hcas()
    return present[0] if present else None


# -- ibsim ----------------------------------------------------------------------------------------
def to_ibsim_net(design: Design) -> str:
    """The ibsim net file.

    Node ids are switch names (``leaf-su01-r3``) and HCA descriptions (``dgx-0042 mlx5_3``).
    """
    if design.lids or design.guids:
        text_only = [f for f in design.faults if f.split(":")[0].lower() in ("no-lid", "dup-lid", "dup-guid")]
        raise UsageError(
            f"fault {', '.join(text_only)}: the simulator's OpenSM assigns LIDs and reads GUIDs from the "
            "net file, so a lab cannot show it; only the generator's ibnetdiscover text writes it "
            "(topology.generate.to_ibnetdiscover)"
        )
    ports = _ports(design)
    ids: dict[Guid, str] = {s.guid: s.name for s in design.switches}
    descs: dict[Guid, str] = {s.guid: s.description for s in design.switches}
    for h in design.hcas:
        ids[h.guid] = descs[h.guid] = h.description
    is_switch = {s.guid for s in design.switches}
    out = [
        f"# ibfab generated fabric: {design.spec.text()}",
        f"# faults: {' '.join(design.faults) or 'none'}",
        f"# intended speed {design.speed}; ibsim runs NDR as HDR",
        "width=3",
        "speed=7",
        f"extspeed={_EXT_MASK[design.speed]}",
        "",
    ]
    attach = _attach(design)
    hcas = [h for h in design.present_hcas() if h is not attach]

    def port_line(guid: Guid, port: int, rguid: Guid, rport: int, lk: Link) -> str:
        ann = f"lid 0 {lk.width}x{sim_speed(lk.speed)}"
        if guid in is_switch:
            return f'[{port}] "{ids[rguid]}"[{rport}]  # "{descs[rguid]}" {ann}'
        return f'[{port}] "{ids[rguid]}"[{rport}]  # lid 0 lmc 0 "{descs[rguid]}" {ann}'

    def hca_record(h: DesignHca) -> None:
        out.extend(
            (
                f"vendid=0x{VENDOR_ID:x}",
                f"devid=0x{h.devid:x}",
                f"sysimgguid={h.guid}",
                f"caguid={h.guid}",
                f'Ca 1 "{h.description}" # "{h.description}"',
            )
        )
        out.extend(port_line(h.guid, p, rg, rp, lk) for p, rg, rp, lk in ports.get(h.guid, ()))
        out.append("")

    if attach is not None:
        hca_record(attach)
    for s in design.switches:
        out.extend(
            (
                f"vendid=0x{VENDOR_ID:x}",
                f"devid=0x{s.devid:x}",
                f"sysimgguid={s.image}",
                f"switchguid={s.guid}",
                f'Switch {s.nports} "{s.name}" # "{s.description}" enhanced port 0 lid 0 lmc 0',
            )
        )
        out.extend(port_line(s.guid, p, rg, rp, lk) for p, rg, rp, lk in ports.get(s.guid, ()))
        out.append("")
    for h in hcas:
        hca_record(h)
    return "\n".join(out)


def ibsim_limits(design: Design) -> list[str]:
    """The ``-N/-S/-P/-L`` options ibsim needs beyond its defaults for this design (often none)."""
    nodes = len(design.switches) + len(design.present_hcas())
    need = {
        "-N": nodes,
        "-S": len(design.switches),
        "-P": sum(s.nports + 1 for s in design.switches) + len(design.present_hcas()),
        "-L": nodes + 1,
    }
    opts: list[str] = []
    for flag, default in _SIM_LIMITS:
        if need[flag] > default:
            value = 49152 if flag == "-L" else need[flag] + need[flag] // 16
            opts += [flag, str(value)]
    return opts


# -- ibnetdiscover --------------------------------------------------------------------------------
def assign_lids(design: Design) -> dict[Guid, int]:
    """LIDs as the writers assign them: switches from 1 in design order, then present HCAs."""
    lids: dict[Guid, int] = {}
    for s in design.switches:
        lids[s.guid] = len(lids) + 1
    for h in design.present_hcas():
        lids[h.guid] = len(lids) + 1
    return lids


def written_lids(design: Design) -> dict[Guid, int]:
    """The LIDs the ibnetdiscover text writes: as assigned, but for the faults' (no-lid, dup-lid)."""
    return {**assign_lids(design), **dict(design.lids)}


def to_ibnetdiscover(design: Design, generated_on: str = "Mon Jan  1 00:00:00 2024") -> str:
    """The design as real ``ibnetdiscover`` topology output (intended speeds, NDR included)."""
    ports = _ports(design)
    lids = written_lids(design)
    descs: dict[Guid, str] = {s.guid: s.description for s in design.switches}
    port_guid: dict[Guid, str] = {}
    for h in design.hcas:
        descs[h.guid] = h.description
        port_guid[h.guid] = h.port_guid[2:]
    # dup-guid: an HCA written with another's node and port GUID (everywhere it is named).
    written = {h.guid: h.guid for h in design.hcas}
    for hca, other in design.guids:
        written[hca] = other
        port_guid[hca] = port_guid[other]
    attach = _attach(design)
    start = f"{attach.guid[2:]} port {attach.port_guid[2:]}" if attach else "0000000000000000 port 0"
    out = ["#", f"# Topology file: generated on {generated_on}", "#", f"# Initiated from node {start}", ""]
    out.extend(_switch_records(design.switches, ports, lids, descs, port_guid, written))
    out.extend(_hca_records(design.present_hcas(), ports, lids, descs, port_guid, written))
    return "\n".join(out)


def _switch_records(
    switches: Iterable[DesignSwitch],
    ports: dict[Guid, list[tuple[int, Guid, int, Link]]],
    lids: dict[Guid, int],
    descs: dict[Guid, str],
    port_guid: dict[Guid, str],
    written: dict[Guid, Guid],
) -> Iterable[str]:
    for s in switches:
        hx = s.guid[2:]
        yield f"vendid=0x{VENDOR_ID:x}"
        yield f"devid=0x{s.devid:x}"
        yield f"sysimgguid={s.image}"
        yield f"switchguid={s.guid}({hx})"
        yield f'Switch\t{s.nports} "S-{hx}"\t\t# "{s.description}" enhanced port 0 lid {lids[s.guid]} lmc 0'
        for p, rg, rp, lk in ports.get(s.guid, ()):
            tail = f'# "{descs[rg]}" lid {lids[rg]} {lk.width}x{lk.speed}'
            pg = port_guid.get(rg)
            if pg is None:
                yield f'[{p}]\t"S-{rg[2:]}"[{rp}]\t\t{tail}'
            else:
                yield f'[{p}]\t"H-{written[rg][2:]}"[{rp}]({pg}) \t\t{tail}'
        yield ""


def _hca_records(
    hcas: Iterable[DesignHca],
    ports: dict[Guid, list[tuple[int, Guid, int, Link]]],
    lids: dict[Guid, int],
    descs: dict[Guid, str],
    port_guid: dict[Guid, str],
    written: dict[Guid, Guid],
) -> Iterable[str]:
    for h in hcas:
        guid = written[h.guid]
        yield f"vendid=0x{VENDOR_ID:x}"
        yield f"devid=0x{h.devid:x}"
        yield f"sysimgguid={guid}"
        yield f"caguid={guid}"
        yield f'Ca\t1 "H-{guid[2:]}"\t\t# "{h.description}"'
        for p, rg, rp, lk in ports.get(h.guid, ()):
            yield (
                f'[{p}]({port_guid[h.guid]}) \t"S-{rg[2:]}"[{rp}]\t\t# lid {lids[h.guid]} lmc 0 '
                f'"{descs[rg]}" lid {lids[rg]} {lk.width}x{lk.speed}'
            )
        yield ""
