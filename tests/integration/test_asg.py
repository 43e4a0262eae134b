# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_asg against the moto server, checked with boto3.

``test_pool_life`` runs the module through ansible-playbook: check mode from an empty account, create, no-op,
bootstrap-data-only change, externally managed replicas, mixed instances and spot pools, deletion.

moto 5.2.5 implements neither the instance refresh APIs (``StartInstanceRefresh``, ``DescribeInstanceRefreshes``,
``CancelInstanceRefresh``) nor ``DeleteLaunchTemplateVersions``. The paths that need them
(``test_instance_type_change_refreshes_once_and_prunes_old_versions``) run the tier in-process against the same
moto server, with exactly those operations answered by ``botocore.stub.Stubber`` on a client of the same session:
everything else (templates, versions, group, secrets) is real moto state, and the Stubber fails the test on any
refresh or prune call it was not told to expect (e.g. a refresh after a bootstrap-only change).
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import common_argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession, RetryingClient
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import asg
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.asg import AsgTier

CLUSTER = "asg-it"
MODULE = "clusterapi.aws.capa_asg"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
HASH_TAG = "sigs.k8s.io/cluster-api-provider-aws/bootstrap-data-hash"
SECRET_CERT = "-----BEGIN CERTIFICATE-----\n      MIIBfake\n      -----END CERTIFICATE-----"
SECRET_TOKEN = "abcdef.0123456789abcdef"
CLOUD_CONFIG = f"#cloud-config\nwrite_files:\n  - path: /etc/ca.crt\n    content: |\n      {SECRET_CERT}\n"
CLOUD_CONFIG += f"runcmd:\n  - kubeadm join --token {SECRET_TOKEN}\n"
NO_OP_CALLS = {
    "autoscaling:DescribeAutoScalingGroups": 1,
    "autoscaling:DescribeLifecycleHooks": 1,
    "ec2:DescribeImages": 1,
    "ec2:DescribeInstanceTypes": 1,
    "ec2:DescribeLaunchTemplateVersions": 1,
    "ec2:DescribeLaunchTemplates": 1,
}


def _tags(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


def make_subnets(aws) -> list[dict[str, Any]]:
    """A VPC with a public and a private subnet in two zones, shaped as capa_subnet returns them (made with boto3:
    the pool only needs ids and zones, and this keeps the file fast)."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = []
    for index, (zone, public) in enumerate(
        [("us-east-1a", True), ("us-east-1b", True), ("us-east-1a", False), ("us-east-1b", False)]
    ):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{index * 16}.0/20", AvailabilityZone=zone)["Subnet"]
        subnets.append({"id": subnet["SubnetId"], "availability_zone": zone, "is_public": public, "extra": "ignored"})
    return subnets


def args(subnets: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "name": "pool-0",
        "subnets": subnets,
        "min_size": 1,
        "max_size": 3,
        "desired_capacity": 2,
        "instance_type": "t3.large",
        "kubernetes_version": "v1.31.2",
        "bootstrap": {"type": "raw", "data": CLOUD_CONFIG},
        "wait_timeout": 60,
    }
    base.update(extra)
    return base


def run_ok(run_module, module_args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = run_module(MODULE, module_args, **kw)
    assert not result.get("failed"), {k: result.get(k) for k in ("msg", "plan", "api_calls", "error")}
    return result


def versions(aws, name: str) -> dict[int, dict[str, Any]]:
    answer = aws.client("ec2").describe_launch_template_versions(LaunchTemplateName=name)
    return {v["VersionNumber"]: v for v in answer["LaunchTemplateVersions"]}


def group(aws, name: str) -> dict[str, Any] | None:
    found = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return found[0] if found else None


def assert_no_secret_in_user_data(aws, name: str) -> None:
    for version in versions(aws, name).values():
        text = base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode()
        assert "cloud-boothook" in text and "get-secret-value" in text
        assert "delete-secret" not in text  # shared by every instance of the version
        for secret in ("BEGIN CERTIFICATE", "PRIVATE KEY", SECRET_TOKEN, "kubeadm join"):
            assert secret not in text


def secret_document(aws, version: dict[str, Any]) -> str:
    tags = _tags(version["LaunchTemplateData"]["TagSpecifications"][0]["Tags"])
    backend, prefix, count = tags["clusterapi.aws/bootstrap-data"].split(":")
    assert backend == "secrets-manager"
    sm = aws.client("secretsmanager")
    packed = b"".join(sm.get_secret_value(SecretId=f"{prefix}-{i}")["SecretBinary"] for i in range(int(count)))
    return gzip.decompress(packed).decode()


def owned_secrets(aws) -> list[str]:
    listed = aws.client("secretsmanager").list_secrets(Filters=[{"Key": "tag-key", "Values": [OWNER]}])
    return [s["Name"] for s in listed["SecretList"]]


# through ansible-playbook ------------------------------------------------------------------------------------------
def test_pool_life(aws, run_module):
    subnets = make_subnets(aws)
    private = sorted(s["id"] for s in subnets if not s["is_public"])

    # check mode from an empty account: the whole plan, nothing changed, placeholders
    aws.reset_requests()
    planned = run_ok(run_module, args(subnets), check=True)
    assert aws.mutating_requests() == []
    assert planned["changed"]
    assert [p["call"] for p in planned["plan"]] == [
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplate",
        "autoscaling:CreateAutoScalingGroup",
    ]
    assert planned["launch_template"]["id"] == "planned:launch-template:pool-0"
    assert planned["auto_scaling_group"]["arn"] == "planned:auto-scaling-group:pool-0"

    created = run_ok(run_module, args(subnets))
    assert created["changed"] and created["launch_template"]["latest_version"] == 1
    assert created["conditions"]["ASGReady"]["status"] and created["conditions"]["LaunchTemplateReady"]["status"]
    asg = group(aws, "pool-0")
    assert asg["LaunchTemplate"]["Version"] == "$Latest" and asg["LaunchTemplate"]["LaunchTemplateName"] == "pool-0"
    assert sorted(asg["VPCZoneIdentifier"].split(",")) == private
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"], asg["DefaultCooldown"]) == (1, 3, 2, 300)
    tags = {t["Key"]: t for t in asg["Tags"]}
    assert tags[OWNER]["Value"] == "owned" and tags[f"kubernetes.io/cluster/{CLUSTER}"]["Value"] == "owned"
    assert not any(t["PropagateAtLaunch"] for t in tags.values())
    first = versions(aws, "pool-0")[1]["LaunchTemplateData"]
    assert first["MetadataOptions"]["HttpTokens"] == "required"
    instance_tags = _tags(first["TagSpecifications"][0]["Tags"])
    assert instance_tags["clusterapi.aws/machine-group"] == "pool-0" and instance_tags[OWNER] == "owned"
    assert len(instance_tags[HASH_TAG]) == 64
    assert {i["InstanceId"] for i in asg["Instances"]} == {i["id"] for i in created["auto_scaling_group"]["instances"]}

    # unchanged spec: no new version, no mutating request, the documented reads
    aws.reset_requests()
    again = run_ok(run_module, args(subnets))
    assert not again["changed"] and again["plan"] == [] and aws.mutating_requests() == []
    assert again["api_calls"] == NO_OP_CALLS
    assert sorted(versions(aws, "pool-0")) == [1]

    # externally managed replicas: AWS's desired capacity stays and is reported (scaled up while only version 1
    # exists: moto 5.2.5 crashes launching from a version made by CreateLaunchTemplateVersion with user data)
    aws.client("autoscaling").set_desired_capacity(AutoScalingGroupName="pool-0", DesiredCapacity=3)
    data_args = args(subnets)
    external = run_ok(run_module, {**data_args, "externally_managed_replicas": True})
    assert not external["changed"], external["plan"]
    assert external["auto_scaling_group"]["desired_capacity"] == 3 and group(aws, "pool-0")["DesiredCapacity"] == 3
    restored = run_ok(run_module, data_args)
    assert [p["call"] for p in restored["plan"]] == ["autoscaling:UpdateAutoScalingGroup"]
    assert group(aws, "pool-0")["DesiredCapacity"] == 2 and restored["auto_scaling_group"]["desired_capacity"] == 2

    # bootstrap data only: one new version, no instance refresh
    changed_data = CLOUD_CONFIG + "  - echo second\n"
    bootstrap_only = run_ok(run_module, args(subnets, bootstrap={"type": "raw", "data": changed_data}))
    calls = [p["call"] for p in bootstrap_only["plan"]]
    assert calls == ["secretsmanager:CreateSecret", "ec2:CreateLaunchTemplateVersion"]
    assert not any("InstanceRefresh" in c for c in bootstrap_only["api_calls"])
    assert bootstrap_only["instance_refresh"] is None
    found = versions(aws, "pool-0")
    assert sorted(found) == [1, 2]
    assert secret_document(aws, found[2]) == changed_data
    assert_no_secret_in_user_data(aws, "pool-0")

    # mixed instances and plain spot land in AWS exactly as specified
    mixed = {
        "instances_distribution": {
            "on_demand_base_capacity": 1,
            "on_demand_percentage_above_base_capacity": 25,
            "spot_allocation_strategy": "price-capacity-optimized",
        },
        "overrides": [{"instance_type": "m5.large"}, {"instance_type": "m6i.large"}],
    }
    mixed_result = run_ok(
        run_module,
        args(subnets, name="pool-mixed", min_size=0, desired_capacity=0, mixed_instances_policy=mixed),
    )
    assert group(aws, "pool-mixed")["MixedInstancesPolicy"] == {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {
                "LaunchTemplateId": mixed_result["launch_template"]["id"],
                "LaunchTemplateName": "pool-mixed",
                "Version": "$Latest",
            },
            "Overrides": [{"InstanceType": "m5.large"}, {"InstanceType": "m6i.large"}],
        },
        "InstancesDistribution": {
            "OnDemandAllocationStrategy": "prioritized",
            "OnDemandBaseCapacity": 1,
            "OnDemandPercentageAboveBaseCapacity": 25,
            "SpotAllocationStrategy": "price-capacity-optimized",
        },
    }
    assert mixed_result["auto_scaling_group"]["mixed_instances_policy"]["overrides"][1] == {
        "instance_type": "m6i.large"
    }
    # spot in the distribution: the drain hook is on by default
    hooks = aws.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName="pool-mixed")["LifecycleHooks"]
    assert [(h["LifecycleTransition"], h["DefaultResult"], h["HeartbeatTimeout"]) for h in hooks] == [
        ("autoscaling:EC2_INSTANCE_TERMINATING", "CONTINUE", 300)
    ]
    run_ok(
        run_module,
        args(
            subnets,
            name="pool-spot",
            min_size=0,
            desired_capacity=0,
            spot_market_options={"max_price": "0.05"},
            suspended_processes=["AZRebalance"],
        ),
    )
    spot_data = versions(aws, "pool-spot")[1]["LaunchTemplateData"]
    assert spot_data["InstanceMarketOptions"] == {
        "MarketType": "spot",
        "SpotOptions": {
            "SpotInstanceType": "one-time",
            "InstanceInterruptionBehavior": "terminate",
            "MaxPrice": "0.05",
        },
    }
    assert [p["ProcessName"] for p in group(aws, "pool-spot")["SuspendedProcesses"]] == ["AZRebalance"]

    # delete: no group, template, instance or secret of the cluster remains
    for name in ("pool-0", "pool-mixed", "pool-spot"):
        gone = run_ok(run_module, args(subnets, name=name, state="absent"))
        assert gone["changed"] and gone["auto_scaling_group"] is None and gone["launch_template"] is None
        assert group(aws, name) is None
    assert aws.client("ec2").describe_launch_templates()["LaunchTemplates"] == []
    reservations = aws.client("ec2").describe_instances()["Reservations"]
    assert {i["State"]["Name"] for r in reservations for i in r["Instances"]} <= {"terminated"}
    assert owned_secrets(aws) == []
    aws.reset_requests()
    assert not run_ok(run_module, args(subnets, state="absent"))["changed"]
    assert aws.mutating_requests() == []


# in-process, with Stubber for what moto lacks ----------------------------------------------------------------------
class _Split:
    """A botocore client whose ``methods`` go to ``stubbed`` (a Stubber-driven client) and the rest to moto."""

    def __init__(self, real: Any, stubbed: Any, methods: set[str]) -> None:
        self._real, self._stubbed, self._methods = real, stubbed, methods

    @property
    def meta(self) -> Any:
        return self._real.meta

    def can_paginate(self, method: str) -> bool:
        return method not in self._methods and self._real.can_paginate(method)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stubbed if name in self._methods else self._real, name)


@pytest.fixture
def pool_session(aws):
    """An AwsSession on the moto server whose refresh and prune operations are answered by Stubbers."""
    session = AwsSession("us-east-1", aws.url, {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
    stubs = {}
    for service, methods in (
        ("autoscaling", {"describe_instance_refreshes", "cancel_instance_refresh", "start_instance_refresh"}),
        ("ec2", {"delete_launch_template_versions"}),
    ):
        real = session.client(service).raw
        stubbed = session._session.client(service, region_name="us-east-1", endpoint_url=aws.url)
        stubs[service] = Stubber(stubbed)
        stubs[service].activate()
        session._clients[service] = RetryingClient(_Split(real, stubbed, methods), retries=1)
    yield session, stubs
    for stub in stubs.values():
        stub.deactivate()


def reconcile(session: AwsSession, params: dict[str, Any]) -> tuple[Context, dict[str, Any]]:
    """The tier as capa_asg runs it: parameters validated (defaults filled) by its argument spec, parsed once."""
    argument_spec = {**common_argument_spec(), **asg.module_argument_spec()}
    validated = ArgumentSpecValidator(argument_spec).validate({"cluster_name": CLUSTER, **params})
    assert not validated.error_messages, validated.error_messages
    ctx = Context(session=session, cluster=CLUSTER, check_mode=False, wait_timeout=30)
    tier = AsgTier()
    spec = tier.parse(validated.validated_parameters)
    tier.validate(spec, "us-east-1")
    return ctx, tier.reconcile(ctx, spec).after


def calls(ctx: Context) -> list[str]:
    return [p.call for p in ctx.ops.plan]


def test_instance_type_change_refreshes_once_and_prunes_old_versions(aws, pool_session):
    session, stubs = pool_session
    refreshes, prunes = stubs["autoscaling"], stubs["ec2"]
    pool = {
        k: v
        for k, v in args(
            make_subnets(aws), desired_capacity=1, max_size=1, refresh_preferences={"instance_warmup": 60}
        ).items()
        if k != "cluster_name"
    }
    ctx, result = reconcile(session, pool)
    assert "ec2:CreateLaunchTemplate" in calls(ctx) and result["instance_refresh"] is None

    # a refresh in progress is cancelled first, then exactly one new version and one refresh
    refreshes.add_response(
        "describe_instance_refreshes",
        {"InstanceRefreshes": [{"InstanceRefreshId": "r-0", "AutoScalingGroupName": "pool-0", "Status": "InProgress"}]},
        {"AutoScalingGroupName": "pool-0"},
    )
    refreshes.add_response("cancel_instance_refresh", {"InstanceRefreshId": "r-0"}, {"AutoScalingGroupName": "pool-0"})
    refreshes.add_response(
        "describe_instance_refreshes",
        {"InstanceRefreshes": [{"InstanceRefreshId": "r-0", "AutoScalingGroupName": "pool-0", "Status": "Cancelled"}]},
        {"AutoScalingGroupName": "pool-0"},
    )
    start = {
        "AutoScalingGroupName": "pool-0",
        "Strategy": "Rolling",
        "Preferences": {"MinHealthyPercentage": 90, "InstanceWarmup": 60},
    }
    refreshes.add_response("start_instance_refresh", {"InstanceRefreshId": "r-1"}, start)
    ctx, result = reconcile(session, {**pool, "instance_type": "t3.small"})
    refreshes.assert_no_pending_responses()
    assert calls(ctx) == [
        "autoscaling:CancelInstanceRefresh",
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplateVersion",
        "autoscaling:StartInstanceRefresh",
    ]
    assert result["instance_refresh"] == {"id": "r-1", "status": "Pending"}
    assert result["conditions"]["InstanceRefreshStarted"] == {"status": True, "reason": ""}
    found = versions(aws, "pool-0")
    assert sorted(found) == [1, 2] and found[2]["LaunchTemplateData"]["InstanceType"] == "t3.small"

    # bootstrap data only: a new version and no refresh call at all (the Stubber has none queued)
    ctx, result = reconcile(session, {**pool, "instance_type": "t3.small", "bootstrap": {"type": "raw", "data": "x"}})
    assert calls(ctx) == ["secretsmanager:CreateSecret", "ec2:CreateLaunchTemplateVersion"]
    assert result["conditions"]["InstanceRefreshStarted"]["reason"] == "InstanceRefreshNotNeeded"

    # a fourth version prunes the second (not the default, the latest or the one before) and its entries
    second_entries = secret_document(aws, found[2])
    assert second_entries == CLOUD_CONFIG
    second_ref = _tags(found[2]["LaunchTemplateData"]["TagSpecifications"][0]["Tags"])["clusterapi.aws/bootstrap-data"]
    refreshes.add_response("describe_instance_refreshes", {"InstanceRefreshes": []}, {"AutoScalingGroupName": "pool-0"})
    refreshes.add_response("start_instance_refresh", {"InstanceRefreshId": "r-2"}, start)
    template_id = result["launch_template"]["id"]
    prunes.add_response(
        "delete_launch_template_versions",
        {"SuccessfullyDeletedLaunchTemplateVersions": [{"LaunchTemplateId": template_id, "VersionNumber": 2}]},
        {"LaunchTemplateId": template_id, "Versions": ["2"]},
    )
    ctx, result = reconcile(session, {**pool, "instance_type": "t3.medium", "bootstrap": {"type": "raw", "data": "x"}})
    refreshes.assert_no_pending_responses()
    prunes.assert_no_pending_responses()
    assert calls(ctx) == [
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:DeleteLaunchTemplateVersions",
        "secretsmanager:DeleteSecret",
        "autoscaling:StartInstanceRefresh",
    ]
    assert result["launch_template"]["versions"] == [1, 3, 4]
    assert f"{second_ref.split(':')[1]}-0" not in owned_secrets(aws)

    # with refresh disabled: a new version, pruning, and no refresh call. Version 2 is still in moto (the Stubber
    # answered its deletion), so it is pruned again with version 3: a leftover is never kept.
    prunes.add_response(
        "delete_launch_template_versions",
        {"SuccessfullyDeletedLaunchTemplateVersions": [{"LaunchTemplateId": template_id, "VersionNumber": 3}]},
        {"LaunchTemplateId": template_id, "Versions": ["2", "3"]},
    )
    disabled = {"disable": True, "min_healthy_percentage": 90}
    bootstrap = {"type": "raw", "data": "x"}
    ctx, result = reconcile(
        session, {**pool, "instance_type": "t3.large", "bootstrap": bootstrap, "refresh_preferences": disabled}
    )
    prunes.assert_no_pending_responses()
    assert "autoscaling:StartInstanceRefresh" not in calls(ctx) and "ec2:CreateLaunchTemplateVersion" in calls(ctx)
    assert result["conditions"]["InstanceRefreshStarted"]["reason"] == "InstanceRefreshDisabled"
    assert result["launch_template"]["versions"] == [1, 4, 5]


# the machine_pool role ---------------------------------------------------------------------------------------------
def test_machine_pool_role_present_noop_absent(aws, run_playbook, tmp_path):
    """The role for a cluster spec with one asg pool: kubeadm bootstrap from the PKI capa_kubeadm stored, the node and
    lb security groups, outputs in machine_pool_outputs; a second run changes nothing; absent removes it all."""
    subnets = make_subnets(aws)
    ec2 = aws.client("ec2")
    vpc_id = ec2.describe_subnets(SubnetIds=[subnets[0]["id"]])["Subnets"][0]["VpcId"]
    groups = {
        role: {
            "id": ec2.create_security_group(GroupName=f"{CLUSTER}-{role}", Description=role, VpcId=vpc_id)["GroupId"]
        }
        for role in ("node", "lb")
    }
    cluster = {
        "name": CLUSTER,
        "region": "us-east-1",
        "machine_pools": [{"name": "role-pool", "kind": "asg", "min_size": 0, "max_size": 2, "desired_capacity": 0}],
    }
    endpoint = {"host": "api.example.test", "port": 6443}
    playbook = tmp_path / "pool.yml"
    play = {
        "hosts": "localhost",
        "gather_facts": False,
        "connection": "local",
        "vars": {
            "capa_cluster": cluster,
            "network_outputs": {"subnets": subnets, "security_groups": groups},
            "control_plane_outputs": {"endpoint": endpoint},
        },
        "tasks": [
            {
                "name": "PKI",
                "clusterapi.aws.capa_kubeadm": {
                    "cluster_name": CLUSTER,
                    "region": "us-east-1",
                    "kubernetes_version": "v1.31.2",
                    "endpoint": endpoint,
                    "output_dir": str(tmp_path / "out"),
                },
            },
            {
                # The first machine runs kubeadm init; without a Kubernetes API to mint the pool's own token (nothing
                # answers at api.example.test) the pool's instances join with init's token, with a warning.
                "name": "Control plane",
                "clusterapi.aws.capa_instance": {
                    "cluster_name": CLUSTER,
                    "region": "us-east-1",
                    "name": "control-plane",
                    "role": "control-plane",
                    "replicas": 1,
                    "kubernetes_version": "v1.31.2",
                    "instance_type": "t3.large",
                    "subnets": subnets,
                    "security_group_ids": [groups["node"]["id"]],
                    "bootstrap": {"type": "kubeadm", "endpoint_host": endpoint["host"]},
                },
            },
            {"name": "Pools", "ansible.builtin.include_role": {"name": "clusterapi.aws.machine_pool"}},
            {"name": "Show", "ansible.builtin.debug": {"var": "machine_pool_outputs"}},
        ],
    }
    playbook.write_text(json.dumps([play]))
    first = run_playbook(playbook)
    assert any("auto scaling group pools" in t.name for t in first.changed_tasks), first.describe()
    asg = group(aws, "role-pool")
    assert asg is not None and (asg["MinSize"], asg["MaxSize"]) == (0, 2)
    data = versions(aws, "role-pool")[1]["LaunchTemplateData"]
    assert sorted(data["SecurityGroupIds"]) == sorted(g["id"] for g in groups.values())
    assert "BEGIN" not in base64.b64decode(data["UserData"]).decode()
    assert "kubeadm join" in secret_document(aws, versions(aws, "role-pool")[1])

    assert "join with kubeadm init's token" in first.stdout, first.describe()
    second = run_playbook(playbook)
    assert [t.name for t in second.changed_tasks if t.name != "PKI"] == [], second.describe()

    cluster["state"] = "absent"
    playbook.write_text(json.dumps([play]))
    run_playbook(playbook)
    assert group(aws, "role-pool") is None
    assert aws.client("ec2").describe_launch_templates()["LaunchTemplates"] == []
