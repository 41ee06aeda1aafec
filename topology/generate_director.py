"""Director chassis as the spine tier of a generated leaf-spine fabric, with its leaves in pods.

``leafspine:leaves=8,hosts=4,directors=2,pods=4`` builds D director chassis instead of spines.
Each chassis has one line board per pod (``MF0;director-01:MCS8500/L03/U1``, switch name
``director-01/L03``) and ``fabric_boards`` fabric boards (``.../S01/U1``, default 2); its boards
share one system image GUID, as a real director's ASICs do. The leaves are split into ``pods``
blocks (as evenly as they go); every leaf of pod p is cabled to line board p of every chassis,
``cables`` cables each (default: host ports / directors), and every line board to every fabric
board of its own chassis, enough to carry its leaves' cables (the chassis's inside wiring).
``line_boards`` (default: one per pod) adds line boards with nothing plugged in yet, wired inside
the chassis like the others, as a half-populated director has. Line boards are the design's
spines (tier 2), fabric boards its cores (tier 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from topology.design import SWITCH_MODELS, DesignSwitch, FabricSpec
from topology.errors import UsageError
from topology.model import Guid

_BOARD_GUID, _IMAGE_GUID = 0x0C42A10300A50000, 0x0C42A10300A60000
# Director models by board radix: the ASIC generation of the fixed switch of that radix.
DIRECTOR_MODELS = {36: "CS7500", 40: "MCS8500"}
DEFAULT_FABRIC_BOARDS = 2


@dataclass(frozen=True, slots=True)
class DirectorPlan:
    pods: tuple[tuple[int, int], ...]  # (first leaf, leaves) per pod
    k: int  # cables from each leaf to its line board in each chassis
    c: int  # cables from each line board to each fabric board


def director_plan(spec: FabricSpec, raw: str) -> DirectorPlan:
    """Port budget of a director design; UsageError naming what does not fit."""
    if spec.radix not in DIRECTOR_MODELS:
        raise UsageError(
            f"fabric spec {raw!r}: directors come with radix "
            + " or ".join(f"{r} ({m})" for r, m in DIRECTOR_MODELS.items())
        )
    pods = spec.pods or 1
    if pods > spec.leaves:
        raise UsageError(f"fabric spec {raw!r}: pods={pods} is more than leaves={spec.leaves}")
    fabric_boards = spec.fabric_boards or DEFAULT_FABRIC_BOARDS
    r, d = spec.radix, spec.directors
    k = spec.cables or max(1, spec.hosts // d)
    if spec.hosts + k * d > r:
        raise UsageError(
            f"fabric spec {raw!r}: a leaf needs {spec.hosts} host ports + {k * d} director cables "
            f"but has radix {r}"
        )
    lines = spec.line_boards or pods
    if lines < pods:
        raise UsageError(f"fabric spec {raw!r}: line_boards={lines} is fewer than pods={pods}")
    bounds = [spec.leaves * p // pods for p in range(pods + 1)]
    blocks = tuple((bounds[p], bounds[p + 1] - bounds[p]) for p in range(pods))
    line_down = max(n for _, n in blocks) * k
    c = max(1, -(-line_down // fabric_boards))  # at least as many cables up as down
    if line_down + c * fabric_boards > r:
        raise UsageError(
            f"fabric spec {raw!r}: a line board needs {line_down} leaf ports + "
            f"{c * fabric_boards} fabric-board ports but has radix {r}"
        )
    if lines * c > r:
        raise UsageError(f"fabric spec {raw!r}: a fabric board needs {lines * c} ports but has radix {r}")
    return DirectorPlan(blocks, k, c)


def build_directors(
    spec: FabricSpec,
    leaves: list[Guid],
    switches: list[DesignSwitch],
    cable: Callable[[Guid, int, Guid, int], None],
) -> None:
    """The chassis, appended to ``switches``, and their cables (``leaves`` in leaf order)."""
    plan = director_plan(spec, spec.text())
    model, devid = DIRECTOR_MODELS[spec.radix], SWITCH_MODELS[spec.radix][1]
    fabric_boards = spec.fabric_boards or DEFAULT_FABRIC_BOARDS
    n_lines = spec.line_boards or len(plan.pods)
    per_chassis = n_lines + fabric_boards
    line_down = max(n for _, n in plan.pods) * plan.k
    for d in range(spec.directors):
        system = f"director-{d + 1:02d}"
        image = Guid(f"0x{_IMAGE_GUID + d:016x}")
        boards = [("L", p + 1, "spine") for p in range(n_lines)]
        boards += [("S", f + 1, "core") for f in range(fabric_boards)]
        guids = []
        for b, (kind, number, role) in enumerate(boards):
            guid = Guid(f"0x{_BOARD_GUID + d * per_chassis + b:016x}")
            label = f"{kind}{number:02d}"
            desc = f"MF0;{system}:{model}/{label}/U1"
            switches.append(
                DesignSwitch(guid, f"{system}/{label}", desc, role, None, None, spec.radix, devid, image)
            )
            guids.append(guid)
        lines, fabrics = guids[:n_lines], guids[n_lines:]
        for p, (first, n) in enumerate(plan.pods):
            for q in range(n):
                for c in range(plan.k):
                    cable(leaves[first + q], spec.hosts + 1 + d * plan.k + c, lines[p], 1 + q * plan.k + c)
        for p in range(n_lines):
            for f, fb in enumerate(fabrics):
                for c in range(plan.c):
                    cable(lines[p], line_down + 1 + f * plan.c + c, fb, 1 + p * plan.c + c)
