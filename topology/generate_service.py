"""Service hosts in a generated fabric: a service leaf and UFM servers on the compute fabric.

Real clusters put their login, scheduler, UFM, cache and storage servers on the same fabric as
the GPU nodes, often on a leaf of their own cabled, by design, with two cables to one spine. Two
spec keys build them (topology.generate):

* ``service=L``: L service leaves ``svc-leaf-NN``, each carrying a login node ``login-NN`` and a
  storage node ``storage-NN`` with other HCA counts than the compute nodes (login 1 HCA and
  storage 2 where the compute nodes have more than 2; login 2 and storage 4 where they have 1 or
  2), each leaf cabled with two cables to one spine of the compute fabric (the first spine).
* ``ufm=N``: N UFM servers ``ufm-NN`` with two HCAs each on spare ports of the first two compute
  leaves, crossed (mlx5_0 on the second, mlx5_1 on the first: off the rails, as a real SuperPOD's
  UFM server), both on the first leaf of a one-leaf fabric: a service host on compute leaves.

Their HCAs are :class:`topology.design.DesignHca` with ``role="service"``, their leaves
:class:`topology.design.DesignSwitch` with ``role="service-leaf"``: what discovery should call
them (topology.hostroles).
"""

from __future__ import annotations

from collections.abc import Callable

from topology.design import HCA_DEVIDS, DesignHca, DesignSwitch, FabricSpec
from topology.errors import UsageError
from topology.model import Guid, Link

_SVC_LEAF_GUID = 0x0C42A10300A50000
_HCA_GUID = 0x1070FD0300100000  # as topology.generate: HCAs continue its numbering
SERVICE_ROLE, SERVICE_LEAF = "service", "service-leaf"

SwitchMaker = Callable[[int, int, str, str, "int | None", "int | None"], Guid]
CableMaker = Callable[[Guid, int, Guid, int], None]


def compute_hcas(spec: FabricSpec) -> int:
    """HCAs per compute node of ``spec`` (a leaf-spine fabric's nodes have one unless told)."""
    return spec.hcas or 1


def service_hcas(spec: FabricSpec) -> tuple[int, int]:
    """(login node HCAs, storage node HCAs): never the compute nodes' count."""
    n = compute_hcas(spec)
    return (1, 2) if n > 2 else (2, 4)


def add_service(
    spec: FabricSpec,
    switches: list[DesignSwitch],
    hcas: list[DesignHca],
    cables: list[Link],
    switch: SwitchMaker,
    cable: CableMaker,
) -> None:
    """Append the service leaves, their hosts and the UFM servers to the design's lists."""
    used: dict[Guid, int] = {}
    for lk in cables:
        for end in (lk.a, lk.b):
            used[end.guid] = max(used.get(end.guid, 0), end.port)

    def next_port(g: Guid, name: str, what: str) -> int:
        port = used.get(g, 0) + 1
        if port > spec.radix:
            raise UsageError(f"fabric spec {spec.text()!r}: {name} has no port left for {what}")
        used[g] = port
        return port

    devid = HCA_DEVIDS[spec.speed]

    def host(name: str, index: int) -> DesignHca:
        guid = _HCA_GUID + 2 * len(hcas)
        hca = DesignHca(
            Guid(f"0x{guid:016x}"), Guid(f"0x{guid + 1:016x}"), name, index, 0, devid, role=SERVICE_ROLE
        )
        hcas.append(hca)
        return hca

    spines = [s for s in switches if s.role == "spine"][: spec.spines]  # the first spine group
    login_n, storage_n = service_hcas(spec)
    for li in range(spec.service):
        name = f"svc-leaf-{li + 1:02d}"
        leaf = switch(_SVC_LEAF_GUID, li, name, SERVICE_LEAF, None, None)
        port = 0
        for host_name, count in ((f"login-{li + 1:02d}", login_n), (f"storage-{li + 1:02d}", storage_n)):
            for index in range(count):
                port += 1
                cable(leaf, port, host(host_name, index).guid, 1)
        up = spines[0]
        for k in range(2):  # two cables to one spine: the design, not a fault
            cable(leaf, port + 1 + k, up.guid, next_port(up.guid, up.name, name))
    leaves = [s for s in switches if s.role == "leaf"][:2]
    for u in range(spec.ufm):
        name = f"ufm-{u + 1:02d}"
        for index in range(2):
            on = leaves[(index + 1) % len(leaves)]
            cable(on.guid, next_port(on.guid, on.name, name), host(name, index).guid, 1)
