# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_instance through ansible-playbook against the moto server, checked with boto3.

The network comes from capa_vpc, capa_subnet and capa_security_group (each run with run_module), so machines are
placed on exactly what those modules return. Rolling replacement bounds are checked by polling DescribeInstances
from a thread while the module runs, and again from the module's ordered plan.
"""

from __future__ import annotations

import base64
import gzip
import threading
import time
from typing import Any

import pytest

CLUSTER = "inst-it"
MODULE = "clusterapi.aws.capa_instance"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
GROUP_TAG = "clusterapi.aws/machine-group"
HASH_TAG = "clusterapi.aws/template-hash"
BOOTSTRAP_TAG = "clusterapi.aws/bootstrap-data"
CLOUD_CONFIG = "#cloud-config\nruncmd:\n  - echo secret-token-abc123 > /root/token\n"
LATEST_CAPA_AMI_X86 = "ami-b3b51f567c20d5e91"  # tools/moto_amis.json: newest v1.31.2 ubuntu-24.04 x86_64
LATEST_CANONICAL_X86 = "ami-a8c8ca57690b9c335"


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


def _ops(records: list[dict[str, str]]) -> list[str]:
    return [f"{r['service']}:{r['operation']}" for r in records]


def _instances(aws, group: str, states=("pending", "running")) -> list[dict[str, Any]]:
    pages = (
        aws.client("ec2")
        .get_paginator("describe_instances")
        .paginate(
            Filters=[
                {"Name": f"tag:{GROUP_TAG}", "Values": [group]},
                {"Name": "instance-state-name", "Values": list(states)},
            ]
        )
    )
    return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


@pytest.fixture
def network(build_network) -> dict[str, Any]:
    """A CAPA network (2 zones, public and private subnets, security groups) made by the collection's modules."""
    return build_network(CLUSTER)


def args(network: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "name": "md-0",
        "role": "node",
        "replicas": 2,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node"]["id"]],
        "bootstrap": {"type": "raw", "data": CLOUD_CONFIG},
        "root_volume": {"size": 40},
        "wait_timeout": 60,
    }
    base.update(extra)
    return base


def run_ok(run_module, module_args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = run_module(MODULE, module_args, **kw)
    assert not result.get("failed"), result
    return result


# create, no-op ------------------------------------------------------------------------------------------------
def test_workers_spread_tagged_imdsv2_encrypted_and_no_secret_in_user_data(aws, run_module, network):
    result = run_ok(run_module, args(network))
    assert result["changed"]
    assert result["ami_id"] == LATEST_CAPA_AMI_X86
    assert result["replicas"] == {"desired": 2, "ready": 2, "updated": 2}
    machines = result["machines"]
    assert len(machines) == 2
    private = {s["availability_zone"]: s["id"] for s in network["subnets"] if not s["is_public"]}
    assert sorted(m["availability_zone"] for m in machines) == sorted(private)
    assert {m["subnet_id"] for m in machines} == set(private.values())
    for m in machines:
        assert m["name"].startswith(f"{CLUSTER}-md-0-") and len(m["name"]) == len(f"{CLUSTER}-md-0-") + 5
        assert m["status"] == {"InstanceReady": {"status": True, "reason": ""}}
        assert m["template_hash"] == result["template_hash"]
    runs = [p for p in result["plan"] if p["call"] == "ec2:RunInstances"]
    assert len(runs) == 2

    ec2 = aws.client("ec2")
    sm = aws.client("secretsmanager")
    for instance in _instances(aws, "md-0"):
        tags = _tags(instance["Tags"])
        name = tags["Name"]
        assert tags[OWNER] == "owned" and tags[ROLE] == "node"
        assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
        assert tags["MachineName"] == f"{CLUSTER}/{name}"
        assert tags[GROUP_TAG] == "md-0" and tags[HASH_TAG] == result["template_hash"]
        assert instance["MetadataOptions"]["HttpTokens"] == "required"
        assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
        assert instance["ImageId"] == LATEST_CAPA_AMI_X86
        assert {g["GroupId"] for g in instance["SecurityGroups"]} == {network["groups"]["node"]["id"]}
        volume_id = instance["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
        volume = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
        assert volume["Encrypted"] and volume["Size"] == 40
        assert _tags(volume.get("Tags"))["Name"] == name

        user_data = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        text = base64.b64decode(user_data["UserData"]["Value"]).decode()
        assert "multipart/mixed" in text and "text/cloud-boothook" in text and "file:///etc/secret-userdata.txt" in text
        assert "secret-token-abc123" not in text and "runcmd" not in text

        backend, prefix, count = tags[BOOTSTRAP_TAG].split(":")
        assert backend == "secrets-manager" and prefix.startswith("aws.cluster.x-k8s.io/") and count == "1"
        assert f'PREFIX="{prefix}"' in text
        secret = sm.get_secret_value(SecretId=f"{prefix}-0")
        assert gzip.decompress(secret["SecretBinary"]).decode() == CLOUD_CONFIG
        secret_tags = _tags(sm.describe_secret(SecretId=f"{prefix}-0")["Tags"])
        assert secret_tags["Name"] == name and secret_tags[OWNER] == "owned"


def _noop_calls(aws, run_module, network, replicas: int) -> dict[str, int]:
    run_ok(run_module, args(network, replicas=replicas))
    aws.reset_requests()
    second = run_ok(run_module, args(network, replicas=replicas))
    assert not second["changed"] and second["plan"] == []
    assert aws.mutating_requests() == []
    assert len(second["machines"]) == replicas
    return second["api_calls"]


def test_second_run_only_describes_and_costs_the_same_for_2_and_6_machines(aws, run_module, network):
    two = _noop_calls(aws, run_module, network, 2)
    six = _noop_calls(aws, run_module, network, 6)
    assert (
        two
        == six
        == {
            # No DescribeImages: the machines keep the image they run (instance.kept_image); no
            # DescribeInstanceTypes either.
            "ec2:DescribeInstances": 1,
            "ec2:DescribeInstanceStatus": 1,  # the health check (self-healing)
        }
    )


def test_ssm_backend_stores_securestring_chunks(aws, run_module, network):
    result = run_ok(
        run_module,
        args(network, replicas=1, bootstrap={"type": "raw", "data": CLOUD_CONFIG, "backend": "ssm-parameter-store"}),
    )
    instance = _instances(aws, "md-0")[0]
    backend, prefix, count = _tags(instance["Tags"])[BOOTSTRAP_TAG].split(":")
    assert backend == "ssm-parameter-store" and prefix.startswith("/cluster.x-k8s.io/") and count == "1"
    parameter = aws.client("ssm").get_parameter(Name=f"{prefix}/0", WithDecryption=True)["Parameter"]
    assert parameter["Type"] == "SecureString"
    assert gzip.decompress(base64.b64decode(parameter["Value"])).decode() == CLOUD_CONFIG
    assert [p["call"] for p in result["plan"]] == ["ssm:PutParameter", "ec2:RunInstances"]

    run_ok(run_module, args(network, state="absent"))
    assert aws.client("ssm").describe_parameters()["Parameters"] == []


# scaling and deletion policy ----------------------------------------------------------------------------------
def _secret_names(aws) -> set[str]:
    return {s["Name"] for s in aws.client("secretsmanager").list_secrets()["SecretList"]}


def _bootstrap_secrets(instances: list[dict[str, Any]]) -> set[str]:
    names = set()
    for instance in instances:
        backend, prefix, count = _tags(instance["Tags"])[BOOTSTRAP_TAG].split(":")
        names.update(f"{prefix}-{i}" for i in range(int(count)))
    return names


def test_scale_out_and_in_with_newest_and_oldest(aws, run_module, network):
    first = run_ok(run_module, args(network, replicas=2))
    batch1 = {m["id"] for m in first["machines"]}
    time.sleep(1.1)  # launch times have one-second resolution
    grown = run_ok(run_module, args(network, replicas=5))
    assert grown["replicas"] == {"desired": 5, "ready": 5, "updated": 5}
    batch2 = {m["id"] for m in grown["machines"]} - batch1
    assert len(batch2) == 3 and [p["call"] for p in grown["plan"]].count("ec2:RunInstances") == 3
    zones = sorted(m["availability_zone"] for m in grown["machines"])
    assert zones.count(zones[0]) in (2, 3)  # 5 machines over 2 zones: 3 + 2

    newest = run_ok(run_module, args(network, replicas=3, rollout={"deletion_policy": "Newest"}))
    kept = {m["id"] for m in newest["machines"]}
    assert len(kept) == 3 and batch1 <= kept and len(kept & batch2) == 1
    assert {i["InstanceId"] for i in _instances(aws, "md-0")} == kept
    assert _secret_names(aws) == _bootstrap_secrets(_instances(aws, "md-0"))  # the removed machines' entries went

    oldest = run_ok(run_module, args(network, replicas=1, rollout={"deletion_policy": "Oldest"}))
    assert {m["id"] for m in oldest["machines"]} == kept & batch2
    assert {i["InstanceId"] for i in _instances(aws, "md-0")} == kept & batch2
    assert _secret_names(aws) == _bootstrap_secrets(_instances(aws, "md-0"))
    terminations = [p for p in oldest["plan"] if p["call"] == "ec2:TerminateInstances"]
    assert len(terminations) == 1  # both outdated-free removals in one request


# rolling replacement ------------------------------------------------------------------------------------------
class Poller(threading.Thread):
    """Counts the group's pending+running and running instances as often as it can while a run goes on."""

    def __init__(self, aws, group: str) -> None:
        super().__init__(daemon=True)
        self.ec2 = aws.client("ec2")
        self.group = group
        self.samples: list[tuple[int, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            reservations = self.ec2.describe_instances(
                Filters=[
                    {"Name": f"tag:{GROUP_TAG}", "Values": [self.group]},
                    {"Name": "instance-state-name", "Values": ["pending", "running"]},
                ]
            )["Reservations"]
            states = [i["State"]["Name"] for r in reservations for i in r["Instances"]]
            self.samples.append((len(states), states.count("running")))
            time.sleep(0.02)


def _replay(plan: list[dict[str, str]], start: int) -> list[int]:
    """Machine count after each launch/termination of a plan (terminations may name several machines)."""
    counts, total = [], start
    for p in plan:
        if p["call"] == "ec2:RunInstances":
            total += 1
        elif p["call"] == "ec2:TerminateInstances":
            total -= len(p["resource"].split(", "))
        counts.append(total)
    return counts


@pytest.mark.parametrize("surge, unavailable", [(1, 0), (0, 1)])
def test_instance_type_change_replaces_all_within_surge_and_unavailable(aws, run_module, network, surge, unavailable):
    rollout = {"max_surge": surge, "max_unavailable": unavailable}
    first = run_ok(run_module, args(network, replicas=3, rollout=rollout))
    old_ids = {m["id"] for m in first["machines"]}
    poller = Poller(aws, "md-0")
    poller.start()
    try:
        result = run_ok(run_module, args(network, replicas=3, rollout=rollout, instance_type="t3.xlarge"))
    finally:
        poller.stop.set()
        poller.join()
    assert result["changed"] and result["template_hash"] != first["template_hash"]
    assert result["replicas"] == {"desired": 3, "ready": 3, "updated": 3}
    final = _instances(aws, "md-0")
    assert len(final) == 3 and not ({i["InstanceId"] for i in final} & old_ids)
    assert {i["InstanceType"] for i in final} == {"t3.xlarge"}
    # What AWS showed whenever the poller looked (how often depends on the machine's load: the module runs in
    # about a second), then every step of the plan replayed exactly.
    assert poller.samples
    assert max(sample[0] for sample in poller.samples) <= 3 + surge, poller.samples
    assert min(sample[1] for sample in poller.samples) >= 3 - unavailable, poller.samples
    counts = _replay(result["plan"], 3)
    assert max(counts) <= 3 + surge and min(counts) >= 3 - unavailable
    assert [p["call"] for p in result["plan"]].count("ec2:RunInstances") == 3


def test_wait_false_makes_one_step(aws, run_module, network):
    run_ok(run_module, args(network, replicas=2))
    step = run_ok(run_module, args(network, replicas=2, instance_type="t3.xlarge", wait=False))
    assert [p["call"] for p in step["plan"]] == ["secretsmanager:CreateSecret", "ec2:RunInstances"]
    assert step["replicas"]["updated"] == 1


def test_initialize_launches_only_a_first_machine_and_leaves_a_group_that_has_machines(aws, run_module, network):
    """``initialize`` (the control_plane role's first step on a new cluster): an empty group gets one machine
    whatever ``replicas`` says; a group with machines - even fewer than ``replicas`` - is left as it is, one
    DescribeInstances and nothing else, so the full reconcile that follows is the one that grows it."""
    first = run_ok(run_module, args(network, replicas=3, initialize=True))
    assert first["changed"] and [p["call"] for p in first["plan"]] == [
        "secretsmanager:CreateSecret",
        "ec2:RunInstances",
    ]
    assert len(_instances(aws, "md-0")) == 1
    aws.reset_requests()
    again = run_ok(run_module, args(network, replicas=3, initialize=True))
    assert not again["changed"] and again["plan"] == [] and again["api_calls"] == {"ec2:DescribeInstances": 1}
    assert again["kubernetes_api"]["asked"] is False and len(again["machines"]) == 1
    grown = run_ok(run_module, args(network, replicas=3))
    assert len(grown["machines"]) == 3 and [p["call"] for p in grown["plan"]].count("ec2:RunInstances") == 2


# control plane: kubeadm roles, classic load balancer registration ----------------------------------------------
def _classic_lb(aws, network) -> str:
    public = [s["id"] for s in network["subnets"] if s["is_public"]]
    aws.client("elb").create_load_balancer(
        LoadBalancerName=f"{CLUSTER}-apiserver",
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 6443}],
        Subnets=public,
    )
    return f"{CLUSTER}-apiserver"


def _lb_instances(aws, name: str) -> set[str]:
    lb = aws.client("elb").describe_load_balancers(LoadBalancerNames=[name])["LoadBalancerDescriptions"][0]
    return {i["InstanceId"] for i in lb["Instances"]}


def _document(aws, instance: dict[str, Any]) -> str:
    backend, prefix, count = _tags(instance["Tags"])[BOOTSTRAP_TAG].split(":")
    sm = aws.client("secretsmanager")
    data = b"".join(sm.get_secret_value(SecretId=f"{prefix}-{i}")["SecretBinary"] for i in range(int(count)))
    return gzip.decompress(data).decode()


def test_control_plane_kubeadm_roles_registration_rollout_and_absent(aws, run_module, network):
    lb_name = _classic_lb(aws, network)
    pki = run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": CLUSTER,
            "kubernetes_version": "v1.31.2",
            "endpoint": {"host": "api.example.test"},
            "output_dir": str(aws.env["AWS_CONFIG_FILE"]) + ".d",
        },
    )
    assert not pki.get("failed"), pki
    cp = args(
        network,
        name="control-plane",
        role="control-plane",
        replicas=3,
        security_group_ids=[network["groups"]["controlplane"]["id"]],
        bootstrap={"type": "kubeadm", "endpoint_host": "api.example.test"},
        load_balancers=[{"type": "classic", "name": lb_name}],
    )
    first = run_ok(run_module, cp)
    assert first["replicas"] == {"desired": 3, "ready": 3, "updated": 3}
    assert all(m["registered"] for m in first["machines"])
    instances = sorted(_instances(aws, "control-plane"), key=lambda i: (i["LaunchTime"], _tags(i["Tags"])["Name"]))
    assert _lb_instances(aws, lb_name) == {i["InstanceId"] for i in instances}
    roles = ["init" if "kubeadm init" in _document(aws, i) else "join" for i in instances]
    assert roles.count("init") == 1 and roles.count("join") == 2
    # One at a time: launch, register, launch, register, ...
    calls = [p["call"] for p in first["plan"] if p["call"].startswith(("ec2:", "elb:"))]
    assert calls == ["ec2:RunInstances", "elb:RegisterInstancesWithLoadBalancer"] * 3
    for i in instances:
        user_data = aws.client("ec2").describe_instance_attribute(InstanceId=i["InstanceId"], Attribute="userData")
        text = base64.b64decode(user_data["UserData"]["Value"]).decode()
        assert "PRIVATE KEY" not in text and "kubeadm" not in text

    aws.reset_requests()
    again = run_ok(run_module, cp)
    assert not again["changed"] and aws.mutating_requests() == []
    assert again["api_calls"]["elb:DescribeLoadBalancers"] == 1
    # The PKI is read once, for the client certificate that asks the cluster (whose endpoint moto does not serve).
    assert again["api_calls"]["secretsmanager:GetSecretValue"] == 1
    assert again["kubernetes_api"]["reachable"] is False and again["kubernetes_api"]["signal"] == "InstanceRunning"

    # A replacement without etcd cannot keep quorum: refused before any change (the simulator's tests roll a
    # control plane that answers, test_machine_lifecycle.py).
    aws.reset_requests()
    refused = run_module(MODULE, {**cp, "instance_type": "t3.xlarge"})
    assert refused.get("failed") and refused["msg"].startswith("refused:"), refused.get("msg")
    assert "Nothing was changed" in refused["msg"] and "kubernetes_api" in refused["msg"]
    assert refused["plan"] == [] and aws.mutating_requests() == []

    gone = run_ok(run_module, {**cp, "state": "absent"})
    assert gone["changed"] and gone["machines"] == []
    assert _instances(aws, "control-plane") == [] and _lb_instances(aws, lb_name) == set()
    calls = [p["call"] for p in gone["plan"]]
    assert calls.index("elb:DeregisterInstancesFromLoadBalancer") < calls.index("ec2:TerminateInstances")
    assert not any(n.startswith("aws.cluster.x-k8s.io/") for n in _secret_names(aws))
    aws.reset_requests()
    assert not run_ok(run_module, {**cp, "state": "absent"})["changed"]
    assert aws.mutating_requests() == []


# check mode, bad input ----------------------------------------------------------------------------------------
PLANNED_SUBNETS = [
    {"id": "planned:subnet:inst-it-subnet-private-us-east-1a", "availability_zone": "us-east-1a", "is_public": False},
    {"id": "planned:subnet:inst-it-subnet-private-us-east-1b", "availability_zone": "us-east-1b", "is_public": False},
    {"id": "planned:subnet:inst-it-subnet-public-us-east-1a", "availability_zone": "us-east-1a", "is_public": True},
]


def test_check_mode_from_an_empty_account_plans_everything_with_placeholders(aws, run_module):
    aws.reset_requests()
    result = run_module(
        MODULE,
        {
            "cluster_name": CLUSTER,
            "name": "control-plane",
            "role": "control-plane",
            "replicas": 3,
            "kubernetes_version": "v1.31.2",
            "instance_type": "t3.large",
            "subnets": PLANNED_SUBNETS,
            "security_group_ids": ["planned:sg:inst-it-controlplane"],
            "bootstrap": {"type": "kubeadm", "endpoint_host": "planned:elb:inst-it-apiserver"},
            "load_balancers": [{"type": "classic", "name": "planned:elb:inst-it-apiserver"}],
        },
        check=True,
    )
    assert not result.get("failed"), result
    assert result["changed"]
    assert aws.mutating_requests() == []
    calls = [p["call"] for p in result["plan"]]
    # kubeadm init's token is kept for the joins of a build without the API; each join gets its own token, minted
    # in the cluster (the apply does that once the API answers), then its bootstrap data, launch and registration.
    launch = ["secretsmanager:CreateSecret", "ec2:RunInstances", "elb:RegisterInstancesWithLoadBalancer"]
    assert calls == ["secretsmanager:CreateSecret", *launch, "k8s:CreateSecret", *launch, "k8s:CreateSecret", *launch]
    assert all(m["id"].startswith("planned:instance:inst-it-control-plane-") for m in result["machines"])
    assert sorted(m["availability_zone"] for m in result["machines"]) == ["us-east-1a", "us-east-1a", "us-east-1b"]
    assert result["ami_id"] == LATEST_CAPA_AMI_X86


def test_check_mode_shows_a_rollout_and_changes_nothing(aws, run_module, network):
    run_ok(run_module, args(network, replicas=2))
    before = {i["InstanceId"] for i in _instances(aws, "md-0")}
    aws.reset_requests()
    result = run_ok(run_module, args(network, replicas=2, instance_type="t3.xlarge"), check=True)
    assert aws.mutating_requests() == []
    calls = [p["call"] for p in result["plan"]]
    assert calls.count("ec2:RunInstances") == 2 and calls.count("ec2:TerminateInstances") == 2
    assert max(_replay(result["plan"], 2)) <= 3
    assert {i["InstanceId"] for i in _instances(aws, "md-0")} == before


def test_bastion_gets_canonical_ubuntu_in_the_first_public_subnet(aws, run_module, network):
    result = run_ok(
        run_module,
        {
            "cluster_name": CLUSTER,
            "name": "bastion",
            "role": "bastion",
            "subnets": network["subnets"],
            "security_group_ids": [network["groups"]["node"]["id"]],
        },
    )
    first_public = next(s for s in network["subnets"] if s["is_public"])
    (machine,) = result["machines"]
    assert result["ami_id"] == LATEST_CANONICAL_X86 and machine["subnet_id"] == first_public["id"]
    (instance,) = _instances(aws, "bastion")
    assert instance["InstanceType"] == "t3.micro" and _tags(instance["Tags"])[ROLE] == "bastion"
    assert BOOTSTRAP_TAG not in _tags(instance["Tags"])


OLDER_CANONICAL_X86 = "ami-6e6d1c0c6c8881413"  # tools/moto_amis.json: Ubuntu 24.04 amd64 a month before the newest


def test_a_bastion_keeps_its_image_when_a_newer_one_is_published_and_rolls_when_its_definition_changes(
    aws, run_module, network
):
    """CAPA looks a bastion's image up when it creates it and never replaces it for a newer one. Here the bastion
    runs the older of two Canonical images (given by id at first); once the id is no longer given, the lookup would
    find the newer one, yet the bastion stays - and its run asks no DescribeImages. A changed instance type rolls it
    onto the lookup's image."""
    bastion = {
        "cluster_name": CLUSTER,
        "name": "bastion",
        "role": "bastion",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node"]["id"]],
    }
    first = run_ok(run_module, {**bastion, "ami": {"id": OLDER_CANONICAL_X86}})
    assert first["ami_id"] == OLDER_CANONICAL_X86
    (before,) = _instances(aws, "bastion")

    aws.reset_requests()
    kept = run_ok(run_module, bastion)
    assert not kept["changed"] and kept["plan"] == [] and aws.mutating_requests() == []
    assert kept["ami_id"] == OLDER_CANONICAL_X86 and "ec2:DescribeImages" not in kept["api_calls"], kept["api_calls"]
    assert [i["InstanceId"] for i in _instances(aws, "bastion")] == [before["InstanceId"]]

    rolled = run_ok(run_module, {**bastion, "instance_type": "t3.small"})
    assert rolled["changed"] and rolled["ami_id"] == LATEST_CANONICAL_X86
    (after,) = _instances(aws, "bastion")
    assert after["InstanceId"] != before["InstanceId"] and after["ImageId"] == LATEST_CANONICAL_X86
    again = run_ok(run_module, {**bastion, "instance_type": "t3.small"})
    assert not again["changed"] and "ec2:DescribeImages" not in again["api_calls"]


def _own_capa_image(aws, created: str) -> str:
    """An image of this account named as CAPA names v1.31.2's Ubuntu 24.04 images, created now. A copy of CAPA's:
    moto's RegisterImage drops the architecture and virtualization type the lookup filters on (test_ami_info.py)."""
    return aws.client("ec2").copy_image(
        Name=f"capa-ami-ubuntu-24.04-v1.31.2-{created}", SourceImageId=LATEST_CAPA_AMI_X86, SourceRegion="us-east-1"
    )["ImageId"]


def test_workers_keep_their_image_when_a_newer_one_is_published_a_new_machine_takes_it_and_a_new_lookup_rolls(
    aws, run_module, network
):
    """CAPA resolves a machine's image when it creates it; a newer image of the same lookup replaces no machine
    (a plain re-run must not roll a cluster because an image came out), a new machine takes the newest, and another
    lookup is another template, which rolls. The run over machines that keep their image asks no DescribeImages.
    The images are this account's own (``ami.owner``), so the test can publish one between two runs."""
    account = aws.client("sts").get_caller_identity()["Account"]
    older = _own_capa_image(aws, "1700000000")
    group = args(network, ami={"owner": account})
    first = run_ok(run_module, group)
    assert first["ami_id"] == older and {i["ImageId"] for i in _instances(aws, "md-0")} == {older}
    machines = {i["InstanceId"] for i in _instances(aws, "md-0")}

    time.sleep(1.1)  # CreationDate has one-second resolution: the next image is the newer
    newer = _own_capa_image(aws, "1800000000")
    aws.reset_requests()
    kept = run_ok(run_module, group)
    assert not kept["changed"] and kept["plan"] == [] and aws.mutating_requests() == []
    assert "ec2:DescribeImages" not in kept["api_calls"], kept["api_calls"]
    assert kept["ami_id"] == older and kept["replicas"]["updated"] == 2
    assert {i["InstanceId"] for i in _instances(aws, "md-0")} == machines

    grown = run_ok(run_module, {**group, "replicas": 3})
    assert [p["call"] for p in grown["plan"]].count("ec2:RunInstances") == 1 and grown["ami_id"] == newer
    assert grown["replicas"] == {"desired": 3, "ready": 3, "updated": 3}
    images = {i["InstanceId"]: i["ImageId"] for i in _instances(aws, "md-0")}
    assert {images[m] for m in machines} == {older} and sorted(images.values()).count(newer) == 1

    # CAPA's own images (the default owner): another lookup, so every machine is replaced, onto its newest image.
    rolled = run_ok(run_module, args(network, replicas=3))
    assert rolled["ami_id"] == LATEST_CAPA_AMI_X86 and rolled["replicas"]["updated"] == 3
    assert {i["ImageId"] for i in _instances(aws, "md-0")} == {LATEST_CAPA_AMI_X86}
    assert not set(images) & {i["InstanceId"] for i in _instances(aws, "md-0")}


BAD_INPUTS = [
    ({"role": "control-plane", "replicas": 2}, "replicas"),
    ({"rollout": {"max_surge": 0, "max_unavailable": 0}}, "rollout"),
    ({"failure_domains": ["us-east-1c"]}, "failure_domains[0]"),
    ({"kubernetes_version": "v1.99.0"}, None),  # AMI lookup finds nothing
    ({"bootstrap": {"type": "kubeadm"}}, "bootstrap.endpoint_host"),
    ({"bootstrap": {"type": "kubeadm", "endpoint_host": "api.example.test", "token_ttl": 0}}, "bootstrap.token_ttl"),
    ({"load_balancers": [{"type": "classic", "name": "x"}]}, "load_balancers"),
    ({"rollout_before_certificates_expiry_days": 30}, "rollout_before_certificates_expiry_days"),  # not a control plane
    (
        {"role": "control-plane", "replicas": 1, "rollout_before_certificates_expiry_days": 3},
        "rollout_before_certificates_expiry_days",
    ),
    ({"instance_type": None}, "instance_type"),
]


@pytest.mark.parametrize("change, field", BAD_INPUTS)
def test_bad_input_fails_before_any_change(aws, run_module, change, field):
    module_args = {
        "cluster_name": CLUSTER,
        "name": "md-0",
        "replicas": 1,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": [{"id": "subnet-0123456789abcdef0", "availability_zone": "us-east-1a", "is_public": False}],
        "bootstrap": {"type": "none"},
        **change,
    }
    aws.reset_requests()
    result = run_module(MODULE, module_args)
    assert result.get("failed"), result
    assert aws.mutating_requests() == []
    if field:
        assert result["field"] == field, result["msg"]
    else:
        assert "no x86_64 image" in result["msg"] and "v1.99.0" in result["msg"]


def test_nlb_target_registration_and_deregistration(aws, run_module):
    """A control plane behind an NLB target group; the network is made with boto3 to keep the test short."""
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.1.0.0/24", AvailabilityZone="us-east-1a")["Subnet"][
        "SubnetId"
    ]
    elbv2 = aws.client("elbv2")
    elbv2.create_load_balancer(Name="inst-it-nlb", Subnets=[subnet_id], Type="network", Scheme="internal")
    tg_arn = elbv2.create_target_group(
        Name="inst-it-apiserver", Protocol="TCP", Port=6443, VpcId=vpc_id, TargetType="instance"
    )["TargetGroups"][0]["TargetGroupArn"]
    cp = {
        "cluster_name": CLUSTER,
        "name": "control-plane",
        "role": "control-plane",
        "replicas": 1,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": [{"id": subnet_id, "availability_zone": "us-east-1a", "is_public": False}],
        "bootstrap": {"type": "none"},
        "load_balancers": [{"type": "nlb", "target_group_arns": [tg_arn]}],
    }
    first = run_ok(run_module, cp)
    (machine,) = first["machines"]
    assert machine["registered"]
    targets = elbv2.describe_target_health(TargetGroupArn=tg_arn)["TargetHealthDescriptions"]
    assert [t["Target"]["Id"] for t in targets] == [machine["id"]]

    aws.reset_requests()
    again = run_ok(run_module, cp)
    assert not again["changed"] and aws.mutating_requests() == []
    assert again["api_calls"].get("elbv2:DescribeTargetHealth") == 1, again["api_calls"]

    gone = run_ok(run_module, {**cp, "state": "absent"})
    assert [p["call"] for p in gone["plan"]] == ["elbv2:DeregisterTargets", "ec2:TerminateInstances"]
    targets = elbv2.describe_target_health(TargetGroupArn=tg_arn)["TargetHealthDescriptions"]
    assert [t for t in targets if t["TargetHealth"]["State"] != "draining"] == []
