# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the EKS control plane (CAPA's AWSManagedControlPlane) - cluster, IAM role, addons, OIDC provider,
aws-auth / access entries and kubeconfigs, in CAPA's order.

Decisions live in :mod:`_eks_plan` (pure); this file observes, calls ``ctx.ops.call`` and waits. A steady run
reads the cluster once (DescribeCluster), the role once (GetRole + ListAttachedRolePolicies when we own it),
addons with ListAddons + one DescribeAddon per addon (EKS has no batch describe), the OIDC provider with
ListOpenIDConnectProviders + GetOpenIDConnectProvider when I(associate_oidc_provider), and access entries with
ListAccessEntries when the authentication mode uses them.

A cluster found without the cluster's ownership tag is used as it is: kubeconfigs are written, nothing in AWS
is changed or deleted.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.errors import error_code
from ..iam.roles import delete_owned_role, ensure_role, managed_policy_arn
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.local_files import write_private
from ..kernel.operations import PlannedCall, is_placeholder, placeholder
from ..kernel.tags import OWNED, ROLE_COMMON, cloud_provider_tag_key, dict_to_tags, is_owned, missing_tags, tags_to_dict
from ..kernel.waiting import wait_until
from . import cluster_plan as plan
from . import kubeconfig

CLUSTER_POLICY = "AmazonEKSClusterPolicy"
OIDC_CLIENT_ID = "sts.amazonaws.com"
# Seconds between polls of a cluster, update or addon; tests set it to 0.
POLL_DELAY = 15.0
# IAM is eventually consistent: EKS may not see a role created a second ago ("cannot be assumed").
ROLE_PROPAGATION_RETRY = 5.0
READY_STATUSES = ("ACTIVE", "UPDATING")
ADDON_DONE = ("ACTIVE", "DEGRADED")
ADDON_FAILED = ("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED")


def default_role_name(cluster: str) -> str:
    return f"{cluster}-iam-service-role"


def output_paths(output_dir: str, cluster: str) -> dict[str, Path]:
    base = Path(output_dir).expanduser().absolute() / cluster
    return {
        "kubeconfig": base / "kubeconfig",
        "user_kubeconfig": base / "user-kubeconfig",
        "aws_auth": base / "aws-auth.yaml",
    }


class EksClusterTier:
    # validate (pure) ----------------------------------------------------------------------------------------
    def validate(self, params: dict[str, Any], region: str | None) -> None:
        plan.check_eks_name(params.get("name") or params["cluster_name"])
        if not params["output_dir"]:
            raise SpecError("output_dir", "must not be empty")
        if params["state"] == "absent":
            return
        if params.get("version"):
            plan.parse_version(params["version"])
        plan.check_arn(params.get("role_arn"), "role_arn", "an IAM role")
        plan.check_subnets(params["subnets"], params["restrict_private_subnets"])
        for index, group in enumerate(params["security_group_ids"]):
            if not (is_placeholder(group) or str(group).startswith("sg-")):
                raise SpecError(f"security_group_ids[{index}]", f"'{group}' is not a security group id")
        plan.desired_endpoint(params["endpoint_access"])
        encryption = params.get("encryption_config") or {}
        if encryption.get("resources") and not encryption.get("provider"):
            raise SpecError("encryption_config.provider", "is required (a KMS key ARN or alias)")
        if encryption.get("provider") and not str(encryption["provider"]).startswith(("arn:", "alias/")):
            raise SpecError("encryption_config.provider", f"'{encryption['provider']}' is not a KMS key ARN or alias")
        plan.check_addons(params["addons"] or [])
        authenticator = params["iam_authenticator"]
        plan.check_mappings(authenticator["map_roles"], "rolearn", "iam_authenticator.map_roles")
        plan.check_mappings(authenticator["map_users"], "userarn", "iam_authenticator.map_users")
        for index, arn in enumerate(params["node_role_arns"]):
            plan.check_arn(arn, f"node_role_arns[{index}]", "an IAM role")
        if params.get("oidc_thumbprint") and not plan.THUMBPRINT.match(params["oidc_thumbprint"]):
            raise SpecError("oidc_thumbprint", "must be the 40 hex digits of a SHA-1 fingerprint")

    # reconcile ----------------------------------------------------------------------------------------------
    def reconcile(self, ctx: Context, params: dict[str, Any]) -> tuple[Any, Any]:
        run = _Run(ctx, params)
        if params["state"] == "absent":
            return run.delete()
        return run.apply()


class _Run:
    """One module run: the spec as plain values, the clients, and what was observed."""

    def __init__(self, ctx: Context, params: Mapping[str, Any]) -> None:
        self.ctx = ctx
        self.params = params
        self.name: str = params.get("name") or ctx.cluster
        self.eks = ctx.client("eks")
        self.iam = ctx.client("iam")
        self.paths = output_paths(params["output_dir"], ctx.cluster)
        self.conditions: dict[str, Any] = {}

    # observe ----------------------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any] | None:
        try:
            return self.eks.describe_cluster(name=self.name)["cluster"]
        except self.eks.raw.exceptions.ResourceNotFoundException:
            return None

    def wait_cluster(self, what: str, done: Callable[[dict[str, Any] | None], bool]) -> dict[str, Any] | None:
        def failed(cluster: dict[str, Any] | None) -> str | None:
            if cluster and cluster.get("status") == "FAILED":
                return "the cluster is FAILED"
            return None

        return wait_until(self.describe, done, self.ctx, what, delay=POLL_DELAY, failed=failed)

    def wait_active(self, cluster: dict[str, Any]) -> dict[str, Any]:
        return self.wait_cluster(
            f"EKS cluster {self.name} to be ACTIVE", lambda c: c is not None and c["status"] == "ACTIVE"
        )

    def wait_update(self, answer: Mapping[str, Any], what: str, addon: str | None = None) -> None:
        """Wait for an EKS update id to finish (or, when AWS gave no id, for the cluster to be ACTIVE)."""
        update_id = (answer.get("update") or {}).get("id")
        if not update_id:
            self.wait_cluster(what, lambda c: c is not None and c["status"] == "ACTIVE")
            return
        extra = {"addonName": addon} if addon else {}

        def describe() -> dict[str, Any]:
            return self.eks.describe_update(name=self.name, updateId=update_id, **extra)["update"]

        def failed(update: Mapping[str, Any]) -> str | None:
            if update["status"] in ("Failed", "Cancelled"):
                errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors", []))
                return f"update {update_id} {update['status']}: {errors or 'no detail'}"
            return None

        wait_until(describe, lambda u: u["status"] == "Successful", self.ctx, what, delay=POLL_DELAY, failed=failed)

    # present --------------------------------------------------------------------------------------------------
    def apply(self) -> tuple[Any, Any]:
        cluster = self.describe()
        before = _cluster_result(cluster, None) if cluster else None
        owned = cluster is None or is_owned(cluster.get("tags"), self.ctx.cluster)
        role = self.ensure_role(cluster)
        if cluster is None:
            cluster = self.create(role["arn"])
        elif not owned:
            self.ctx.warn(
                f"EKS cluster {self.name} exists without the ownership tag of cluster {self.ctx.cluster}; "
                "it is used as it is (no update, addon, OIDC or access-entry change)"
            )
        else:
            if role["arn"] != cluster.get("roleArn") and not is_placeholder(role["arn"]):
                self.ctx.warn(
                    f"EKS cluster {self.name} uses role {cluster.get('roleArn')}; a cluster's role cannot change"
                )
            cluster = self.update(cluster)
        self.conditions["EKSControlPlaneReady"] = _ready_condition(cluster)
        addons = self.reconcile_addons(cluster) if owned else {"installed": [], "other": []}
        oidc = self.reconcile_oidc(cluster) if owned and self.params["associate_oidc_provider"] else None
        aws_auth = self.reconcile_authenticator(cluster, owned)
        kubeconfigs = self.write_kubeconfigs(cluster)
        after = {
            "cluster": _cluster_result(cluster, oidc),
            "addons": addons,
            "kubeconfig": kubeconfigs,
            "aws_auth": aws_auth,
            "conditions": self.conditions,
        }
        return {"cluster": before}, after

    def ensure_role(self, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
        if self.params.get("role_arn"):
            role = {"arn": self.params["role_arn"], "managed": False}
        else:
            name = self.params.get("role_name") or default_role_name(self.ctx.cluster)
            policy = managed_policy_arn(self.ctx.region, CLUSTER_POLICY)
            role = ensure_role(self.ctx, name, "eks.amazonaws.com", [policy])
        self.conditions["IAMControlPlaneRolesReady"] = condition(True, "", f"role {role['arn']}")
        return role

    def create_request(self, role_arn: str) -> dict[str, Any]:
        p = self.params
        vpc_config = {
            "subnetIds": plan.subnet_ids(p["subnets"], p["restrict_private_subnets"]),
            "securityGroupIds": list(p["security_group_ids"]),
            **plan.desired_endpoint(p["endpoint_access"]),
        }
        access = p["access_config"]
        request: dict[str, Any] = {
            "name": self.name,
            "roleArn": role_arn,
            "resourcesVpcConfig": vpc_config,
            "logging": plan.logging_config(plan.desired_log_types(p["logging"])),
            "accessConfig": {
                "authenticationMode": access["authentication_mode"],
                "bootstrapClusterCreatorAdminPermissions": access["bootstrap_cluster_creator_admin_permissions"],
            },
            "tags": self.ctx.tags(ROLE_COMMON, self.name, {cloud_provider_tag_key(self.name): OWNED}),
            # One token per run: a retried request is the same request, a later run may create anew.
            "clientRequestToken": str(uuid.uuid4()),
        }
        if p.get("version"):
            request["version"] = p["version"]
        encryption = plan.desired_encryption(p.get("encryption_config"))
        if encryption:
            request["encryptionConfig"] = encryption
        return request

    def create(self, role_arn: str) -> dict[str, Any] | None:
        request = self.create_request(role_arn)
        predicted = {
            "cluster": {
                "name": self.name,
                "arn": placeholder("eks", self.name),
                "status": "CREATING",
                "version": request.get("version"),
                "roleArn": role_arn,
                "resourcesVpcConfig": request["resourcesVpcConfig"],
                "logging": request["logging"],
                "encryptionConfig": request.get("encryptionConfig", []),
                "accessConfig": {"authenticationMode": request["accessConfig"]["authenticationMode"]},
                "tags": request["tags"],
            }
        }
        answer = self.call_retrying_role(
            lambda: self.ctx.ops.call(
                self.eks, "create_cluster", resource=self.name, reason="missing", predicted=predicted, **request
            )
        )
        cluster = answer["cluster"]
        if self.ctx.check_mode or not self.ctx.wait:
            return cluster
        return self.wait_active(cluster)

    def call_retrying_role(self, attempt: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        while True:
            try:
                return attempt()
            except botocore.exceptions.ClientError as e:
                message = e.response.get("Error", {}).get("Message", "")
                retry = error_code(e) == "InvalidParameterException" and "role" in message.lower()
                if not retry or self.ctx.remaining() <= ROLE_PROPAGATION_RETRY:
                    raise
                self.ctx.ops.plan.pop()  # the failed attempt; the retry records the call again
                time.sleep(ROLE_PROPAGATION_RETRY)

    def update(self, cluster: dict[str, Any]) -> dict[str, Any]:
        """Version steps, then endpoint access, logging, access config and encryption, one update at a time."""
        status = cluster["status"]
        if status in ("DELETING", "FAILED"):
            raise ReconcileError(f"EKS cluster {self.name} is {status}")
        updates = self.pending_updates(cluster)
        self.tag_cluster(cluster)
        if not updates:
            return cluster
        if status != "ACTIVE" and not self.ctx.check_mode:
            if not self.ctx.wait:
                self.ctx.warn(f"EKS cluster {self.name} is {status}; its updates wait for the next run")
                return cluster
            cluster = self.wait_active(cluster)
        for index, (method, request, reason) in enumerate(updates):
            if index and not self.ctx.wait and not self.ctx.check_mode:
                left = ", ".join(r for _m, _q, r in updates[index:])
                self.ctx.warn(f"wait is off: EKS runs one update at a time, left for the next run: {left}")
                break
            answer = self.ctx.ops.call(self.eks, method, resource=self.name, reason=reason, predicted={}, **request)
            if self.ctx.wait and not self.ctx.check_mode:
                self.wait_update(answer, f"EKS cluster {self.name}: {reason}")
        if self.ctx.check_mode:
            return _predicted_after_updates(cluster, updates)
        return self.describe() or cluster

    def pending_updates(self, cluster: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
        p = self.params
        updates: list[tuple[str, dict[str, Any], str]] = []
        for step in plan.version_steps(cluster["version"], p.get("version")):
            updates.append(("update_cluster_version", {"name": self.name, "version": step}, f"version {step}"))
        endpoint = plan.endpoint_update(cluster.get("resourcesVpcConfig") or {}, p["endpoint_access"])
        if endpoint:
            updates.append(
                (
                    "update_cluster_config",
                    {"name": self.name, "resourcesVpcConfig": endpoint},
                    "endpoint access differs",
                )
            )
        logging = plan.logging_update(cluster.get("logging"), p["logging"])
        if logging:
            updates.append(("update_cluster_config", {"name": self.name, "logging": logging}, "logging differs"))
        access = plan.access_config_update(cluster, p["access_config"]["authentication_mode"])
        if access:
            updates.append(
                ("update_cluster_config", {"name": self.name, "accessConfig": access}, "authentication mode differs")
            )
        encryption = plan.encryption_to_associate(cluster.get("encryptionConfig"), p.get("encryption_config"))
        if encryption:
            updates.append(
                (
                    "associate_encryption_config",
                    {"clusterName": self.name, "encryptionConfig": encryption},
                    "encryption added",
                )
            )
        return updates

    def tag_cluster(self, cluster: Mapping[str, Any]) -> None:
        desired = self.ctx.tags(ROLE_COMMON, self.name, {cloud_provider_tag_key(self.name): OWNED})
        todo = missing_tags(cluster.get("tags") or {}, desired)
        if todo:
            self.ctx.ops.call(
                self.eks,
                "tag_resource",
                resource=self.name,
                reason=f"tags differ: {', '.join(sorted(todo))}",
                resourceArn=cluster["arn"],
                tags=todo,
            )

    # addons -----------------------------------------------------------------------------------------------------
    def describe_addon(self, addon: str) -> dict[str, Any] | None:
        try:
            return self.eks.describe_addon(clusterName=self.name, addonName=addon)["addon"]
        except self.eks.raw.exceptions.ResourceNotFoundException:
            return None

    def reconcile_addons(self, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
        wanted = self.params["addons"]
        if wanted is None:
            # Not given: addons are not managed (no request). An empty list manages them: ours are deleted.
            self.conditions["EKSAddonsConfigured"] = condition(True, "", "addons not managed")
            return {"installed": [], "other": []}
        exists = cluster is not None and not is_placeholder(cluster.get("arn"))
        if not exists and not wanted:
            self.conditions["EKSAddonsConfigured"] = condition(True, "")
            return {"installed": [], "other": []}
        observed: dict[str, dict[str, Any]] = {}
        if exists:
            names = self.eks.paginate("list_addons", clusterName=self.name).get("addons", [])
            observed = {n: a for n in names if (a := self.describe_addon(n)) is not None}
        owned = {n for n, a in observed.items() if is_owned(a.get("tags"), self.ctx.cluster)}
        actions, foreign = plan.plan_addons(wanted, observed, owned)
        for name in foreign:
            self.ctx.warn(f"addon {name} was not installed by this module; left as it is")
        waits: list[tuple[str, str, dict[str, Any]]] = []
        tags = self.ctx.tags(ROLE_COMMON, None)
        for action in actions:
            waits.append((action.action, action.name, self.apply_addon(action, tags)))
        for name in sorted(owned - {a.name for a in actions if a.action == "delete"}):
            todo = missing_tags(observed[name].get("tags") or {}, tags)
            if todo:
                self.ctx.ops.call(
                    self.eks,
                    "tag_resource",
                    resource=f"addon {name}",
                    reason=f"tags differ: {', '.join(sorted(todo))}",
                    resourceArn=observed[name]["addonArn"],
                    tags=todo,
                )
        if self.ctx.wait and not self.ctx.check_mode:
            for kind, name, answer in waits:
                self.wait_addon(kind, name, answer)
        self.conditions["EKSAddonsConfigured"] = condition(
            True, "", f"{len(actions)} addon change(s)" if actions else "addons as specified"
        )
        deleted = {a.name for a in actions if a.action == "delete"}
        installed = sorted((owned - deleted) | {a.name for a in actions if a.action == "create"})
        return {"installed": installed, "other": sorted(set(observed) - owned)}

    def apply_addon(self, action: plan.AddonAction, tags: dict[str, str]) -> dict[str, Any]:
        label = f"addon {action.name}"
        if action.action == "create":
            return self.ctx.ops.call(
                self.eks,
                "create_addon",
                resource=label,
                reason=action.reason,
                predicted={},
                clusterName=self.name,
                tags=tags,
                clientRequestToken=str(uuid.uuid4()),
                **action.request,
            )
        if action.action == "update":
            return self.ctx.ops.call(
                self.eks,
                "update_addon",
                resource=label,
                reason=action.reason,
                predicted={},
                clusterName=self.name,
                clientRequestToken=str(uuid.uuid4()),
                **action.request,
            )
        return self.ctx.ops.call(
            self.eks, "delete_addon", resource=label, reason=action.reason, clusterName=self.name, **action.request
        )

    def wait_addon(self, kind: str, name: str, answer: Mapping[str, Any]) -> None:
        what = f"addon {name} ({kind})"
        if kind == "update":
            self.wait_update(answer, what, addon=name)
            return
        if kind == "delete":
            wait_until(lambda: self.describe_addon(name), lambda a: a is None, self.ctx, what, delay=POLL_DELAY)
            return

        def failed(addon: Mapping[str, Any] | None) -> str | None:
            if addon and addon["status"] in ADDON_FAILED:
                issues = "; ".join(i.get("message", "") for i in (addon.get("health") or {}).get("issues", []))
                return f"{addon['status']}: {issues or 'no detail'}"
            return None

        wait_until(
            lambda: self.describe_addon(name),
            lambda a: a is not None and a["status"] in ADDON_DONE,
            self.ctx,
            what,
            delay=POLL_DELAY,
            failed=failed,
        )

    # OIDC provider ----------------------------------------------------------------------------------------------
    def find_oidc_provider(self, issuer: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Providers of this issuer (or, without one, every EKS provider of the region) with their details."""
        providers = self.iam.list_open_id_connect_providers().get("OpenIDConnectProviderList", [])
        region_marker = f"oidc-provider/oidc.eks.{self.ctx.region}."
        arns = [
            p["Arn"]
            for p in providers
            if (plan.provider_matches_issuer(p["Arn"], issuer) if issuer else region_marker in p["Arn"])
        ]
        return [(arn, self.iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)) for arn in arns]

    def reconcile_oidc(self, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
        issuer = ((cluster or {}).get("identity") or {}).get("oidc", {}).get("issuer")
        tags = self.ctx.tags(ROLE_COMMON, None, {cloud_provider_tag_key(self.name): OWNED})
        thumbprint = self.params.get("oidc_thumbprint")
        if not issuer:
            # The issuer is known once the cluster exists: in check mode plan the create, otherwise (wait off
            # and the cluster still CREATING) leave it to the next run.
            if not self.ctx.check_mode:
                self.ctx.warn(f"EKS cluster {self.name} has no OIDC issuer yet; the provider is made by a later run")
                return {"issuer": None, "provider_arn": None, "trust_policy_template": None}
            self.ctx.ops.call(
                self.iam, "create_open_id_connect_provider", resource=f"OIDC provider of {self.name}", reason="missing"
            )
            return {
                "issuer": None,
                "provider_arn": placeholder("oidc-provider", self.name),
                "trust_policy_template": None,
            }
        found = self.find_oidc_provider(issuer)
        if found:
            arn, detail = found[0]
            if is_owned(tags_to_dict(detail.get("Tags")), self.ctx.cluster):
                self.fix_oidc_provider(arn, detail, thumbprint, tags)
        else:
            thumbprint = thumbprint or kubeconfig.fetch_root_ca_thumbprint(issuer)
            arn = self.ctx.ops.call(
                self.iam,
                "create_open_id_connect_provider",
                resource=issuer,
                reason="missing",
                predicted={"OpenIDConnectProviderArn": placeholder("oidc-provider", self.name)},
                Url=issuer,
                ClientIDList=[OIDC_CLIENT_ID],
                ThumbprintList=[thumbprint.lower()],
                Tags=dict_to_tags(tags),
            )["OpenIDConnectProviderArn"]
        return {
            "issuer": issuer,
            "provider_arn": arn,
            "trust_policy_template": plan.irsa_trust_policy_template(arn, issuer),
        }

    def fix_oidc_provider(self, arn: str, detail: Mapping[str, Any], thumbprint: str | None, tags: dict) -> None:
        if OIDC_CLIENT_ID not in detail.get("ClientIDList", []):
            self.ctx.ops.call(
                self.iam,
                "add_client_id_to_open_id_connect_provider",
                resource=arn,
                reason=f"client id {OIDC_CLIENT_ID} missing",
                OpenIDConnectProviderArn=arn,
                ClientID=OIDC_CLIENT_ID,
            )
        # Without oidc_thumbprint the stored one is kept: fetching the issuer's chain every run would cost a TLS
        # round trip for nothing (IAM no longer checks the thumbprint of well-known issuers such as EKS).
        if thumbprint and [t.lower() for t in detail.get("ThumbprintList", [])] != [thumbprint.lower()]:
            self.ctx.ops.call(
                self.iam,
                "update_open_id_connect_provider_thumbprint",
                resource=arn,
                reason="thumbprint differs",
                OpenIDConnectProviderArn=arn,
                ThumbprintList=[thumbprint.lower()],
            )
        todo = missing_tags(tags_to_dict(detail.get("Tags")), tags)
        if todo:
            self.ctx.ops.call(
                self.iam,
                "tag_open_id_connect_provider",
                resource=arn,
                reason=f"tags differ: {', '.join(sorted(todo))}",
                OpenIDConnectProviderArn=arn,
                Tags=dict_to_tags(todo),
            )

    # aws-auth and access entries --------------------------------------------------------------------------------
    def reconcile_authenticator(self, cluster: Mapping[str, Any] | None, owned: bool) -> str | None:
        p = self.params
        mode = p["access_config"]["authentication_mode"]
        authenticator = p["iam_authenticator"]
        roles, users = plan.aws_auth_mappings(
            authenticator["map_roles"], authenticator["map_users"], p["node_role_arns"]
        )
        path = None
        if mode != "API" and (roles or users):
            path = self.paths["aws_auth"]
            self.write_file(path, plan.render_aws_auth(roles, users, kubeconfig.dump_yaml), "aws-auth mappings")
        if owned and plan.access_entries_allowed(mode):
            self.reconcile_access_entries(
                cluster, plan.desired_access_entries(p["node_role_arns"], authenticator["map_roles"])
            )
        self.conditions["IAMAuthenticatorConfigured"] = condition(True, "")
        return str(path) if path else None

    def reconcile_access_entries(self, cluster: Mapping[str, Any] | None, entries: list[dict[str, Any]]) -> None:
        """Missing entries are created (append-only, as CAPA treats aws-auth); policies associated once."""
        if not entries:
            return
        exists = cluster is not None and not is_placeholder(cluster.get("arn"))
        present = (
            set(self.eks.paginate("list_access_entries", clusterName=self.name).get("accessEntries", []))
            if exists
            else set()
        )
        tags = self.ctx.tags(ROLE_COMMON, None)
        for entry in entries:
            request = {k: v for k, v in entry.items() if k != "policyArn"}
            arn = entry["principalArn"]
            policy = entry.get("policyArn")
            if arn not in present:
                self.ctx.ops.call(
                    self.eks,
                    "create_access_entry",
                    resource=arn,
                    reason="missing",
                    predicted={},
                    clusterName=self.name,
                    tags=tags,
                    clientRequestToken=str(uuid.uuid4()),
                    **request,
                )
                associated: set[str] = set()
            elif policy:
                answer = self.eks.paginate("list_associated_access_policies", clusterName=self.name, principalArn=arn)
                associated = {a["policyArn"] for a in answer.get("associatedAccessPolicies", [])}
            if policy and policy not in associated:
                self.ctx.ops.call(
                    self.eks,
                    "associate_access_policy",
                    resource=arn,
                    reason=f"associate {policy}",
                    predicted={},
                    clusterName=self.name,
                    principalArn=arn,
                    policyArn=policy,
                    accessScope={"type": "cluster"},
                )

    # kubeconfigs ------------------------------------------------------------------------------------------------
    def write_kubeconfigs(self, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
        endpoint = (cluster or {}).get("endpoint")
        ca_data = ((cluster or {}).get("certificateAuthority") or {}).get("data")
        region = self.ctx.region or ""
        result = {"path": str(self.paths["kubeconfig"]), "user_kubeconfig": str(self.paths["user_kubeconfig"])}
        if not endpoint or not ca_data:
            if self.ctx.check_mode:
                _plan_file(self.ctx, "file:WriteFile", self.paths["user_kubeconfig"], "cluster not created yet")
            else:
                self.ctx.warn(f"EKS cluster {self.name} has no endpoint yet; kubeconfigs are written by a later run")
            return {"path": None, "user_kubeconfig": None}
        self.write_file(
            self.paths["user_kubeconfig"],
            kubeconfig.user_kubeconfig(self.name, endpoint, ca_data, region),
            "kubeconfig",
        )
        if not self.ctx.check_mode:
            # The token expires within minutes, so this file is rewritten on every run, like CAPA's kubeconfig
            # secret on every reconcile. It is an output, not state: writing it does not make the run changed.
            token = kubeconfig.token(self.ctx.session.credentials(), region, self.name)
            write_private(self.paths["kubeconfig"], kubeconfig.token_kubeconfig(self.name, endpoint, ca_data, token))
        return result

    def write_file(self, path: Path, text: str, what: str) -> None:
        try:
            current = path.read_text()
        except FileNotFoundError:
            current = None
        except OSError as e:
            raise ReconcileError(f"cannot read {path}: {e}") from None
        if current == text:
            return
        _plan_file(self.ctx, "file:WriteFile", path, f"{what} missing" if current is None else f"{what} differs")
        if not self.ctx.check_mode:
            write_private(path, text)

    # absent -----------------------------------------------------------------------------------------------------
    def delete(self) -> tuple[Any, Any]:
        cluster = self.describe()
        before = {"cluster": _cluster_result(cluster, None) if cluster else None}
        issuer = None
        gone = True
        if cluster is not None:
            if not is_owned(cluster.get("tags"), self.ctx.cluster):
                self.ctx.warn(f"EKS cluster {self.name} is not owned by cluster {self.ctx.cluster}; left alone")
                return before, self.deleted_result()
            issuer = ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")
            self.refuse_with_dependants()
            if cluster["status"] != "DELETING":
                self.ctx.ops.call(self.eks, "delete_cluster", resource=self.name, reason="state absent", name=self.name)
            if self.ctx.wait and not self.ctx.check_mode:
                self.wait_cluster(f"EKS cluster {self.name} to be deleted", lambda c: c is None)
            else:
                gone = self.ctx.check_mode
        if not gone:
            self.ctx.warn("wait is off: the role and OIDC provider are deleted by a run after the cluster is gone")
            return before, self.deleted_result()
        for arn, detail in self.find_oidc_provider(issuer):
            if is_owned(tags_to_dict(detail.get("Tags")), self.ctx.cluster):
                self.ctx.ops.call(
                    self.iam,
                    "delete_open_id_connect_provider",
                    resource=arn,
                    reason="state absent",
                    OpenIDConnectProviderArn=arn,
                )
        # Only a role carrying the cluster's ownership tags is deleted (a role_name we found untagged stays).
        delete_owned_role(self.ctx, self.params.get("role_name") or default_role_name(self.ctx.cluster))
        for path in self.paths.values():
            if path.exists():
                _plan_file(self.ctx, "file:DeleteFile", path, "state absent")
                if not self.ctx.check_mode:
                    path.unlink()
        return before, self.deleted_result()

    def refuse_with_dependants(self) -> None:
        nodegroups = self.eks.paginate("list_nodegroups", clusterName=self.name).get("nodegroups", [])
        profiles = self.eks.paginate("list_fargate_profiles", clusterName=self.name).get("fargateProfileNames", [])
        if nodegroups or profiles:
            parts = []
            if nodegroups:
                parts.append(f"node groups {', '.join(sorted(nodegroups))}")
            if profiles:
                parts.append(f"Fargate profiles {', '.join(sorted(profiles))}")
            raise ReconcileError(
                f"EKS cluster {self.name} still has {' and '.join(parts)}; delete them first "
                "(capa_eks_nodegroup state=absent)"
            )

    def deleted_result(self) -> dict[str, Any]:
        return {
            "cluster": None,
            "addons": {"installed": [], "other": []},
            "kubeconfig": None,
            "aws_auth": None,
            "conditions": {},
        }


# results -----------------------------------------------------------------------------------------------------
def _plan_file(ctx: Context, call: str, path: Path, reason: str) -> None:
    # Local files are not AWS calls, but writing one is a change: it goes into the plan, and check mode skips it.
    ctx.ops.plan.append(PlannedCall(call, str(path), reason))


def _ready_condition(cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    status = (cluster or {}).get("status")
    if status in READY_STATUSES:
        return condition(True, "", f"status {status}")
    reason = "EKSControlPlaneCreating" if status in ("CREATING", None) else "EKSControlPlaneReconciliationFailed"
    return condition(False, reason, f"status {status or 'not created'}")


def _predicted_after_updates(cluster: Mapping[str, Any], updates: list[tuple[str, dict[str, Any], str]]) -> dict:
    predicted = dict(cluster)
    for method, request, _reason in updates:
        if method == "update_cluster_version":
            predicted["version"] = request["version"]
        elif "resourcesVpcConfig" in request:
            predicted["resourcesVpcConfig"] = {
                **(cluster.get("resourcesVpcConfig") or {}),
                **request["resourcesVpcConfig"],
            }
        elif "logging" in request:
            predicted["logging"] = request["logging"]
        elif "accessConfig" in request:
            predicted["accessConfig"] = request["accessConfig"]
        elif "encryptionConfig" in request:
            predicted["encryptionConfig"] = request["encryptionConfig"]
    return predicted


def _cluster_result(cluster: Mapping[str, Any] | None, oidc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if cluster is None:
        return None
    vpc = cluster.get("resourcesVpcConfig") or {}
    encryption = cluster.get("encryptionConfig") or []
    return {
        "name": cluster.get("name"),
        "arn": cluster.get("arn"),
        "version": cluster.get("version"),
        "status": cluster.get("status"),
        "endpoint": cluster.get("endpoint"),
        "certificate_authority_data": (cluster.get("certificateAuthority") or {}).get("data"),
        "role_arn": cluster.get("roleArn"),
        "security_group_id": vpc.get("clusterSecurityGroupId"),
        "subnet_ids": vpc.get("subnetIds", []),
        "security_group_ids": vpc.get("securityGroupIds", []),
        "endpoint_access": {
            "public": vpc.get("endpointPublicAccess", True),
            "private": vpc.get("endpointPrivateAccess", False),
            "public_cidrs": vpc.get("publicAccessCidrs", []),
        },
        "logging": {
            key: log_type in plan.observed_log_types(cluster.get("logging")) for key, log_type in plan.LOG_TYPES.items()
        },
        "encryption": {
            "provider": (encryption[0].get("provider") or {}).get("keyArn"),
            "resources": encryption[0].get("resources", []),
        }
        if encryption
        else None,
        "authentication_mode": plan.observed_auth_mode(cluster),
        "oidc": dict(oidc) if oidc else {"issuer": ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")},
        "tags": dict(cluster.get("tags") or {}),
    }
