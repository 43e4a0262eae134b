# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Pure decisions of the control-plane load balancer tier: names, spec checks, subnets, desired state, drift."""

from __future__ import annotations

import random

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.network import elb
from ansible_collections.clusterapi.aws.plugins.module_utils.network.elb_plan import (
    ADDITIONAL_TARGET_GROUP_PREFIX,
    API_TARGET_GROUP_PREFIX,
    LbSpec,
    Listener,
    Subnet,
    attribute_drift,
    base36_truncated_hash,
    choose_subnets,
    classic_attribute_drift,
    classic_attributes,
    classic_health_check,
    classic_listeners,
    forwards_to,
    generate_lb_name,
    health_check_drift,
    listener_drift,
    match_target_group,
    parse_spec,
    set_drift,
    target_group_attributes,
    target_group_health_check,
    target_group_name,
)


# names -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        # CAPA's own expectations (pkg/cloud/services/elb TestGenerateELBName).
        ("test", "test-apiserver"),
        ("0123456789012345678901", "0123456789012345678901-apiserver"),  # exactly 32 characters: kept
        ("01234567890123456789012", "26o3cjil5at5qn27vukn5x09b3ql-k8s"),  # 33: hashed
        ("anotherverylongtoolongname", "t8gnrbbifaaf5d0k4xmwui3xwvip-k8s"),
        ("anotherverylongtoolongnameanotherverylongtoolongname", "tph1huzox1f10z9ow1inrootjws8-k8s"),
        ("a.b", "a-b-apiserver"),
    ],
)
def test_generate_lb_name_matches_capa(cluster, expected):
    name = generate_lb_name(cluster)
    assert name == expected
    assert len(name) <= 32


def test_base36_truncated_hash_maps_each_blake2b_byte_mod_36():
    value = base36_truncated_hash("01234567890123456789012", 28)
    assert len(value) == 28
    assert set(value) <= set("0123456789abcdefghijklmnopqrstuvwxyz")
    assert value == "26o3cjil5at5qn27vukn5x09b3ql"
    assert base36_truncated_hash("x", 5) != base36_truncated_hash("y", 5)


def test_target_group_name_is_prefix_and_five_lowercase_alphanumerics():
    name = target_group_name(API_TARGET_GROUP_PREFIX, random.Random(1))
    assert name.startswith(API_TARGET_GROUP_PREFIX)
    suffix = name[len(API_TARGET_GROUP_PREFIX) :]
    assert len(suffix) == 5 and suffix.isalnum() and suffix == suffix.lower()
    assert len(target_group_name(ADDITIONAL_TARGET_GROUP_PREFIX)) <= 32


# spec ------------------------------------------------------------------------------------------------------------
BASE = {
    "state": "present",
    "vpc_id": "vpc-0123456789abcdef0",
    "subnets": [{"id": "subnet-0123456789abcdef0", "availability_zone": "us-east-1a", "is_public": True}],
    "security_group_ids": ["sg-0123456789abcdef0"],
}


# capa_elb's argument spec, with the option of every module the tier reads: parameters as the module gets them.
MODULE_SPEC = {"state": {"type": "str", "default": "present"}, **elb.module_argument_spec()}


def _spec(**extra):
    return parse_spec(validated(MODULE_SPEC, {**BASE, **extra}), "demo")


def test_defaults_are_capas():
    spec = _spec()
    lb = spec.primary
    assert (lb.type, lb.name, lb.scheme, lb.health_check_protocol, lb.api_server_port) == (
        "classic",
        "demo-apiserver",
        "internet-facing",
        "TCP",
        6443,
    )
    assert spec.secondary is None
    assert _spec(type="nlb").primary.name == "demo-apiserver"  # no namespace here: the cluster name for both


def test_subnets_accept_capa_subnet_results_with_extra_keys():
    spec = _spec(
        subnets=[
            {
                "id": "planned:subnet:demo-subnet-public-us-east-1a",
                "availability_zone": "us-east-1a",
                "is_public": True,
                "cidr_block": "10.0.0.0/20",
                "managed": True,
                "tags": {"Name": "x"},
            }
        ]
    )
    assert spec.subnets == (Subnet("planned:subnet:demo-subnet-public-us-east-1a", "us-east-1a", True),)


def test_secondary_is_an_nlb_with_its_own_name_and_scheme():
    spec = _spec(type="nlb", secondary={"enabled": True, "name": "demo-internal"})
    assert spec.secondary.type == "nlb" and spec.secondary.scheme == "internal"
    assert [lb.name for lb in spec.load_balancers] == ["demo-apiserver", "demo-internal"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"type": "external"}, "name"),
        ({"additional_listeners": [{"port": 9345, "protocol": "TCP"}]}, "additional_listeners"),
        (
            {"type": "nlb", "additional_listeners": [{"port": 9345, "protocol": "UDP"}]},
            "additional_listeners[0].protocol",
        ),
        ({"type": "nlb", "additional_listeners": [{"port": 6443}]}, "additional_listeners[0].port"),
        ({"type": "nlb", "additional_listeners": [{"port": 70000}]}, "additional_listeners[0].port"),
        ({"secondary": {"enabled": True}}, "secondary.name"),
        ({"secondary": {"enabled": True, "name": "demo-apiserver"}}, "secondary.name"),
        ({"secondary": {"enabled": True, "name": "other", "scheme": "internet-facing"}}, "secondary.scheme"),
        ({"type": "disabled", "secondary": {"enabled": True, "name": "other"}}, "secondary.enabled"),
        ({"name": "a" * 33}, "name"),
        ({"name": "-bad"}, "name"),
        ({"name": "internal-x"}, "name"),
        ({"api_server_port": 0}, "api_server_port"),
        ({"vpc_id": None}, "vpc_id"),
        ({"vpc_id": "vpc-nothex"}, "vpc_id"),
        ({"subnets": []}, "subnets"),
        ({"subnets": [{"availability_zone": "us-east-1a"}]}, "subnets[0].id"),
        ({"subnets": [{"id": "subnet-0123456789abcdef0"}]}, "subnets[0].availability_zone"),
        ({"security_group_ids": []}, "security_group_ids"),
        ({"security_group_ids": ["nope"]}, "security_group_ids[0]"),
    ],
)
def test_bad_input(extra, field):
    with pytest.raises(SpecError) as error:
        _spec(**extra)
    assert error.value.field == field


def test_absent_and_unmanaged_types_need_no_network():
    parse_spec(validated(MODULE_SPEC, {"state": "absent"}), "demo")
    parse_spec(validated(MODULE_SPEC, {"state": "present", "type": "disabled"}), "demo")
    parse_spec(validated(MODULE_SPEC, {"state": "present", "type": "external", "name": "byo"}), "demo")


# subnets ---------------------------------------------------------------------------------------------------------
SUBNETS = [
    Subnet("subnet-pub-a1", "us-east-1a", True),
    Subnet("subnet-pub-a2", "us-east-1a", True),
    Subnet("subnet-prv-a", "us-east-1a", False),
    Subnet("subnet-pub-b", "us-east-1b", True),
    Subnet("subnet-prv-b", "us-east-1b", False),
    Subnet("subnet-prv-c", "us-east-1c", False),
]


@pytest.mark.parametrize(
    ("subnets", "scheme", "expected"),
    [
        (SUBNETS, "internet-facing", ["subnet-pub-a1", "subnet-pub-b"]),
        (SUBNETS, "internal", ["subnet-prv-a", "subnet-prv-b", "subnet-prv-c"]),
        ([s for s in SUBNETS if s.is_public], "internal", ["subnet-pub-a1", "subnet-pub-b"]),  # no private: public
        ([s for s in SUBNETS if not s.is_public], "internet-facing", []),
    ],
)
def test_choose_subnets_one_per_zone(subnets, scheme, expected):
    assert [s.id for s in choose_subnets(subnets, scheme)] == expected


# classic desired state and drift -------------------------------------------------------------------------------
LB = LbSpec(label="primary", type="classic", name="demo-apiserver", scheme="internet-facing")


def test_classic_desired_state():
    assert classic_listeners(LbSpec("primary", "classic", "x", "internal", api_server_port=443)) == [
        {"Protocol": "TCP", "LoadBalancerPort": 443, "InstanceProtocol": "TCP", "InstancePort": 6443}
    ]
    assert classic_health_check(LB) == {
        "Target": "TCP:6443",
        "Interval": 5,
        "Timeout": 4,
        "HealthyThreshold": 2,
        "UnhealthyThreshold": 6,
    }
    https = LbSpec("primary", "classic", "x", "internet-facing", health_check_protocol="HTTPS")
    assert classic_health_check(https)["Target"] == "HTTPS:6443/readyz"
    assert classic_attributes(LB) == {
        "CrossZoneLoadBalancing": {"Enabled": False},
        "ConnectionSettings": {"IdleTimeout": 600},
    }


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (
            {
                "CrossZoneLoadBalancing": {"Enabled": False},
                "ConnectionSettings": {"IdleTimeout": 600},
                "AccessLog": {"Enabled": False},
            },
            [],
        ),
        (
            {"CrossZoneLoadBalancing": {"Enabled": True}, "ConnectionSettings": {"IdleTimeout": 600}},
            ["CrossZoneLoadBalancing"],
        ),
        (
            {"CrossZoneLoadBalancing": {"Enabled": False}, "ConnectionSettings": {"IdleTimeout": 60}},
            ["ConnectionSettings"],
        ),
        (None, ["CrossZoneLoadBalancing", "ConnectionSettings"]),
    ],
)
def test_classic_attribute_drift(current, expected):
    assert classic_attribute_drift(current, classic_attributes(LB)) == expected


def test_health_check_drift_names_the_keys_and_treats_missing_as_drift():
    desired = classic_health_check(LB)
    assert health_check_drift(dict(desired), desired) == []
    assert health_check_drift({**desired, "Interval": 30}, desired) == ["Interval"]
    assert health_check_drift(None, desired) == list(desired)  # moto: no HealthCheck until one is configured


def test_listener_drift_replaces_a_changed_listener_and_removes_strangers():
    desired = classic_listeners(LB)
    same = [{"Protocol": "tcp", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 6443}]
    assert listener_drift(same, desired) == ([], [])
    wrong_port = [{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 8443}]
    assert listener_drift(wrong_port, desired) == ([6443], desired)
    extra = same + [{"Protocol": "TCP", "LoadBalancerPort": 22, "InstanceProtocol": "TCP", "InstancePort": 22}]
    assert listener_drift(extra, desired) == ([22], [])
    assert listener_drift([], desired) == ([], desired)


def test_set_drift_ignores_order():
    assert set_drift(["b", "a"], ["a", "b"]) == ([], [])
    assert set_drift(["a", "c"], ["a", "b"]) == (["c"], ["b"])


# NLB desired state and drift -----------------------------------------------------------------------------------
def test_target_group_attributes_turn_client_ip_preservation_off_unless_asked():
    assert target_group_attributes(LB) == {
        "target_health_state.unhealthy.connection_termination.enabled": "false",
        "target_health_state.unhealthy.draining_interval_seconds": "300",
        "preserve_client_ip.enabled": "false",
    }
    keep = LbSpec("primary", "nlb", "x", "internal", preserve_client_ip=True)
    assert target_group_attributes(keep)["preserve_client_ip.enabled"] == "true"


def test_attribute_drift_compares_strings_case_insensitively():
    desired = {"a": "false", "b": "300"}
    assert attribute_drift({"a": "False", "b": "300", "c": "x"}, desired) == {}
    assert attribute_drift({"a": "true"}, desired) == {"a": "false", "b": "300"}


def test_target_group_health_checks():
    nlb = LbSpec("primary", "nlb", "x", "internet-facing", health_check_protocol="HTTPS", api_server_port=443)
    [api] = nlb.listeners
    assert (api.port, api.target_port) == (443, 6443)
    assert target_group_health_check(nlb, api) == {
        "HealthCheckProtocol": "HTTPS",
        "HealthCheckPort": "6443",
        "HealthCheckIntervalSeconds": 5,
        "HealthCheckTimeoutSeconds": 4,
        "HealthyThresholdCount": 2,
        "UnhealthyThresholdCount": 6,
        "HealthCheckPath": "/readyz",
    }
    tcp = LbSpec("primary", "nlb", "x", "internet-facing")
    assert "HealthCheckPath" not in target_group_health_check(tcp, tcp.listeners[0])
    extra = Listener(9345, 9345, ADDITIONAL_TARGET_GROUP_PREFIX)
    assert target_group_health_check(tcp, extra) == {"HealthCheckProtocol": "TCP", "HealthCheckPort": "9345"}


def test_target_groups_are_matched_by_prefix_port_and_protocol():
    groups = [
        {"TargetGroupName": "apiserver-target-abcde", "Port": 6443, "Protocol": "TCP", "TargetGroupArn": "tg1"},
        {"TargetGroupName": "additional-listener-x1y2z", "Port": 9345, "Protocol": "TCP", "TargetGroupArn": "tg2"},
        {"TargetGroupName": "someone-else", "Port": 6443, "Protocol": "TCP", "TargetGroupArn": "tg3"},
    ]
    api = Listener(6443, 6443, API_TARGET_GROUP_PREFIX)
    assert match_target_group(groups, api)["TargetGroupArn"] == "tg1"
    assert match_target_group(groups, api, taken=["tg1"]) is None
    assert match_target_group(groups, Listener(9345, 9345, ADDITIONAL_TARGET_GROUP_PREFIX))["TargetGroupArn"] == "tg2"
    assert match_target_group(groups, Listener(9346, 9346, ADDITIONAL_TARGET_GROUP_PREFIX)) is None


def test_forwards_to_reads_both_action_shapes():
    assert forwards_to({"DefaultActions": [{"Type": "forward", "TargetGroupArn": "tg1"}]}) == "tg1"
    both = {"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": "tg2"}]}}
    assert forwards_to({"DefaultActions": [both]}) == "tg2"
    assert forwards_to({"DefaultActions": [{"Type": "fixed-response"}]}) is None
