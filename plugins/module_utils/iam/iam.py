# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the account's IAM for clusterapi.aws clusters (``clusterawsadm bootstrap iam`` without CloudFormation).

Roles, instance profiles and customer-managed policies named ``<prefix><base><suffix>`` (CAPA's default suffix
``.cluster-api-provider-aws.sigs.k8s.io``): ``control-plane``, ``controllers``, ``nodes`` (each with an instance
profile of the same name), ``eks-controlplane``, ``eks-nodegroup`` and ``eks-fargate`` roles, and the policies
``controllers``, ``controllers-eks``, ``control-plane`` and ``nodes`` (:mod:`._iam_policies`).

These resources belong to the account, not to a cluster, so they carry their own ownership tag:
``clusterapi.aws/bootstrap=<configuration>``, where the configuration is the module's ``cluster_name``. Only
resources with that tag are changed or deleted; a role, profile or policy of the same name without it is used
as it is (a policy is still attached), never changed.

Observing costs ``ListPolicies`` and ``ListInstanceProfiles`` (once each, by path), ``GetPolicy`` and
``GetPolicyVersion`` per existing policy, ``GetInstanceProfile`` per existing profile, and ``GetRole`` plus
``ListAttachedRolePolicies`` per role.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.errors import error_code
from ..kernel.context import Context
from ..kernel.errors import SpecError
from ..kernel.operations import placeholder
from ..kernel.tags import dict_to_tags, repair_tags, tags_to_dict
from ..kernel.tier import Outcome
from . import policies
from .roles import delete_owned_role, ensure_role, managed_policy_arn

BOOTSTRAP_TAG = "clusterapi.aws/bootstrap"
DEFAULT_SUFFIX = ".cluster-api-provider-aws.sigs.k8s.io"
MAX_POLICY_VERSIONS = 5
POLICY_SIZE_LIMIT = 6144
NAME_CHARS = re.compile(r"^[\w+=,.@-]*$")
PATH = re.compile(r"^/([\x21-\x7e]*/)?$")
EC2 = "ec2.amazonaws.com"
EKS_POD_IDENTITY = "pods.eks.amazonaws.com"

# Role bases in creation order, with their trust, instance profile and policies (customer bases, AWS managed).
CONTROL_PLANE, CONTROLLERS, NODES = "control-plane", "controllers", "nodes"
CONTROLLERS_EKS = "controllers-eks"
EKS_CONTROL_PLANE, EKS_NODEGROUP, EKS_FARGATE = "eks-controlplane", "eks-nodegroup", "eks-fargate"
ROLE_BASES = (CONTROL_PLANE, CONTROLLERS, NODES, EKS_CONTROL_PLANE, EKS_NODEGROUP, EKS_FARGATE)
POLICY_BASES = (CONTROLLERS, CONTROLLERS_EKS, CONTROL_PLANE, NODES)
PROFILE_BASES = (CONTROL_PLANE, CONTROLLERS, NODES)


@dataclass
class RoleSpec:
    base: str
    name: str
    trust: str | list[str]
    customer_policies: list[str]
    aws_policies: list[str]
    instance_profile: bool


@dataclass
class Desired:
    """What the configuration asks for, decided from the options alone."""

    names: dict[str, str]
    roles: list[RoleSpec]
    policies: dict[str, dict[str, Any]]
    unwanted_roles: list[str] = field(default_factory=list)
    unwanted_policies: list[str] = field(default_factory=list)


# pure ------------------------------------------------------------------------------------------------------------
def resource_name(prefix: str, base: str, suffix: str) -> str:
    return f"{prefix}{base}{suffix}"


@dataclass(frozen=True)
class BootstrapSpec:
    """capa_iam's options as plain values."""

    state: str
    prefix: str
    suffix: str
    path: str
    permissions_boundary: str | None
    eks: bool
    eks_nodegroup: bool
    eks_fargate: bool
    secret_backends: tuple[str, ...]
    extra_statements: Mapping[str, Any]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> BootstrapSpec:
        return cls(
            params["state"],
            params["prefix"],
            params["suffix"],
            params["path"],
            params["permissions_boundary"],
            params["eks"],
            params["eks_nodegroup"],
            params["eks_fargate"],
            tuple(params["secret_backends"]),
            dict(params["extra_statements"]),
        )


def validate(spec: BootstrapSpec) -> None:
    for key in ("prefix", "suffix"):
        if not NAME_CHARS.match(getattr(spec, key)):
            raise SpecError(key, "may hold letters, digits and + = , . @ _ - only")
    longest = resource_name(spec.prefix, EKS_CONTROL_PLANE, spec.suffix)
    if len(longest) > 64:
        raise SpecError("prefix", f"role names would be longer than 64 characters ('{longest}')")
    if not PATH.match(spec.path) or len(spec.path) > 512:
        raise SpecError("path", "must start and end with '/' (for example '/' or '/capa/')")
    boundary = spec.permissions_boundary
    if boundary and not boundary.startswith("arn:"):
        raise SpecError("permissions_boundary", f"'{boundary}' is not a policy ARN")
    if not spec.secret_backends:
        raise SpecError("secret_backends", "needs at least one backend")
    for base, statements in spec.extra_statements.items():
        if base not in POLICY_BASES:
            raise SpecError(f"extra_statements.{base}", f"is not one of the policies {', '.join(POLICY_BASES)}")
        if not isinstance(statements, list):
            raise SpecError(f"extra_statements.{base}", "must be a list of policy statements")
        for index, statement in enumerate(statements):
            if not isinstance(statement, dict) or "Effect" not in statement or "Action" not in statement:
                raise SpecError(f"extra_statements.{base}[{index}]", "must be a statement with Effect and Action")
    desired = desired_state(spec, None)
    for base, document in desired.policies.items():
        if policies.policy_size(document) > POLICY_SIZE_LIMIT:
            raise SpecError(f"extra_statements.{base}", f"policy {base} exceeds IAM's {POLICY_SIZE_LIMIT} characters")


def desired_state(spec: BootstrapSpec, region: str | None) -> Desired:
    prefix, suffix, eks = spec.prefix, spec.suffix, spec.eks
    names = {base: resource_name(prefix, base, suffix) for base in set(ROLE_BASES) | set(POLICY_BASES)}
    extra = spec.extra_statements
    backends = spec.secret_backends
    documents = {
        CONTROLLERS: policies.controllers_policy(suffix, backends, extra.get(CONTROLLERS, [])),
        CONTROL_PLANE: policies.control_plane_policy(extra.get(CONTROL_PLANE, [])),
        NODES: policies.nodes_policy(backends, extra.get(NODES, [])),
    }
    if eks:
        documents[CONTROLLERS_EKS] = policies.controllers_eks_policy(extra.get(CONTROLLERS_EKS, []))
    controllers = [CONTROLLERS, CONTROLLERS_EKS] if eks else [CONTROLLERS]

    def aws(*names_: str) -> list[str]:
        return [managed_policy_arn(region, n) for n in names_]

    worker = aws("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy") if eks else []
    roles = [
        RoleSpec(CONTROL_PLANE, names[CONTROL_PLANE], EC2, [CONTROL_PLANE, NODES, *controllers], [], True),
        # With EKS, the controllers may run in an EKS cluster under EKS Pod Identity (as clusterawsadm trusts it).
        RoleSpec(CONTROLLERS, names[CONTROLLERS], [EC2, EKS_POD_IDENTITY] if eks else EC2, controllers, [], True),
        RoleSpec(NODES, names[NODES], EC2, [NODES], worker + aws("AmazonEC2ContainerRegistryReadOnly"), True),
    ]
    if eks:
        roles.append(
            RoleSpec(
                EKS_CONTROL_PLANE,
                names[EKS_CONTROL_PLANE],
                "eks.amazonaws.com",
                [],
                aws("AmazonEKSClusterPolicy"),
                False,
            )
        )
    if spec.eks_nodegroup:
        managed = aws("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
        roles.append(RoleSpec(EKS_NODEGROUP, names[EKS_NODEGROUP], EC2, [], managed, False))
    if spec.eks_fargate:
        managed = aws("AmazonEKSFargatePodExecutionRolePolicy")
        roles.append(RoleSpec(EKS_FARGATE, names[EKS_FARGATE], "eks-fargate-pods.amazonaws.com", [], managed, False))
    wanted_roles = {r.base for r in roles}
    return Desired(
        names=names,
        roles=roles,
        policies=documents,
        unwanted_roles=[names[b] for b in ROLE_BASES if b not in wanted_roles],
        unwanted_policies=[names[b] for b in POLICY_BASES if b not in documents],
    )


def canonical(document: Any) -> str:
    """A policy document as comparable text (IAM returns it decoded, or URL-decoded JSON text)."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return document
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def version_to_prune(versions: list[Mapping[str, Any]]) -> str | None:
    """The oldest non-default version when IAM's limit of five is reached (a new one could not be created)."""
    if len(versions) < MAX_POLICY_VERSIONS:
        return None
    candidates = [v for v in versions if not v.get("IsDefaultVersion")]
    oldest = min(candidates, key=lambda v: (str(v.get("CreateDate", "")), _version_number(v["VersionId"])))
    return oldest["VersionId"]


def _version_number(version_id: str) -> int:
    digits = version_id.lstrip("v")
    return int(digits) if digits.isdigit() else 0


# AWS -------------------------------------------------------------------------------------------------------------
class IamBootstrapTier:
    def parse(self, params: Mapping[str, Any]) -> BootstrapSpec:
        return BootstrapSpec.from_params(params)

    def validate(self, spec: BootstrapSpec, region: str | None) -> None:
        validate(spec)

    def reconcile(self, ctx: Context, spec: BootstrapSpec) -> Outcome:
        run = _Run(ctx, spec)
        return Outcome(*(run.absent() if spec.state == "absent" else run.present()))


class _Run:
    def __init__(self, ctx: Context, spec: BootstrapSpec) -> None:
        self.ctx = ctx
        self.iam = ctx.client("iam")
        self.path = spec.path
        self.boundary = spec.permissions_boundary
        self.desired = desired_state(spec, ctx.region)
        self.owner_tags = {BOOTSTRAP_TAG: ctx.cluster}

    # observation
    def owns(self, tags: Mapping[str, str] | None) -> bool:
        return (tags or {}).get(BOOTSTRAP_TAG) == self.ctx.cluster

    def tags(self, name: str) -> dict[str, str]:
        tags = {"Name": name}
        tags.update(self.ctx.additional_tags or {})
        tags.update(self.owner_tags)
        return tags

    def observe_policies(self) -> dict[str, dict[str, Any]]:
        """Our names' policies under the path: ``{name: {arn, default_version, document, tags}}``."""
        listed = self.iam.paginate("list_policies", Scope="Local", PathPrefix=self.path).get("Policies", [])
        ours = set(self.desired.names.values())
        found = {}
        for policy in listed:
            if policy["PolicyName"] not in ours or policy.get("Path", "/") != self.path:
                continue
            full = self.iam.get_policy(PolicyArn=policy["Arn"])["Policy"]
            version = self.iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=full["DefaultVersionId"])
            found[policy["PolicyName"]] = {
                "arn": policy["Arn"],
                "default_version": full["DefaultVersionId"],
                "document": version["PolicyVersion"].get("Document"),
                "tags": tags_to_dict(full.get("Tags")),
            }
        return found

    def observe_profiles(self) -> dict[str, dict[str, Any]]:
        listed = self.iam.paginate("list_instance_profiles", PathPrefix=self.path).get("InstanceProfiles", [])
        wanted = {self.desired.names[b] for b in PROFILE_BASES}
        found = {}
        for profile in listed:
            name = profile["InstanceProfileName"]
            if name not in wanted:
                continue
            full = self.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
            found[name] = {
                "arn": full["Arn"],
                "roles": [r["RoleName"] for r in full.get("Roles", [])],
                "tags": tags_to_dict(full.get("Tags")),
            }
        return found

    # present
    def present(self) -> tuple[dict[str, Any], dict[str, Any]]:
        policies_now = self.observe_policies()
        profiles_now = self.observe_profiles()
        before = _summary(policies_now, profiles_now)
        policy_results = {
            base: self.ensure_policy(base, doc, policies_now) for base, doc in self.desired.policies.items()
        }
        role_results = []
        for spec in self.desired.roles:
            arns = [policy_results[b]["arn"] for b in spec.customer_policies] + spec.aws_policies
            role = ensure_role(
                self.ctx,
                spec.name,
                spec.trust,
                arns,
                path=self.path,
                permissions_boundary=self.boundary,
                tags=self.tags(spec.name),
                owns=self.owns,
            )
            trusted = [spec.trust] if isinstance(spec.trust, str) else list(spec.trust)
            role.update(base=spec.base, trust_services=trusted, instance_profile=None)
            if spec.instance_profile:
                role["instance_profile"] = self.ensure_profile(spec.name, profiles_now.get(spec.name))
            role_results.append(role)
        for name in self.desired.unwanted_roles:
            delete_owned_role(self.ctx, name, owns=self.owns)
        for name in self.desired.unwanted_policies:
            if name in policies_now:
                self.delete_policy(name, policies_now[name])
        after = {
            "configuration": self.ctx.cluster,
            "roles": role_results,
            "instance_profiles": [r["instance_profile"] for r in role_results if r["instance_profile"]],
            "policies": list(policy_results.values()),
        }
        return before, after

    def ensure_policy(self, base: str, document: dict[str, Any], existing: Mapping[str, Any]) -> dict[str, Any]:
        name = self.desired.names[base]
        current = existing.get(name)
        result = {"base": base, "name": name, "document": document, "managed": True, "created": False}
        if current is None:
            answer = self.ctx.ops.call(
                self.iam,
                "create_policy",
                resource=name,
                reason="missing",
                predicted={"Policy": {"Arn": placeholder("iam-policy", name), "DefaultVersionId": "v1"}},
                PolicyName=name,
                Path=self.path,
                PolicyDocument=json.dumps(document),
                Description=f"clusterapi.aws IAM bootstrap {self.ctx.cluster}: {base}",
                Tags=dict_to_tags(self.tags(name)),
            )
            policy = answer["Policy"]
            return dict(result, arn=policy["Arn"], default_version=policy.get("DefaultVersionId"), created=True)
        result.update(arn=current["arn"], default_version=current["default_version"])
        if not self.owns(current["tags"]):
            self.ctx.warn(f"IAM policy {name} is not tagged {BOOTSTRAP_TAG}={self.ctx.cluster}; used as it is")
            return dict(result, managed=False, document=current["document"])
        if canonical(current["document"]) != canonical(document):
            result["default_version"] = self.new_version(name, current["arn"], document)
        repair_tags(self.ctx, "iam-policy", current["arn"], name, current["tags"], self.tags(name))
        return result

    def new_version(self, name: str, arn: str, document: dict[str, Any]) -> str:
        versions = self.iam.paginate("list_policy_versions", PolicyArn=arn).get("Versions", [])
        oldest = version_to_prune(versions)
        if oldest:
            self.ctx.ops.call(
                self.iam,
                "delete_policy_version",
                resource=name,
                reason=f"IAM keeps {MAX_POLICY_VERSIONS} versions; {oldest} is the oldest",
                PolicyArn=arn,
                VersionId=oldest,
            )
        answer = self.ctx.ops.call(
            self.iam,
            "create_policy_version",
            resource=name,
            reason="policy document differs",
            predicted={"PolicyVersion": {"VersionId": placeholder("iam-policy-version", name)}},
            PolicyArn=arn,
            PolicyDocument=json.dumps(document),
            SetAsDefault=True,
        )
        return answer["PolicyVersion"]["VersionId"]

    def ensure_profile(self, name: str, current: Mapping[str, Any] | None) -> dict[str, Any]:
        if current is None:
            answer = self.ctx.ops.call(
                self.iam,
                "create_instance_profile",
                resource=name,
                reason="missing",
                predicted={"InstanceProfile": {"Arn": placeholder("iam-instance-profile", name)}},
                InstanceProfileName=name,
                Path=self.path,
                Tags=dict_to_tags(self.tags(name)),
            )
            self.add_role(name)
            return {"name": name, "arn": answer["InstanceProfile"]["Arn"], "role": name, "managed": True}
        if not self.owns(current["tags"]):
            self.ctx.warn(f"instance profile {name} is not tagged {BOOTSTRAP_TAG}={self.ctx.cluster}; used as it is")
            roles = current["roles"]
            return {"name": name, "arn": current["arn"], "role": roles[0] if roles else None, "managed": False}
        for other in current["roles"]:
            if other != name:
                self.ctx.ops.call(
                    self.iam,
                    "remove_role_from_instance_profile",
                    resource=name,
                    reason=f"holds {other}, not {name}",
                    InstanceProfileName=name,
                    RoleName=other,
                )
        if name not in current["roles"]:
            self.add_role(name)
        return {"name": name, "arn": current["arn"], "role": name, "managed": True}

    def add_role(self, name: str) -> None:
        self.ctx.ops.call(
            self.iam,
            "add_role_to_instance_profile",
            resource=name,
            reason=f"role {name}",
            InstanceProfileName=name,
            RoleName=name,
        )

    # absent
    def absent(self) -> tuple[dict[str, Any], dict[str, Any]]:
        policies_now = self.observe_policies()
        profiles_now = self.observe_profiles()
        before = _summary(policies_now, profiles_now)
        for base in ROLE_BASES:
            delete_owned_role(self.ctx, self.desired.names[base], owns=self.owns)
        for name, profile in profiles_now.items():
            if not self.owns(profile["tags"]):
                continue
            # Roles deleted above were removed from it already; only a foreign role can be left in our profile.
            for role in profile["roles"]:
                if role not in self.desired.names.values():
                    self.ctx.ops.call(
                        self.iam,
                        "remove_role_from_instance_profile",
                        resource=name,
                        reason="profile deleted",
                        InstanceProfileName=name,
                        RoleName=role,
                    )
            self.ctx.ops.call(
                self.iam, "delete_instance_profile", resource=name, reason="state absent", InstanceProfileName=name
            )
        for name, policy in policies_now.items():
            self.delete_policy(name, policy)
        return before, {"configuration": self.ctx.cluster, "roles": [], "instance_profiles": [], "policies": []}

    def delete_policy(self, name: str, policy: Mapping[str, Any]) -> None:
        if not self.owns(policy["tags"]):
            self.ctx.warn(f"IAM policy {name} is not tagged {BOOTSTRAP_TAG}={self.ctx.cluster}; left alone")
            return
        arn = policy["arn"]
        for version in self.iam.paginate("list_policy_versions", PolicyArn=arn).get("Versions", []):
            if not version.get("IsDefaultVersion"):
                self.ctx.ops.call(
                    self.iam,
                    "delete_policy_version",
                    resource=name,
                    reason="policy deleted",
                    PolicyArn=arn,
                    VersionId=version["VersionId"],
                )
        try:
            self.ctx.ops.call(self.iam, "delete_policy", resource=name, reason="state absent", PolicyArn=arn)
        except botocore.exceptions.ClientError as e:
            if error_code(e) != "DeleteConflict":
                raise
            self.ctx.warn(f"IAM policy {name} is still attached to something this module did not create; left")


def _summary(policies_now: Mapping[str, Any], profiles_now: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "policies": {n: {"arn": p["arn"], "document": p["document"]} for n, p in sorted(policies_now.items())},
        "instance_profiles": {n: {"arn": p["arn"], "roles": p["roles"]} for n, p in sorted(profiles_now.items())},
    }


def module_argument_spec() -> dict[str, Any]:
    """capa_iam's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        prefix=dict(type="str", default=""),
        suffix=dict(type="str", default=".cluster-api-provider-aws.sigs.k8s.io"),
        path=dict(type="str", default="/"),
        permissions_boundary=dict(type="str"),
        eks=dict(type="bool", default=True),
        eks_nodegroup=dict(type="bool", default=False),
        eks_fargate=dict(type="bool", default=False),
        secret_backends=dict(
            type="list",
            elements="str",
            choices=["secrets-manager", "ssm-parameter-store"],
            default=["secrets-manager"],
        ),
        extra_statements=dict(type="dict", default={}),
    )
