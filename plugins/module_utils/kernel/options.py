# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): an option declared once, and everything Ansible needs derived from that one declaration.

An :class:`Option` carries what a field is - name, type, default, choices, description - and how the reconcile
treats it: ``comparison`` (``strict``: any difference is a change; ``set``: order-insensitive list; ``ignore``:
never compared) and ``immutable`` (a change cannot be made in place: the resource is replaced, or the change is
refused). From a tuple of options come the module's argument spec (:func:`argument_spec`), the options block of
its DOCUMENTATION (:func:`documentation`, written into the module file by ``tools/gen_specs.py`` with a drift
test, since ansible-doc reads static text) and the defaults (:func:`defaults`). One spelling of "unset": ``None``
(an option without a default is ``None`` when not given; an empty string is a value).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

COMPARISONS = ("strict", "set", "allow_more_present", "ignore")


@dataclass(frozen=True)
class Option:
    name: str
    description: str | list[str]
    type: str = "str"
    default: Any = None
    choices: tuple[Any, ...] | None = None
    elements: str | None = None
    options: tuple[Option, ...] | None = None
    required: bool = False
    no_log: bool | None = None
    aliases: tuple[str, ...] = ()
    comparison: str = "strict"
    immutable: bool = False
    # Ansible-only settings that are not part of the field's meaning (e.g. apply_defaults for a suboption dict).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.comparison not in COMPARISONS:
            raise ValueError(f"{self.name}: comparison {self.comparison!r} is not one of {COMPARISONS}")
        if self.required and self.default is not None:
            raise ValueError(f"{self.name}: a required option has no default")

    def but(self, **changes: Any) -> Option:
        """The same option with some settings changed (a module that takes the field with another default)."""
        return replace(self, **changes)


def by_name(options: Iterable[Option]) -> dict[str, Option]:
    return {o.name: o for o in options}


def _spec_entry(option: Option) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": option.type}
    if option.default is not None:
        entry["default"] = _copy(option.default)
    if option.choices is not None:
        entry["choices"] = list(option.choices)
    if option.elements is not None:
        entry["elements"] = option.elements
    if option.options is not None:
        entry["options"] = argument_spec(option.options)
    if option.required:
        entry["required"] = True
    if option.no_log is not None:
        entry["no_log"] = option.no_log
    if option.aliases:
        entry["aliases"] = list(option.aliases)
    entry.update(option.extra)
    return entry


def argument_spec(options: Iterable[Option]) -> dict[str, Any]:
    """The Ansible argument spec of ``options`` (what AnsibleModule / ArgumentSpecValidator validate against)."""
    return {o.name: _spec_entry(o) for o in options}


def documentation(options: Iterable[Option]) -> dict[str, Any]:
    """The ``options`` block of a module's DOCUMENTATION (or a role's argument_specs) for ``options``."""
    doc: dict[str, Any] = {}
    for option in options:
        entry: dict[str, Any] = {
            "description": option.description if isinstance(option.description, list) else [option.description],
            "type": option.type,
        }
        if option.required:
            entry["required"] = True
        if option.default is not None:
            entry["default"] = _copy(option.default)
        if option.choices is not None:
            entry["choices"] = list(option.choices)
        if option.elements is not None:
            entry["elements"] = option.elements
        if option.aliases:
            entry["aliases"] = list(option.aliases)
        if option.options is not None:
            entry["suboptions"] = documentation(option.options)
        doc[option.name] = entry
    return doc


def defaults(options: Iterable[Option]) -> dict[str, Any]:
    """What validation fills in when nothing is given: every option's default (None when it has none)."""
    result: dict[str, Any] = {}
    for option in options:
        if option.options is not None and option.type == "dict" and option.default is not None:
            result[option.name] = {**defaults(option.options), **_copy(option.default)}
        else:
            result[option.name] = _copy(option.default)
    return result


def given(value: Any) -> Any:
    """None for what is not set: the roles write an empty string for "not set" too (one spelling of unset here)."""
    return None if value is None or value == "" else value


def filled(option: Option, value: Any) -> Any:
    """``value`` with every unset field (None or ``""``) taken from ``option``'s declaration, as Ansible fills in
    defaults - for values no argument spec validated (a cluster spec section, a suboption handed on)."""
    value = given(value)
    if option.options is None or option.type != "dict":
        return _copy(option.default) if value is None else value
    if value is None:
        if option.default is None:
            return None
        value = option.default
    return {sub.name: filled(sub, value.get(sub.name)) for sub in option.options}


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def validated(spec: Mapping[str, Any], params: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``params`` checked against an argument spec and with its defaults filled in, as AnsibleModule hands them to a
    module - for code that builds a tier's typed spec from parameters no module validated (the cluster spec's
    sections, tests). Raises :class:`SpecError` with the validator's first message."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from .errors import SpecError

    result = ArgumentSpecValidator(dict(spec)).validate(dict(params))
    if result.error_messages:
        raise SpecError(where or "parameters", result.error_messages[0])
    return dict(result.validated_parameters)
