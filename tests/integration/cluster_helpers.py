"""Helpers shared by integration test files: cluster inventories, a stock EKS spec, a module-built network.

A plain module (not a conftest) so that module-scoped setups and other helper modules can import it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# moto's OIDC issuer cannot be reached for its CA certificate, so EKS specs name the thumbprint.
OIDC_THUMBPRINT = "9e99a48a9960b14926bb7f3b02e22da2b0ab7280"
# The account's IAM, as a user runs it once before the first cluster (examples/inventory.yml's EKS pool joins with
# the nodes instance profile it creates).
IAM_PLAYBOOK = Path(__file__).resolve().parents[2] / "playbooks/iam.yml"


def write_inventory(
    tmp_path: Path, *specs: dict[str, Any], extra_vars: dict[str, Any] | None = None, name: str = "inventory.yml"
) -> Path:
    """An inventory of the ``capa_clusters`` group, one host per cluster spec, written as ``tmp_path/name``."""
    data = {
        "capa_clusters": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                "capa_output_dir": str(tmp_path / "out"),
                **(extra_vars or {}),
            },
            "hosts": {spec["name"]: {"capa_cluster": spec} for spec in specs},
        }
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def eks_spec(name: str, node_group: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A small ``kind: eks`` cluster: two zones, one NAT gateway, OIDC provider, node group ng-0, Fargate fp-0."""
    return {
        "name": name,
        "region": "us-east-1",
        "kind": "eks",
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
        "eks": {
            "version": "1.31",
            "associate_oidc_provider": True,
            "oidc_thumbprint": OIDC_THUMBPRINT,
            "node_groups": [{"name": "ng-0", **(node_group or {})}],
            "fargate_profiles": [{"name": "fp-0", "selectors": [{"namespace": "default"}]}],
        },
        **extra,
    }


def module_network(
    run_module: Callable[..., dict[str, Any]], cluster: str, zones: int = 2, kind: str = "unmanaged"
) -> dict[str, Any]:
    """A CAPA network made by the collection's own modules: VPC, ``zones`` public + private subnets (no NAT, to
    stay fast) and the role security groups of ``kind``. Returns ``{"vpc", "vpc_id", "subnets", "groups"}``."""
    vpc = run_module("clusterapi.aws.capa_vpc", {"cluster_name": cluster})["vpc"]
    subnets = run_module(
        "clusterapi.aws.capa_subnet",
        {
            "cluster_name": cluster,
            "vpc_id": vpc["id"],
            "vpc_cidr_block": vpc["cidr_block"],
            "internet_gateway_id": vpc["internet_gateway_id"],
            "availability_zone_usage_limit": zones,
            "nat_gateways": "none",
            "wait_timeout": 30,
        },
    )["subnets"]
    groups = run_module(
        "clusterapi.aws.capa_security_group",
        {"cluster_name": cluster, "vpc_id": vpc["id"], "vpc_cidr_block": vpc["cidr_block"], "kind": kind},
    )["security_groups"]
    assert len(subnets) == 2 * zones, subnets
    return {"vpc": vpc, "vpc_id": vpc["id"], "subnets": subnets, "groups": groups}
