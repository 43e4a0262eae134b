# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The public facade modules import: the shared options and the runner.

A module is an argument spec, its documentation, and one call::

    run_tier(argument_spec, tier=VpcTier(), result_key="vpc")

with its tier imported from the tier's own private module (``from ..._vpc import VpcTier``), not from here: a
module's process then imports only the code of its tier, not every tier of the collection (AnsiballZ bundles what
a module imports; importing every tier cost each module run about as much as its boto3 client).

``run_tier`` builds an :class:`AnsibleAWSModule` (amazon.aws's connection options, aliases and environment
variables) plus our shared options, validates input before any AWS call, opens one boto3 session (assuming
``identity`` when given), runs the tier, and returns ``changed``, the resource, ``plan``, ``api_calls`` and
``diff``. Errors keep amazon.aws's payloads and also carry the plan and calls made so far.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from ansible_collections.amazon.aws.plugins.module_utils.botocore import get_aws_connection_info
from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from .kernel.context import Context
from .kernel.errors import ReconcileError, SpecError
from .kernel.operations import is_placeholder, placeholder, placeholders_in
from .kernel.session import AwsSession, IdentityRefused, with_legacy_session_token
from .kernel.shared_reads import SharedReads, is_packed, pack_withholding, unpack
from .kernel.tier import Outcome, Tier
from .kernel.validation import check_cluster_name, check_tags

try:
    import botocore.exceptions
except ImportError:
    pass  # AnsibleAWSModule reports a missing SDK.

__all__ = [
    "Context",
    "Outcome",
    "ReconcileError",
    "SpecError",
    "Tier",
    "check_identity",
    "common_argument_spec",
    "identity_argument_spec",
    "is_placeholder",
    "placeholder",
    "run_tier",
]

IDENTITY_ROLE_SPEC: dict[str, Any] = dict(
    role_arn=dict(type="str", required=True),
    external_id=dict(type="str", no_log=False),
    session_name=dict(type="str"),
    duration_seconds=dict(type="int", default=3600),
)


def identity_argument_spec() -> dict[str, Any]:
    """The suboptions of ``identity`` (doc fragment ``clusterapi.aws.common.identity``), which the capa_kubeconfig
    lookup takes too."""
    spec = copy.deepcopy(IDENTITY_ROLE_SPEC)
    spec["source_identity"] = dict(type="dict", options=copy.deepcopy(IDENTITY_ROLE_SPEC))
    return spec


def common_argument_spec(info: bool = False) -> dict[str, Any]:
    """Our options on every module (documented by the ``clusterapi.aws.common`` doc fragment).

    ``info`` modules only read, so they take no ``state`` (documented by ``clusterapi.aws.common.info``).
    """
    spec = dict(
        cluster_name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        identity=dict(type="dict", options=identity_argument_spec()),
        additional_tags=dict(type="dict", default={}),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=600),
        shared_reads=dict(type="raw"),
    )
    if info:
        del spec["state"]
    return spec


def check_identity(identity: dict[str, Any] | None, field: str = "identity") -> None:
    """The rules of ``identity`` the argument spec cannot say (a role ARN, the duration's range), down the chain."""
    while identity:
        if not identity["role_arn"].startswith("arn:"):
            raise SpecError(f"{field}.role_arn", f"'{identity['role_arn']}' is not a role ARN")
        if not 900 <= identity["duration_seconds"] <= 43200:
            raise SpecError(f"{field}.duration_seconds", "must be between 900 and 43200")
        identity, field = identity.get("source_identity"), f"{field}.source_identity"


def _validate_common(params: dict[str, Any]) -> None:
    check_cluster_name(params["cluster_name"])
    check_tags(params["additional_tags"])
    check_identity(params.get("identity"))
    if params["wait_timeout"] < 0:
        raise SpecError("wait_timeout", "must not be negative")
    check_shared_reads(params.get("shared_reads"))


def check_shared_reads(given: Any) -> None:
    """``shared_reads`` is a result's ``shared_reads`` (a dict) or the host fact ``capa_shared_reads`` (packed)."""
    if given is None or isinstance(given, dict) or is_packed(given):
        return
    raise SpecError(
        "shared_reads", f"must be a result's shared_reads or the fact capa_shared_reads, not {type(given).__name__}"
    )


def _refuse_placeholders(params: dict[str, Any]) -> None:
    """Check mode hands placeholder ids (``planned:vpc:demo-vpc``) to the next module; only check mode may."""
    for path, value in placeholders_in(params):
        raise SpecError(
            path, f"holds the check-mode placeholder {value}: run the module that creates it for real first"
        )


def _open_session(module: AnsibleAWSModule, params: dict[str, Any]) -> AwsSession:
    region, endpoint_url, connect_params = get_aws_connection_info(module)
    if not region:
        raise SpecError("region", "no region given (option 'region', AWS_REGION or AWS_DEFAULT_REGION)")
    session = AwsSession(region, endpoint_url, with_legacy_session_token(connect_params, os.environ))
    if params.get("identity"):
        try:
            session.assume(params["identity"], default_session_name=f"capa-{params['cluster_name']}")
        except IdentityRefused as e:
            # Before the tier runs: nothing was asked of AWS but STS.
            raise ReconcileError(str(e)) from e
    given = params.get("shared_reads")
    handed = None if given is None else unpack(given)
    session.share_reads(SharedReads(handed, scope=_read_scope(region, endpoint_url, params)))
    return session


def _read_scope(region: str, endpoint_url: str | None, params: dict[str, Any]) -> str:
    """Whose AWS a read was made against: the same request under another role or endpoint is another read."""
    roles = []
    identity = params.get("identity")
    while identity:
        roles.append(identity["role_arn"])
        identity = identity.get("source_identity")
    return "|".join([region, endpoint_url or "", *roles])


def run_tier(
    argument_spec: dict[str, Any], tier: Tier[Any], result_key: str | None, info: bool = False, **module_kwargs: Any
) -> None:
    """Run ``tier`` as a module. With ``result_key`` None, ``after`` is a dict of result keys (several resources).

    ``info=True`` runs a read-only tier: no ``state`` option, and a tier that planned a mutating call fails
    instead of reporting ``changed`` (an ``_info`` module must never change anything).
    """
    spec = common_argument_spec(info=info)
    spec.update(argument_spec)
    module = AnsibleAWSModule(argument_spec=spec, supports_check_mode=True, **module_kwargs)
    params = module.params
    session = None
    ctx = None
    try:
        _validate_common(params)
        spec = tier.parse(params)
        tier.validate(spec, module.region)
        if not module.check_mode:
            _refuse_placeholders(params)
        session = _open_session(module, params)
        ctx = Context(
            session=session,
            cluster=params["cluster_name"],
            check_mode=module.check_mode,
            additional_tags=params["additional_tags"],
            wait=params["wait"],
            wait_timeout=params["wait_timeout"],
            reporter=module.log,
        )
        outcome = tier.reconcile(ctx, spec)
    except SpecError as e:
        module.fail_json(msg=str(e), field=e.field, api_calls=session.recorder.as_dict() if session else {})
    except ReconcileError as e:
        module.fail_json(msg=str(e), **_progress(session, ctx))
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
        module.fail_json_aws(e, msg=_describe_failure(e, ctx), **_progress(session, ctx))
    else:  # fail_json exits: only a tier that returned gets a result
        _exit_with_result(module, session, ctx, outcome.before, outcome.after, result_key, info)


def _exit_with_result(
    module: AnsibleAWSModule,
    session: AwsSession,
    ctx: Context,
    before: Any,
    after: Any,
    result_key: str | None,
    info: bool,
) -> None:
    if info and ctx.ops.plan:
        module.fail_json(msg="an info tier planned a mutating call (a bug)", **_progress(session, ctx))
    for message in ctx.warnings:
        _warn(module, message)
    result: dict[str, Any] = {"changed": ctx.ops.changed}
    if result_key is None:
        result.update(after or {})
    else:
        result[result_key] = after
    result.update(plan=ctx.ops.plan_as_list(), api_calls=session.recorder.as_dict())
    shared = session.shared
    if shared is not None:
        handed = shared.handed_forward(planned_change=bool(ctx.ops.plan))
        if handed is not None:
            result["shared_reads"] = pack_withholding(handed, module.no_log_values)
        if shared.served:
            result["reads_shared"] = dict(sorted(shared.served.items()))
    if ctx.progress_log:
        result["progress"] = list(ctx.progress_log)
    if module._diff:
        result["diff"] = {"before": before, "after": after}
    module.exit_json(**result)


def _warn(module: AnsibleAWSModule, message: str) -> None:
    """A warning of the run, given to ansible-core's own ``AnsibleModule.warn``.

    amazon.aws 10's ``AnsibleAWSModule.warn`` also keeps the message and hands it back to ``exit_json`` as a
    ``warnings`` key on ansible-core 2.19 and later, where that key is deprecated: every warning then came with a
    ``[DEPRECATION WARNING]: Passing `warnings` to `exit_json` ...`` of its own (ansible 12: ansible-core 2.19,
    amazon.aws 10.1.2). The wrapped module reports it once, as every ansible-core of our range expects.
    """
    getattr(module, "_module", module).warn(message)


def _progress(session: AwsSession | None, ctx: Context | None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "plan": ctx.ops.plan_as_list() if ctx else [],
        "api_calls": session.recorder.as_dict() if session else {},
    }
    if ctx is not None and ctx.progress_log:
        found["progress"] = list(ctx.progress_log)
    return found


def _describe_failure(error: Exception, ctx: Context | None = None) -> str:
    """Which call AWS refused and, for a mutating call, on which resource (the last planned call)."""
    operation = getattr(error, "operation_name", None)
    if not operation:
        return "AWS request failed"
    last = ctx.ops.plan[-1] if ctx and ctx.ops.plan else None
    if last is not None and last.call.split(":", 1)[-1] == operation:
        return f"AWS refused {last.call} on {last.resource}"
    return f"AWS refused {operation}"
