"""fast_init keeps a frozen dataclass frozen, with the generated signature's behaviour."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from topology._speed import fast_init
from topology.model import Guid, Lid, Node, NodeKind


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Point:
    x: int
    y: int = 7
    seen: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must be >= 0")


def test_fields_defaults_and_keywords() -> None:
    assert _Point(1) == _Point(x=1, y=7, seen=())
    assert _Point(1, 2).y == 2 and _Point(y=3, x=1).y == 3
    with pytest.raises(TypeError):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Point(1, 2, (), 4)  # type: ignore[call-arg]


def test_post_init_still_runs() -> None:
    with pytest.raises(ValueError, match="x must be"):
        _Point(-1)


def test_instances_stay_frozen_hashable_and_picklable() -> None:
    p = _Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    assert hash(p) == hash(_Point(1)) and {p, _Point(1)} == {p}
    assert pickle.loads(pickle.dumps(p)) == p
    assert dataclasses.replace(p, y=9) == _Point(1, 9)


def test_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    with pytest.raises(TypeError, match="slotted dataclass"):
        fast_init(NoSlots)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match=r"Factory\.a"):
        fast_init(Factory)


def test_model_nodes_keep_their_contract() -> None:
    node = Node(Guid("0x1"), NodeKind.HCA, "dgx-0001 mlx5_0", 1)
    assert node.lid is None and dataclasses.replace(node, lid=Lid(5)).lid == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.nports = 2  # type: ignore[misc]
