"""The benchmark's moto server: tools/moto_server.py (with its request counter) plus two ELB fixes.

Both let the peer playbook's ``amazon.aws.elb_classic_lb`` run on moto; neither changes what our modules see
(they never describe the attributes of a missing ELB and always configure a health check).

1. moto 5.2.5 answers ``elb:DescribeLoadBalancerAttributes`` for a load balancer that does not exist with
HTTP 500 (``AttributeError`` on ``None``); AWS answers ``LoadBalancerNotFound``, which
``amazon.aws.elb_classic_lb`` expects before it creates a load balancer.  Without the fix the peer
playbook cannot create its ELB on moto.

2. AWS gives every new classic ELB a default health check (``TCP:<instance port>``, interval 30, timeout 5,
   unhealthy 2, healthy 10) and always returns ``HealthCheck``; moto leaves it out until
   ``ConfigureHealthCheck``, and ``elb_classic_lb`` fails with ``KeyError: 'HealthCheck'``.

3. moto 5.2.5 does not implement ``autoscaling:DisableMetricsCollection`` (HTTP 500); AWS answers it.
   ``amazon.aws.autoscaling_group`` calls it on every run over an existing group without ``metrics_collection``,
   so without the fix the peer's second run fails on its first pool.

4. moto 5.2.5 does not implement ``ec2:DeleteLaunchTemplateVersions`` (HTTP 500), which
   ``amazon.aws.ec2_launch_template`` with ``state: absent`` calls for every version but the default before it
   deletes the template.  The fix answers that the versions were deleted and leaves them in moto's list (moto
   numbers versions by list position) until ``DeleteLaunchTemplate`` removes the template with all of them.

5. AWS gives every managed node group an ``updateConfig`` (``maxUnavailable: 1``) and returns it; moto leaves it out
   unless the create names one, and ``community.aws.eks_nodegroup`` fails with ``KeyError: 'updateConfig'`` on its
   second run over the node group.

6. AWS tags managed node groups and Fargate profiles and answers ``eks:ListTagsForResource`` / ``TagResource`` /
   ``UntagResource`` for their ARNs; moto only knows cluster ARNs (``NotFoundException``), and
   ``community.aws.eks_nodegroup`` fails its second run ("Unable to list or compare tags for Nodegroup").  The fix
   looks the ARN up among the clusters' node groups and Fargate profiles too.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import moto_server  # noqa: E402
from moto.autoscaling import responses as autoscaling_responses  # noqa: E402
from moto.ec2.responses import launch_templates as lt_responses  # noqa: E402
from moto.eks import models as eks_models  # noqa: E402
from moto.elb import models as elb_models  # noqa: E402
from moto.elb import responses as elb_responses  # noqa: E402
from moto.elb.exceptions import LoadBalancerNotFoundError  # noqa: E402


def _fix_missing_elb_attributes() -> None:
    original = elb_responses.ELBResponse.describe_load_balancer_attributes

    def describe_load_balancer_attributes(self):  # type: ignore[no-untyped-def]
        name = self._get_param("LoadBalancerName")
        if self.elb_backend.get_load_balancer(name) is None:
            raise LoadBalancerNotFoundError(name)
        return original(self)

    elb_responses.ELBResponse.describe_load_balancer_attributes = describe_load_balancer_attributes


def _fix_default_health_check() -> None:
    original = elb_models.LoadBalancer.__init__

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: N807
        original(self, *args, **kwargs)
        if self.health_check is None and self.listeners:
            port = self.listeners[0].instance_port
            self.health_check = elb_models.FakeHealthCheck(
                timeout=5, healthy_threshold=10, unhealthy_threshold=2, interval=30, target=f"TCP:{port}"
            )

    elb_models.LoadBalancer.__init__ = __init__


def _fix_disable_metrics_collection() -> None:
    def disable_metrics_collection(self):  # type: ignore[no-untyped-def]
        name = self._get_param("AutoScalingGroupName")
        group = self.autoscaling_backend.describe_auto_scaling_groups([name])[0]
        # Metrics left out means all of them, as on AWS.
        gone = set(self._get_param("Metrics") or group.metrics or [])
        group.metrics = [m for m in group.metrics or [] if m not in gone]
        return autoscaling_responses.EmptyResult()

    autoscaling_responses.AutoScalingResponse.disable_metrics_collection = disable_metrics_collection


def _fix_delete_launch_template_versions() -> None:
    def delete_launch_template_versions(self):  # type: ignore[no-untyped-def]
        name = self._get_param("LaunchTemplateName")
        tid = self._get_param("LaunchTemplateId")
        template = (
            self.ec2_backend.get_launch_template(tid) if tid else self.ec2_backend.get_launch_template_by_name(name)
        )
        numbers = [int(v) for v in self._get_param("Versions", [])]
        deleted = [
            {"LaunchTemplateId": template.id, "LaunchTemplateName": template.name, "VersionNumber": n} for n in numbers
        ]
        return lt_responses.ActionResult(
            {"SuccessfullyDeletedLaunchTemplateVersions": deleted, "UnsuccessfullyDeletedLaunchTemplateVersions": []}
        )

    lt_responses.LaunchTemplates.delete_launch_template_versions = delete_launch_template_versions


def _fix_default_update_config() -> None:
    original = eks_models.Nodegroup.__init__

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: N807
        original(self, *args, **kwargs)
        if not self.update_config:
            self.update_config = {"maxUnavailable": 1}

    eks_models.Nodegroup.__init__ = __init__


def _eks_taggable(backend, resource_arn):  # type: ignore[no-untyped-def]
    """The cluster, node group or Fargate profile with this ARN, or None."""
    for cluster in backend.clusters.values():
        if cluster.arn == resource_arn:
            return cluster
        for group in cluster.nodegroups.values():
            if group.arn == resource_arn:
                return group
        for profile in cluster.fargate_profiles.values():
            if profile.fargate_profile_arn == resource_arn:
                return profile
    return None


def _fix_eks_child_tags() -> None:
    backend_cls = eks_models.EKSBackend
    originals = {
        name: getattr(backend_cls, name) for name in ("tag_resource", "untag_resource", "list_tags_for_resource")
    }

    def tag_resource(self, resource_arn, tags):  # type: ignore[no-untyped-def]
        found = _eks_taggable(self, resource_arn)
        if found is None:
            return originals["tag_resource"](self, resource_arn, tags)
        found.tags = {**(found.tags or {}), **tags}
        return None

    def untag_resource(self, resource_arn, tag_keys):  # type: ignore[no-untyped-def]
        found = _eks_taggable(self, resource_arn)
        if found is None:
            return originals["untag_resource"](self, resource_arn, tag_keys)
        found.tags = {k: v for k, v in (found.tags or {}).items() if k not in set(tag_keys)}
        return None

    def list_tags_for_resource(self, resource_arn):  # type: ignore[no-untyped-def]
        found = _eks_taggable(self, resource_arn)
        if found is None:
            return originals["list_tags_for_resource"](self, resource_arn)
        return found.tags or {}

    backend_cls.tag_resource = tag_resource
    backend_cls.untag_resource = untag_resource
    backend_cls.list_tags_for_resource = list_tags_for_resource


if __name__ == "__main__":
    _fix_eks_child_tags()
    _fix_missing_elb_attributes()
    _fix_default_health_check()
    _fix_disable_metrics_collection()
    _fix_delete_launch_template_versions()
    _fix_default_update_config()
    sys.exit(moto_server.main())
