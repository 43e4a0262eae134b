# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One machine, declared once (machine_spec.py): the declaration and its module variants, ``from_params`` (every
default from the declaration, the same as Ansible fills in), ``validate`` (the field named, prefixed by ``where``),
the template hash's definition, and the three renderers - RunInstances, launch template data, fleet overrides."""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.hashing import template_hash
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.idempotency import new_client_token
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import machine_spec as ms
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.machine_spec import (
    Ami,
    Bootstrap,
    Image,
    Imds,
    MachineSpec,
    RootVolume,
    Spot,
)

REPO = Path(__file__).resolve().parents[5]
IMAGE = Image("ami-0123456789abcdef0", "capa-ami", "/dev/sda1", 20, "x86_64")
SUBNETS = [{"id": "subnet-a", "availability_zone": "us-east-1a"}, {"id": "subnet-b", "availability_zone": "us-east-1b"}]
KUBEADM = {"type": "kubeadm", "endpoint_host": "api.example.com"}


def spec(**params: Any) -> MachineSpec:
    return MachineSpec.from_params({"instance_type": "t3.large", "kubernetes_version": "v1.31.2", **params})


# from_params -------------------------------------------------------------------------------------------------------
def test_defaults_come_from_the_declaration():
    machine = MachineSpec.from_params({})
    assert machine == MachineSpec(
        role="node",
        instance_type=None,
        kubernetes_version=None,
        ami=Ami(),
        root_volume=RootVolume(size=None, type="gp3", encrypted=True),
        ssh_key_name=None,
        iam_instance_profile=None,
        security_group_ids=(),
        imds=Imds(http_tokens="required", http_put_response_hop_limit=1),
        spot=None,
        tenancy="default",
        placement_group_name=None,
        bootstrap=Bootstrap(
            type="kubeadm", endpoint_host=None, endpoint_port=6443, data=None, backend="secrets-manager"
        ),
    )


def test_the_bastion_is_small_boots_nothing_and_looks_up_canonicals_image():
    bastion = MachineSpec.from_params({"role": "bastion"})
    assert (bastion.instance_type, bastion.bootstrap.type, bastion.bastion) == ("t3.micro", "none", True)
    assert MachineSpec.from_params({"role": "bastion", "instance_type": "t3.small"}).instance_type == "t3.small"


@pytest.mark.parametrize(
    "params, field, expected",
    [
        # What the roles write for "not set" is unset here too.
        ({"ssh_key_name": ""}, "ssh_key_name", None),
        ({"iam_instance_profile": ""}, "iam_instance_profile", None),
        ({"placement_group_name": ""}, "placement_group_name", None),
        ({"instance_type": ""}, "instance_type", None),
        ({"kubernetes_version": ""}, "kubernetes_version", None),
        ({"tenancy": ""}, "tenancy", "default"),
        ({"ami": {"id": "", "base_os": "ubuntu-22.04"}}, "ami", Ami(base_os="ubuntu-22.04")),
        ({"root_volume": {"type": None, "size": 60}}, "root_volume", RootVolume(60, "gp3", True)),
        ({"root_volume": {"encrypted": False}}, "root_volume", RootVolume(None, "gp3", False)),
        ({"imds": {"http_put_response_hop_limit": 2}}, "imds", Imds("required", 2)),
        ({"spot_market_options": {}}, "spot", Spot(None)),
        ({"spot_market_options": {"max_price": ""}}, "spot", Spot(None)),
        ({"spot_market_options": {"max_price": "0.05"}}, "spot", Spot("0.05")),
        ({"security_group_ids": ["sg-1", "sg-2"]}, "security_group_ids", ("sg-1", "sg-2")),
        (
            {"bootstrap": {"type": "raw", "data": "x", "backend": ""}},
            "bootstrap",
            Bootstrap("raw", None, 6443, "x", "secrets-manager"),
        ),
    ],
)
def test_from_params(params, field, expected):
    assert getattr(MachineSpec.from_params(params), field) == expected


MODULE_ARGS = [
    {},
    {"instance_type": "m5.large", "kubernetes_version": "v1.31.2", "bootstrap": KUBEADM},
    {"root_volume": {"size": 60}, "imds": {"http_tokens": "optional"}, "bootstrap": {"backend": "ssm-parameter-store"}},
    {"ami": {"owner": "111122223333"}, "security_group_ids": ["sg-1"], "ssh_key_name": "k"},
]


@pytest.mark.parametrize("args", MODULE_ARGS)
@pytest.mark.parametrize(
    "options, extra",
    [
        (ms.INSTANCE_OPTIONS, {"tenancy": "host", "spot_market_options": {}}),
        (ms.ASG_OPTIONS, {"spot_market_options": {"max_price": "0.1"}}),
        (ms.FLEET_OPTIONS, {}),
    ],
)
def test_the_declared_defaults_are_what_ansible_fills_in(args, options, extra):
    """from_params of raw parameters == from_params of what the module's argument spec makes of them."""
    given = {**args, **extra}
    validated = ArgumentSpecValidator(argument_spec(options)).validate(given)
    assert not validated.error_messages
    expected = MachineSpec.from_params(
        validated.validated_parameters, ms.POOL_BOOTSTRAP if options is not ms.INSTANCE_OPTIONS else ms.BOOTSTRAP
    )
    if "bootstrap" not in args and options is ms.INSTANCE_OPTIONS:
        assert validated.validated_parameters["bootstrap"]["type"] is None  # capa_instance: a role's default
    pool = options is not ms.INSTANCE_OPTIONS
    assert MachineSpec.from_params(given, ms.POOL_BOOTSTRAP if pool else ms.BOOTSTRAP) == expected


def test_each_module_takes_the_shared_options_and_its_own():
    names = {name: [o.name for o in options] for name, options in ms.DOC_FRAGMENTS.items()}
    assert names["DOCUMENTATION"] == [
        "subnets",
        "kubernetes_version",
        "ami",
        "root_volume",
        "ssh_key_name",
        "iam_instance_profile",
        "security_group_ids",
        "imds",
    ]
    assert names["INSTANCE"] == ["instance_type", "spot_market_options", "tenancy", "placement_group_name", "bootstrap"]
    assert names["POOL_BOOTSTRAP"] == ["bootstrap"]
    assert names["ASG"] == ["instance_type", "spot_market_options"]
    assert names["FLEET"] == ["instance_type"]
    instance_bootstrap = ms.find(ms.INSTANCE_OPTIONS, "bootstrap")
    pool_bootstrap = ms.find(ms.ASG_OPTIONS, "bootstrap")
    assert ms.find(instance_bootstrap.options, "type").choices == ("kubeadm", "raw", "none")
    assert ms.find(instance_bootstrap.options, "type").default is None
    assert "eks_cluster_name" not in {o.name for o in instance_bootstrap.options or ()}
    assert ms.find(pool_bootstrap.options, "type").default == "kubeadm"
    assert ms.find(ms.FLEET_OPTIONS, "bootstrap") == pool_bootstrap
    assert ms.instance_argument_spec()["bootstrap"]["options"]["data"]["no_log"] is True
    assert ms.asg_argument_spec()["ssh_key_name"]["no_log"] is False


# the cluster spec's use ------------------------------------------------------------------------------------------
def test_the_cluster_spec_overrides_only_its_documented_defaults():
    options = ms.machine_options(defaults={"instance_type": "t3.large", "root_volume.size": 80})
    assert [o.name for o in options] == [o.name for o in ms.MACHINE_OPTIONS]
    assert ms.find(options, "instance_type").default == "t3.large"
    assert ms.find(options, "root_volume.size").default == 80
    assert ms.find(options, "root_volume.type") == ms.find(ms.MACHINE_OPTIONS, "root_volume.type")
    assert ms.find(ms.MACHINE_OPTIONS, "root_volume.size").default is None  # the declaration itself is unchanged
    picked = ms.machine_options(["imds", "tenancy"])
    assert [o.name for o in picked] == ["imds", "tenancy"]
    with pytest.raises(KeyError):
        ms.machine_options(defaults={"root_volume.sise": 80})


def test_a_cluster_section_is_checked_with_its_path():
    section = {"instance_type": "t3.large", "kubernetes_version": "v1.31.2", "imds": {"http_put_response_hop_limit": 0}}
    with pytest.raises(SpecError) as caught:
        MachineSpec.from_params(section).validate(where="capa_cluster.control_plane")
    assert caught.value.field == "capa_cluster.control_plane.imds.http_put_response_hop_limit"
    assert str(caught.value) == "capa_cluster.control_plane.imds.http_put_response_hop_limit: must be between 1 and 64"


# validate ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, field, reason",
    [
        ({"instance_type": None}, "instance_type", "is required"),
        ({"kubernetes_version": None}, "kubernetes_version", "is required to look up the AMI (or give ami.id)"),
        ({"kubernetes_version": "1.31"}, "kubernetes_version", "'1.31' is not a version like v1.31.2"),
        (
            {"kubernetes_version": "v1.31.2.9", "bootstrap": {"type": "eks"}},
            "kubernetes_version",
            "'v1.31.2.9' is not a Kubernetes version like 1.31",
        ),
        (
            {"kubernetes_version": "1.31", "ami": {"base_os": "ubuntu-24.04"}, "bootstrap": {"type": "eks"}},
            "kubernetes_version",
            "'1.31' is not a version like v1.31.2",  # CAPA's lookup, not EKS's
        ),
        ({"root_volume": {"size": 4}}, "root_volume.size", "4 GiB: a root volume is 8 to 16384 GiB"),
        ({"imds": {"http_put_response_hop_limit": 65}}, "imds.http_put_response_hop_limit", "must be between 1 and 64"),
        (
            {"bootstrap": {"type": "kubeadm"}},
            "bootstrap.endpoint_host",
            "is required for kubeadm bootstrap (the API endpoint)",
        ),
        (
            {"ami": {"id": "ami-1"}, "kubernetes_version": None, "bootstrap": KUBEADM},
            "kubernetes_version",
            "is required for kubeadm bootstrap",
        ),
        (
            {"ami": {"id": "ami-1"}, "kubernetes_version": None, "bootstrap": {"type": "eks"}},
            "kubernetes_version",
            "is required for eks bootstrap (the EKS minor version)",
        ),
        ({"bootstrap": {"type": "raw"}}, "bootstrap.data", "is required for raw bootstrap"),
        ({"bootstrap": {"type": "ignition"}}, "bootstrap.type", "must be one of kubeadm, eks, raw, none"),
        (
            {"bootstrap": {"type": "none", "backend": "s3"}},
            "bootstrap.backend",
            "must be one of secrets-manager, ssm-parameter-store",
        ),
        (
            {"role": "bastion", "bootstrap": KUBEADM},
            "bootstrap.type",
            "a bastion is not a Kubernetes node; use none or raw",
        ),
    ],
)
def test_validate_names_the_field(params, field, reason):
    for where, prefix in (("", ""), ("capa_cluster.machine_deployments[0]", "capa_cluster.machine_deployments[0].")):
        with pytest.raises(SpecError) as caught:
            spec(**params).validate(where)
        assert (caught.value.field, caught.value.reason) == (prefix + field, reason)


@pytest.mark.parametrize(
    "params",
    [
        {"bootstrap": KUBEADM},
        {"bootstrap": {"type": "none"}, "kubernetes_version": None, "ami": {"id": "ami-1"}},
        {"bootstrap": {"type": "eks"}, "kubernetes_version": "1.31"},
        {"bootstrap": {"type": "eks"}, "kubernetes_version": "v1.31.2"},
        {"bootstrap": {"type": "raw", "data": "#!/bin/sh\n"}, "root_volume": {"size": 8}},
        {"role": "bastion", "kubernetes_version": None, "bootstrap": {"type": "none"}},
    ],
)
def test_validate_accepts(params):
    spec(**params).validate()


@pytest.mark.parametrize(
    ("version", "minor"), [("1.31", "1.31"), ("v1.31", "1.31"), ("v1.32.4", "1.32"), ("1.30.0", "1.30")]
)
def test_eks_minor(version, minor):
    assert ms.eks_minor(version) == minor


@pytest.mark.parametrize("version", ["", None, "latest", "1", "v1.31.2.1", "1.31-eks"])
def test_eks_minor_rejects(version):
    with pytest.raises(SpecError) as failure:
        ms.eks_minor(version)
    assert failure.value.field == "kubernetes_version"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"bootstrap": {"type": "eks"}}, True),
        ({"bootstrap": {"type": "eks"}, "ami": {"id": "ami-0123456789abcdef0"}}, False),
        ({"bootstrap": {"type": "eks"}, "ami": {"base_os": "ubuntu-24.04"}}, False),
        ({"bootstrap": {"type": "eks"}, "ami": {"owner": "123456789012"}}, False),
        ({"bootstrap": {"type": "eks"}, "ami": {"name_format": "x-{k8s_version}"}}, False),
        ({"bootstrap": KUBEADM}, False),
        ({"bootstrap": {"type": "raw", "data": "x"}}, False),
    ],
)
def test_uses_eks_image(params, expected):
    assert spec(**params).uses_eks_image is expected


# what defines a machine ---------------------------------------------------------------------------------------------
def test_definition_is_image_type_volume_key_profile_groups_and_bootstrap():
    machine = spec(security_group_ids=["sg-2", "sg-1"], ssh_key_name="k", bootstrap=KUBEADM)
    assert machine.definition("ami-1") == {
        "ami_id": "ami-1",
        "instance_type": "t3.large",
        "root_volume": {"size": None, "type": "gp3", "encrypted": True},
        "ssh_key_name": "k",
        "iam_instance_profile": None,
        "security_group_ids": frozenset({"sg-1", "sg-2"}),
        "bootstrap": {
            "type": "kubeadm",
            "endpoint_host": "api.example.com",
            "endpoint_port": 6443,
            "kubernetes_version": "v1.31.2",
        },
    }
    assert machine.market_and_placement() == {"spot": None, "tenancy": "default", "placement_group_name": None}
    assert spec(spot_market_options={}).market_and_placement()["spot"] == {"max_price": ""}


def test_a_raw_documents_definition_is_its_digest_never_the_document():
    definition = spec(bootstrap={"type": "raw", "data": "secret-token: abc"}).definition("ami-1")["bootstrap"]
    assert definition == {"type": "raw", "data_sha256": hashlib.sha256(b"secret-token: abc").hexdigest()}
    eks = spec(bootstrap={"type": "eks", "eks_cluster_name": "e"}, kubernetes_version="1.31").definition("ami-1")
    assert eks["bootstrap"] == {"type": "eks", "eks_cluster_name": "e", "kubernetes_version": "1.31"}


def _hash(**params: Any) -> str:
    machine = spec(**{"bootstrap": KUBEADM, **params})
    return template_hash({**machine.definition("ami-1"), **machine.market_and_placement()})


def test_the_template_hash_ignores_the_order_of_security_groups_and_imds():
    base = _hash(security_group_ids=["sg-1", "sg-2"])
    assert _hash(security_group_ids=["sg-2", "sg-1"]) == base
    # Metadata options are repaired in place: they do not make a new machine.
    assert _hash(security_group_ids=["sg-1", "sg-2"], imds={"http_tokens": "optional"}) == base
    assert len(base) == 10


@pytest.mark.parametrize(
    "params",
    [
        {"instance_type": "t3.xlarge"},
        {"root_volume": {"size": 100}},
        {"root_volume": {"encrypted": False}},
        {"root_volume": {"type": "gp2"}},
        {"ssh_key_name": "k"},
        {"iam_instance_profile": "nodes"},
        {"security_group_ids": ["sg-1"]},
        {"spot_market_options": {"max_price": "0.1"}},
        {"tenancy": "dedicated"},
        {"placement_group_name": "pg"},
        {"kubernetes_version": "v1.31.3"},
        {"bootstrap": {**KUBEADM, "endpoint_port": 443}},
    ],
)
def test_the_template_hash_changes_with_what_defines_a_machine(params):
    assert _hash(**params) != _hash()


# renderers --------------------------------------------------------------------------------------------------------
def test_run_instances_request_of_a_private_machine():
    token = new_client_token()
    request = spec(security_group_ids=["sg-1"]).run_instances_request(
        IMAGE, zone="us-east-1a", subnet_id="subnet-a", public_ip=False, client_token=token
    )
    assert request == {
        "ImageId": IMAGE.id,
        "InstanceType": "t3.large",
        "MinCount": 1,
        "MaxCount": 1,
        "ClientToken": token,
        "BlockDeviceMappings": [
            {
                "DeviceName": "/dev/sda1",
                "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True},
            }
        ],
        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1, "HttpEndpoint": "enabled"},
        "SubnetId": "subnet-a",
        "SecurityGroupIds": ["sg-1"],
        "Placement": {"AvailabilityZone": "us-east-1a"},
    }
    assert token != new_client_token() and len(token) <= 64  # a fresh token per create, within EC2's limit


def test_run_instances_request_of_a_public_spot_machine_with_every_option():
    machine = spec(
        security_group_ids=["sg-1", "sg-2"],
        root_volume={"size": 120, "type": "gp2", "encrypted": False},
        imds={"http_tokens": "optional", "http_put_response_hop_limit": 2},
        ssh_key_name="k",
        iam_instance_profile="nodes",
        spot_market_options={"max_price": "0.05"},
        tenancy="dedicated",
        placement_group_name="pg",
    )
    request = machine.run_instances_request(
        IMAGE, zone="us-east-1b", subnet_id="subnet-b", public_ip=True, client_token="t"
    )
    assert "SubnetId" not in request and "SecurityGroupIds" not in request
    assert request["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "SubnetId": "subnet-b",
            "Groups": ["sg-1", "sg-2"],
            "AssociatePublicIpAddress": True,
            "DeleteOnTermination": True,
        }
    ]
    assert request["Placement"] == {"AvailabilityZone": "us-east-1b", "Tenancy": "dedicated", "GroupName": "pg"}
    assert request["BlockDeviceMappings"][0]["Ebs"] == {
        "VolumeSize": 120,
        "VolumeType": "gp2",
        "Encrypted": False,
        "DeleteOnTermination": True,
    }
    assert request["MetadataOptions"] == {
        "HttpTokens": "optional",
        "HttpPutResponseHopLimit": 2,
        "HttpEndpoint": "enabled",
    }
    assert (request["KeyName"], request["IamInstanceProfile"]) == ("k", {"Name": "nodes"})
    assert request["InstanceMarketOptions"] == {
        "MarketType": "spot",
        "SpotOptions": {
            "SpotInstanceType": "one-time",
            "InstanceInterruptionBehavior": "terminate",
            "MaxPrice": "0.05",
        },
    }


def test_spot_at_the_on_demand_price_sends_no_max_price():
    market = spec(spot_market_options={}).market_options()
    assert market == {
        "MarketType": "spot",
        "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
    }
    assert spec().market_options() is None


def test_a_volume_without_size_and_an_image_without_one_leaves_the_size_to_aws():
    image = Image("ami-1", "n", "/dev/xvda", None, "x86_64")
    assert spec().block_device_mappings(image) == [
        {"DeviceName": "/dev/xvda", "Ebs": {"VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True}}
    ]


def test_launch_template_data():
    machine = spec(security_group_ids=["sg-1"], iam_instance_profile="nodes", spot_market_options={"max_price": "0.1"})
    data = machine.launch_template_data(IMAGE, tags={"Name": "mp-0", "team": "a"}, user_data="MIME-boot-hook")
    assert data == {
        "ImageId": IMAGE.id,
        "InstanceType": "t3.large",
        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1, "HttpEndpoint": "enabled"},
        "BlockDeviceMappings": machine.block_device_mappings(IMAGE),
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": [{"Key": "Name", "Value": "mp-0"}, {"Key": "team", "Value": "a"}]}
            for kind in ("instance", "volume")
        ],
        "IamInstanceProfile": {"Name": "nodes"},
        "SecurityGroupIds": ["sg-1"],
        "InstanceMarketOptions": machine.market_options(),
        "UserData": base64.b64encode(b"MIME-boot-hook").decode(),
    }
    bare = spec().launch_template_data(IMAGE)
    assert not {"TagSpecifications", "UserData", "SecurityGroupIds", "KeyName", "InstanceMarketOptions"} & set(bare)


def test_fleet_overrides_are_every_type_in_every_subnet():
    machine = spec(instance_type="m5.large")
    assert machine.fleet_overrides(SUBNETS, ["m5.large", "m6i.large"]) == [
        {"InstanceType": "m5.large", "SubnetId": "subnet-a"},
        {"InstanceType": "m5.large", "SubnetId": "subnet-b"},
        {"InstanceType": "m6i.large", "SubnetId": "subnet-a"},
        {"InstanceType": "m6i.large", "SubnetId": "subnet-b"},
    ]
    assert machine.fleet_overrides(SUBNETS[:1]) == [{"InstanceType": "m5.large", "SubnetId": "subnet-a"}]


# the generated documentation -------------------------------------------------------------------------------------
def test_the_doc_fragment_is_generated_from_the_declaration():
    """plugins/doc_fragments/machine.py is what tools/gen_specs.py writes (ansible-doc reads the static text)."""
    sys.path.insert(0, str(REPO / "tools"))
    import gen_specs

    assert (REPO / "plugins/doc_fragments/machine.py").read_text() == gen_specs.machine_fragment()
