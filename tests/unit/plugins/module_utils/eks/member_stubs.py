# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_eks_nodegroup's and capa_eks_fargate_profile's test material: options, specs, DescribeNodegroup answers
and a run context over a Stubber'd EKS client.

A plain module (not a conftest), imported by the test files of this package.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import members
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient

CLUSTER = "demo"
SUBNETS = [
    {"id": "subnet-0000000000000000a", "is_public": False, "availability_zone": "us-east-1a"},
    {"id": "subnet-0000000000000000b", "is_public": True, "availability_zone": "us-east-1a"},
    {"id": "subnet-0000000000000000c", "is_public": False, "availability_zone": "us-east-1b"},
]
PRIVATE = ["subnet-0000000000000000a", "subnet-0000000000000000c"]
ROLE = "arn:aws:iam::123456789012:role/nodes"


def params(**over: Any) -> dict[str, Any]:
    """Options as Ansible hands them to the tier (defaults filled in)."""
    base = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": "md-0",
        "eks_cluster_name": None,
        "version": None,
        "release_version": None,
        "scaling": {"min_size": 1, "max_size": 3, "desired_size": 2},
        "externally_managed_replicas": False,
        "instance_types": None,
        "capacity_type": "ON_DEMAND",
        "ami_type": None,
        "disk_size": None,
        "labels": {},
        "taints": [],
        "update_config": {"max_unavailable": None, "max_unavailable_percentage": None},
        "launch_template": None,
        "remote_access": None,
        "node_role_arn": None,
        "subnets": SUBNETS,
        "tags": {},
        "kubernetes_api": None,
        "await_nodes": False,
    }
    base.update(over)
    return base


def spec(**over: Any) -> plan.NodegroupSpec:
    return plan.NodegroupSpec.from_params(params(**over))


def definition(s: plan.NodegroupSpec) -> dict[str, Any]:
    return plan.immutable_definition(s, plan.private_subnet_ids(s.subnets), plan.node_role_token(s, CLUSTER))


def observed_from(s: plan.NodegroupSpec, version: str = "1.31", release: str = "1.31.0-1", **over: Any) -> dict:
    """A DescribeNodegroup answer for a node group made from ``s``."""
    request = plan.create_request(s, s.pool, plan.private_subnet_ids(s.subnets), ROLE, version, {}, "t")
    observed = {k: v for k, v in plan.predicted_nodegroup(request).items() if v is not None}
    observed.update(nodegroupArn=f"arn:aws:eks:us-east-1:1:nodegroup/demo/{s.pool}/x", releaseVersion=release)
    observed.update(over)
    return observed


def fparams(**over: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": "system",
        "eks_cluster_name": "demo-eks",
        "pod_execution_role_arn": None,
        "subnets": [],
        "selectors": [{"namespace": "kube-system", "labels": None}],
        "tags": {},
    }
    base.update(over)
    return base


class _Session:
    region = "us-east-1"

    def __init__(self, clients: dict[str, RetryingClient]) -> None:
        self.clients = clients

    def client(self, name: str) -> RetryingClient:
        return self.clients[name]


def context(raw, check_mode: bool = False) -> Context:
    return Context(
        session=_Session({"eks": RetryingClient(raw, retries=1)}),
        cluster=CLUSTER,
        check_mode=check_mode,
        wait_timeout=30,
    )


ACTIVE_CLUSTER = {
    "cluster": {"name": "demo", "status": "ACTIVE", "version": "1.31", "resourcesVpcConfig": {"subnetIds": PRIVATE}}
}


def owned_tags(s: plan.NodegroupSpec, digest: str, ctx: Context, **extra: str) -> dict[str, str]:
    return members.member_tags(ctx, s.eks_cluster, plan.NODE_GROUP_TAG, s.pool, digest, {**s.tags, **extra})
