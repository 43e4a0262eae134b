# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): the Resource Groups Tagging API (every resource of a region carrying a tag).

One logical request (all pages), ``[]`` when nothing carries the tag; nothing else is decided here.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..kernel.context import Context
from ..kernel.tags import OWNED, cluster_tag_key

# AWS's largest pages: a cluster of a few hundred machines still costs few requests. A page also ends at its tag
# limit (100 by default, moto applies it too): machines carry a dozen tags each.
RESOURCES_PER_PAGE = 100
TAGS_PER_PAGE = 500


def tagged_resources(ctx: Context, key: str, values: Sequence[str], types: Sequence[str]) -> list[dict[str, Any]]:
    """The ``ResourceTagMappingList`` entries (``ResourceARN``, ``Tags``) of ``types`` tagged ``key`` in ``values``."""
    return (
        ctx.client("resourcegroupstaggingapi")
        .paginate(
            "get_resources",
            TagFilters=[{"Key": key, "Values": list(values)}],
            ResourceTypeFilters=list(types),
            ResourcesPerPage=RESOURCES_PER_PAGE,
            TagsPerPage=TAGS_PER_PAGE,
        )
        .get("ResourceTagMappingList", [])
    )


# What the collection finds of a cluster through the tagging API, by CAPA's owner tag: the preflight's existence
# check (VPC, subnets, NAT gateways, instances, EKS) and the status read-back's Elastic IPs, launch templates, load
# balancers, target groups, bootstrap secrets and parameters; the load balancer tier's tags come from it too. One
# question for all, so a run that changes nothing asks it once (kernel/shared_reads.py); each reader picks the
# kinds it counts from the ARNs.
OWNED_TYPES = (
    "ec2:vpc",
    "ec2:subnet",
    "ec2:natgateway",
    "ec2:elastic-ip",
    "ec2:launch-template",
    "ec2:instance",
    "eks:cluster",
    "eks:nodegroup",
    "elasticloadbalancing:loadbalancer",
    "elasticloadbalancing:targetgroup",
    "secretsmanager:secret",
    "ssm:parameter",
)


def cluster_owned(ctx: Context) -> list[dict[str, Any]]:
    """Every resource of :data:`OWNED_TYPES` the cluster owns (all pages)."""
    return tagged_resources(ctx, cluster_tag_key(ctx.cluster), [OWNED], OWNED_TYPES)
