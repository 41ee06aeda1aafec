"""Planting a simulated slow or lost node in a lab (``ibfab triage plant``).

The plant is keyed by host name and the simulated backend matches it against the hosts the lab's
fabric names; a host the fabric does not have would sit in the lab doing nothing while the
operator believes a fault is planted. So the lab is discovered and the host checked first, and an
option that means nothing for the kind asked (``--factor`` of a lost node, ``--round`` of a slow
one) is refused rather than dropped, as is a second plant of another kind on the same host (the
lab keeps one a host: the first would go without a word).
"""

from __future__ import annotations

from fabric.app.session import Session
from probes.labnccl import PlantedNode
from topology.errors import UsageError

DEFAULT_FACTOR = 0.5


def plant_lab_node(
    session: Session, host: str, kind: str, factor: float | None = None, from_round: int | None = None
) -> PlantedNode:
    """Plant ``host`` of the session's lab: slow (``gpu``, ``pcie``; ``factor`` of its rate) or
    ``lost`` from round ``from_round`` of a triage on. UsageError for a host the lab's fabric does
    not have, or an option of the other kind."""
    from fabric.app.discovery.discover import discover
    from probes.inventory import fold_names

    if kind == "lost" and factor is not None:
        raise UsageError("--factor is the share of a slow node's rate: a lost node has none (give --round)")
    if kind != "lost" and from_round is not None:
        raise UsageError(f"--round is when a lost node stops answering: a {kind} node is slow from the start")
    driver = session.driver
    driver.check_ready()
    hosts = discover(session).classification.hosts
    if host not in hosts:
        raise UsageError(
            f"{host} is not a host of {session.source.label} (its hosts: {fold_names(hosts) or 'none'})"
        )
    had = driver.planted_nodes().get(host)
    if had is not None and had.kind != kind:  # the lab keeps one plant a host: it would go unsaid
        raise UsageError(
            f"{host} is already planted {'lost' if had.kind == 'lost' else f'slow ({had.kind})'} in "
            f"{session.source.label}: clear the plants first (ibfab triage clear --lab NAME)"
        )
    return driver.plant_node(
        host, kind, DEFAULT_FACTOR if factor is None else factor, 1 if from_round is None else from_round
    )


__all__ = ["DEFAULT_FACTOR", "plant_lab_node"]
