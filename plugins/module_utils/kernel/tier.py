# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): the tier contract, as a type.

A module is a tier run by ``capa.run_tier``: its parameters (validated, defaults filled in by the argument spec)
are parsed ONCE into the tier's typed spec, which the tier checks before any request and then reconciles::

    spec = tier.parse(params)         # the typed spec (a frozen dataclass); never re-defaults
    tier.validate(spec, region)       # every rule, each error naming its field; no AWS call
    outcome = tier.reconcile(ctx, spec)   # observe -> plan -> apply through ctx.ops -> the view, before and after

A rule a tier shares with the cluster spec is a function both call with their own field prefix (``where``), so the
rule and its message exist once (``machines.plan.check_rollout`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, TypeVar

if TYPE_CHECKING:
    from .context import Context

SpecT = TypeVar("SpecT")


@dataclass(frozen=True)
class Outcome:
    """What a reconcile returns: the view of what it manages before and after the run (``after`` is the module's
    result under its result key, or its result keys themselves), and ``--diff`` shows the two."""

    before: Any
    after: Any


class Tier(Protocol[SpecT]):
    """One reconcilable tier (see the module docstring)."""

    def parse(self, params: Mapping[str, Any]) -> SpecT: ...

    def validate(self, spec: SpecT, region: str | None) -> None: ...

    def reconcile(self, ctx: Context, spec: SpecT) -> Outcome: ...
