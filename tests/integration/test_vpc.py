"""capa_vpc against the moto server: create, no-op, check mode, drift repair, bring-your-own, identity, delete."""

from __future__ import annotations

OWNER = "sigs.k8s.io/cluster-api-provider-aws/cluster/vpc-it"
MODULE = "clusterapi.aws.capa_vpc"
APPLIED = "sigs.k8s.io/cluster-api-provider-aws/last-applied-tags"


def owned_vpcs(ec2):
    return ec2.describe_vpcs(Filters=[{"Name": f"tag:{OWNER}", "Values": ["owned"]}])["Vpcs"]


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def test_create_then_noop(aws, run_module):
    first = run_module(MODULE, {"cluster_name": "vpc-it", "additional_tags": {"team": "a"}})
    assert first["changed"] is True, first
    assert [p["call"] for p in first["plan"]] == [
        "ec2:CreateVpc",
        "ec2:ModifyVpcAttribute",
        "ec2:CreateInternetGateway",
        "ec2:AttachInternetGateway",
    ]
    ec2 = aws.client("ec2")
    [vpc] = owned_vpcs(ec2)
    assert vpc["CidrBlock"] == "10.0.0.0/16"
    assert tags(vpc) == {
        "Name": "vpc-it-vpc",
        OWNER: "owned",
        "sigs.k8s.io/cluster-api-provider-aws/role": "common",
        "team": "a",
        APPLIED: "team",  # the additional_tags keys this collection wrote, so removing one removes only it
    }
    for attribute in ("enableDnsSupport", "enableDnsHostnames"):
        answer = ec2.describe_vpc_attribute(VpcId=vpc["VpcId"], Attribute=attribute)
        assert answer[attribute[0].upper() + attribute[1:]]["Value"] is True
    [igw] = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}])[
        "InternetGateways"
    ]
    assert tags(igw)["Name"] == "vpc-it-igw" and tags(igw)[OWNER] == "owned"
    assert first["vpc"]["id"] == vpc["VpcId"] and first["vpc"]["internet_gateway_id"] == igw["InternetGatewayId"]

    aws.reset_requests()
    second = run_module(MODULE, {"cluster_name": "vpc-it", "additional_tags": {"team": "a"}})
    assert second["changed"] is False and second["plan"] == []
    assert second["api_calls"] == {
        "ec2:DescribeInternetGateways": 1,
        "ec2:DescribeVpcAttribute": 2,
        "ec2:DescribeVpcs": 1,
    }
    assert aws.mutating_requests() == []
    assert len(aws.requests()) == 4  # the server counted what the module reported


def test_reads_handed_on_packed_or_as_a_dict_answer_the_next_run(aws, run_module):
    """A result's shared_reads is one packed string, what capa_step keeps in the host fact (so neither the result nor
    the next task's invocation carries every answer); it, or the dict it unpacks to, answers the same identical reads
    without a request."""
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import is_packed, unpack

    args = {"cluster_name": "vpc-it"}
    created = run_module(MODULE, args)
    first = run_module(MODULE, {**args, "shared_reads": {}})
    assert first["changed"] is False and is_packed(first["shared_reads"]) and unpack(first["shared_reads"]), first
    for handed in (first["shared_reads"], unpack(first["shared_reads"])):
        aws.reset_requests()
        again = run_module(MODULE, {**args, "shared_reads": handed})
        assert again["changed"] is False and again["vpc"] == created["vpc"]
        assert again["api_calls"] == {} and aws.requests() == []
        assert again["reads_shared"] == {
            "ec2:DescribeInternetGateways": 1,
            "ec2:DescribeVpcAttribute": 2,
            "ec2:DescribeVpcs": 1,
        }


def test_reads_that_carry_a_no_log_value_are_not_handed_on(aws, run_module):
    """A packed string cannot be masked as exit_json masks a result's no_log values: when a read carries one (here
    the secret key is also a tag's value), the result hands nothing on, and a run given it reads for itself."""
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import is_packed, unpack

    secret = "vpc-it-not-so-secret"
    args = {"cluster_name": "vpc-it", "secret_key": secret, "additional_tags": {"note": secret}}
    run_module(MODULE, args)
    first = run_module(MODULE, {**args, "shared_reads": {}})
    assert first["changed"] is False and is_packed(first["shared_reads"]) and unpack(first["shared_reads"]) == {}
    again = run_module(MODULE, {**args, "shared_reads": first["shared_reads"]})
    assert again["api_calls"] == first["api_calls"] and "reads_shared" not in again


def test_a_key_removed_from_additional_tags_is_removed_and_a_foreign_tag_stays(aws, run_module):
    """As amazon.aws's purge_tags, limited to what this collection applied: check mode shows the removal first."""
    run_module(MODULE, {"cluster_name": "vpc-it", "additional_tags": {"team": "a", "cost-center": "7"}})
    ec2 = aws.client("ec2")
    [vpc] = owned_vpcs(ec2)
    [igw] = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}])[
        "InternetGateways"
    ]
    ids = [vpc["VpcId"], igw["InternetGatewayId"]]
    ec2.create_tags(Resources=ids, Tags=[{"Key": "backup", "Value": "daily"}])  # someone else's tag

    aws.reset_requests()
    spec = {"cluster_name": "vpc-it", "additional_tags": {"team": "a"}}
    planned = run_module(MODULE, spec, check=True, diff=True)
    assert planned["changed"] is True and aws.mutating_requests() == []
    removals = [p for p in planned["plan"] if p["call"] == "ec2:DeleteTags"]
    assert [p["reason"] for p in removals] == ["tags no longer in additional_tags: cost-center"] * 2
    assert [p["call"] for p in planned["plan"]] == ["ec2:DeleteTags", "ec2:CreateTags"] * 2  # the record follows
    assert "cost-center" in planned["diff"]["before"]["tags"] and "cost-center" not in planned["diff"]["after"]["tags"]

    applied = run_module(MODULE, spec)
    assert applied["changed"] is True
    assert applied["api_calls"]["ec2:DeleteTags"] == 2 and applied["api_calls"]["ec2:CreateTags"] == 2
    for resource in ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": ids}])["Tags"]:
        assert resource["Key"] != "cost-center", resource
    for resource_id in ids:
        found = {
            t["Key"]: t["Value"]
            for t in ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [resource_id]}])["Tags"]
        }
        assert found["backup"] == "daily" and found["team"] == "a" and found[APPLIED] == "team"

    # No additional tags at all: the record goes too; a run after that is a no-op.
    run_module(MODULE, {"cluster_name": "vpc-it"})
    aws.reset_requests()
    assert run_module(MODULE, {"cluster_name": "vpc-it"})["changed"] is False
    assert aws.mutating_requests() == []
    left = {t["Key"] for t in ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": ids}])["Tags"]}
    assert "team" not in left and APPLIED not in left and "backup" in left


def test_check_mode_from_empty_plans_everything_and_creates_nothing(aws, run_module):
    result = run_module(MODULE, {"cluster_name": "vpc-it"}, check=True, diff=True)
    assert result["changed"] is True
    assert result["vpc"]["id"] == "planned:vpc:vpc-it-vpc"
    assert result["vpc"]["internet_gateway_id"] == "planned:igw:vpc-it-igw"
    assert [p["call"] for p in result["plan"]][0] == "ec2:CreateVpc"
    assert result["diff"]["before"] is None and result["diff"]["after"]["cidr_block"] == "10.0.0.0/16"
    assert aws.mutating_requests() == []
    assert owned_vpcs(aws.client("ec2")) == []


def test_drift_is_repaired_and_secondary_cidrs_are_add_only(aws, run_module):
    run_module(MODULE, {"cluster_name": "vpc-it"})
    ec2 = aws.client("ec2")
    [vpc] = owned_vpcs(ec2)
    ec2.modify_vpc_attribute(VpcId=vpc["VpcId"], EnableDnsHostnames={"Value": False})

    result = run_module(MODULE, {"cluster_name": "vpc-it", "secondary_cidr_blocks": ["10.1.0.0/16"]}, diff=True)
    assert [(p["call"], p["reason"]) for p in result["plan"]] == [
        ("ec2:ModifyVpcAttribute", "enableDnsHostnames is off"),
        ("ec2:AssociateVpcCidrBlock", "secondary CIDR 10.1.0.0/16 missing"),
    ]
    assert result["diff"]["before"]["enable_dns_hostnames"] is False
    assert result["vpc"]["secondary_cidr_blocks"] == ["10.1.0.0/16"]

    dropped = run_module(MODULE, {"cluster_name": "vpc-it"})
    assert dropped["changed"] is False  # add-only: a block missing from the spec is kept
    assert any("10.1.0.0/16" in w for w in dropped.get("warnings", []))


def test_bring_your_own_vpc_is_used_and_never_changed(aws, run_module):
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="172.16.0.0/16")["Vpc"]["VpcId"]
    before = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]

    result = run_module(MODULE, {"cluster_name": "vpc-it", "id": vpc_id})
    assert result["changed"] is False and result["vpc"]["managed"] is False
    deleted = run_module(MODULE, {"cluster_name": "vpc-it", "id": vpc_id, "state": "absent"})
    assert deleted["changed"] is False
    mutating = [(r["service"], r["operation"]) for r in aws.mutating_requests()]
    assert mutating == [("ec2", "CreateVpc")]  # only the test's own create
    assert ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0] == before


def test_delete_removes_what_it_owns(aws, run_module):
    run_module(MODULE, {"cluster_name": "vpc-it"})
    check = run_module(MODULE, {"cluster_name": "vpc-it", "state": "absent"}, check=True)
    assert [p["call"] for p in check["plan"]] == [
        "ec2:DetachInternetGateway",
        "ec2:DeleteInternetGateway",
        "ec2:DeleteVpc",
    ]
    assert owned_vpcs(aws.client("ec2"))

    result = run_module(MODULE, {"cluster_name": "vpc-it", "state": "absent"})
    assert result["changed"] is True and result["vpc"] is None
    ec2 = aws.client("ec2")
    assert owned_vpcs(ec2) == []
    assert ec2.describe_internet_gateways(Filters=[{"Name": "tag-key", "Values": [OWNER]}])["InternetGateways"] == []
    again = run_module(MODULE, {"cluster_name": "vpc-it", "state": "absent"})
    assert again["changed"] is False


def test_bad_input_fails_naming_the_field_before_any_request(aws, run_module):
    for args, field in [
        ({"cluster_name": "Bad_Name"}, "cluster_name"),
        ({"cluster_name": "vpc-it", "cidr_block": "10.0.0.0/8"}, "cidr_block"),
        ({"cluster_name": "vpc-it", "cidr_block": "10.0.0/16"}, "cidr_block"),
        ({"cluster_name": "vpc-it", "secondary_cidr_blocks": ["10.0.128.0/17"]}, "secondary_cidr_blocks[0]"),
        ({"cluster_name": "vpc-it", "id": "vpc-nothex"}, "id"),
        ({"cluster_name": "vpc-it", "additional_tags": {"aws:x": "y"}}, "additional_tags.aws:x"),
        ({"cluster_name": "vpc-it", "identity": {"role_arn": "nope"}}, "identity.role_arn"),
        ({"cluster_name": "vpc-it", "shared_reads": ["k"]}, "shared_reads"),
        ({"cluster_name": "vpc-it", "shared_reads": "not what capa_step packs"}, "shared_reads"),
    ]:
        result = run_module(MODULE, args)
        assert result.get("failed") is True, args
        assert result["field"] == field and result["msg"].startswith(field), result["msg"]
        assert result["api_calls"] == {}
    assert aws.requests() == []


def test_identity_assumes_the_role_and_lands_in_its_account(aws, run_module):
    """moto gives an assumed role in another account id its own backend: the VPC must land there only."""
    role_arn = "arn:aws:iam::111111111111:role/team-a"
    result = run_module(MODULE, {"cluster_name": "vpc-it", "identity": {"role_arn": role_arn, "external_id": "x1"}})
    assert result["changed"] is True
    assert result["api_calls"]["sts:AssumeRole"] == 1
    assert owned_vpcs(aws.client("ec2")) == []  # nothing in the caller's own account
    credentials = aws.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="check")["Credentials"]

    other = aws.client("ec2", credentials=credentials)
    assert [v["VpcId"] for v in owned_vpcs(other)] == [result["vpc"]["id"]]
