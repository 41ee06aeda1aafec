"""``fast_init``: a quicker __init__ for frozen, slotted dataclasses built in bulk.

A frozen dataclass's generated __init__ assigns each field through ``object.__setattr__`` (so
that its own __setattr__, which raises, is bypassed). That costs about twice what a plain class
pays per field, which shows when a 16k-HCA fabric builds 35,000 nodes and node classes
(bench/bench_discover.py; ports and links are named tuples, built at C level). ``fast_init`` replaces that __init__ with one that writes
each slot through its descriptor, the same way, with the same parameters and defaults. The
instances stay frozen (assignment still raises FrozenInstanceError) and keep the generated
eq, hash, order and repr.

It supports plain fields with or without defaults and a ``__post_init__`` without arguments;
anything else (default factories, InitVar, init=False fields) is refused when the class is
defined, not at run time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def slot_setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The descriptor setters of slots ``names``: write a frozen instance's field in __init__."""
    return tuple(getattr(cls, name).__set__ for name in names)


def fast_init(cls: type[T]) -> type[T]:
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"fast_init needs a slotted dataclass, not {cls.__name__}")
    namespace: dict[str, Any] = {}
    params: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"fast_init: field {cls.__name__}.{f.name} needs the generated __init__")
        (namespace[f"_set_{f.name}"],) = slot_setters(cls, f.name)
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(source, namespace)  # generated from the class's own field names, as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010 - type checkers keep the dataclass signature
    return cls
