# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): comparing what a spec wants with what AWS has, field by field, the way each field is declared.

An :class:`~.options.Option` says how its field compares (``comparison``) and whether a difference can be made in
place (``immutable``: no - the resource is replaced, or the change refused). :func:`differences` reads those two
settings for every field a plan compares, so the "always changed" bug class (an order-insensitive list compared in
order, a field AWS fills in itself compared while the spec leaves it unset) is decided once, here, and a plan only
names its fields. The comparison modes (community.docker's ``compare_generic`` is the model):

* ``strict`` - any difference is a change;
* ``set`` - a list whose order does not matter (subnets, security groups, instance types of a fleet);
* ``allow_more_present`` - a mapping whose wanted keys must hold their values, other keys AWS keeps are fine
  (attributes, labels AWS or others add);
* ``ignore`` - never compared.

A field the spec leaves unset (``None``) is not compared: AWS applies its own default there, and reading that back
as drift would change the resource on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .options import COMPARISONS, Option


@dataclass(frozen=True)
class Field:
    """One compared field: the name a plan's reason gives, how it compares, whether it changes in place."""

    name: str
    comparison: str = "strict"
    immutable: bool = False

    def __post_init__(self) -> None:
        if self.comparison not in COMPARISONS:
            raise ValueError(f"{self.name}: comparison {self.comparison!r} is not one of {COMPARISONS}")

    @classmethod
    def of(cls, option: Option, name: str | None = None) -> Field:
        """The field as ``option`` declares it (under another ``name`` when the plan compares it under one)."""
        return cls(name or option.name, option.comparison, option.immutable)


def same(comparison: str, wanted: Any, current: Any) -> bool:
    """Whether ``current`` already is what ``wanted`` asks, compared as ``comparison`` says."""
    if wanted is None or comparison == "ignore":
        return True
    if comparison == "set":
        return _as_set(wanted) == _as_set(current)
    if comparison == "allow_more_present":
        have = current or {}
        return all(same("strict", value, have.get(key)) for key, value in dict(wanted).items())
    return bool(wanted == current)


def _as_set(value: Any) -> frozenset[Any]:
    return frozenset(_hashable(item) for item in value or ())


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_hashable(v) for v in value)
    return value


@dataclass(frozen=True)
class Differences:
    """The fields that differ: those a change can make in place, and those it cannot (``immutable``)."""

    mutable: tuple[str, ...] = ()
    immutable: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.mutable or self.immutable)

    @property
    def names(self) -> list[str]:
        return [*self.mutable, *self.immutable]


def differences(fields: Iterable[Field], wanted: Mapping[str, Any], current: Mapping[str, Any]) -> Differences:
    """Every field of ``fields`` whose ``wanted`` value ``current`` does not hold, as each is declared."""
    mutable: list[str] = []
    immutable: list[str] = []
    for field in fields:
        if not same(field.comparison, wanted.get(field.name), current.get(field.name)):
            (immutable if field.immutable else mutable).append(field.name)
    return Differences(tuple(mutable), tuple(immutable))


def set_changes(current: Iterable[Any], wanted: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """``(to_remove, to_add)`` between two sets of ids (``set`` comparison, as an update needs it)."""
    have, want = set(current), set(wanted)
    return sorted(have - want), sorted(want - have)


def fields_of(options: Sequence[Option], names: Iterable[str] | None = None) -> tuple[Field, ...]:
    """The :class:`Field` of each option (those named in ``names``, in that order, when given)."""
    by_name = {o.name: o for o in options}
    return tuple(Field.of(by_name[name]) for name in (names if names is not None else by_name))
