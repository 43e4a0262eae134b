# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Desired rules per role and the explode/diff of security group ingress (pure functions, no AWS)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.network import security_group
from ansible_collections.clusterapi.aws.plugins.module_utils.network.security_group import (
    Rule,
    desired_rules,
    diff_rules,
    explode_permissions,
    to_permissions,
)


def parse_spec(params: dict[str, Any]) -> security_group.SecurityGroupSpec:
    """The tier's spec of ``params`` as capa_security_group hands them over (its argument spec validated them)."""
    module_spec = {"state": {"type": "str", "default": "present"}, **security_group.module_argument_spec()}
    return security_group.parse_spec(validated(module_spec, params))


IDS = {
    "apiserver-lb": "sg-0000000000000000a",
    "lb": "sg-0000000000000000b",
    "controlplane": "sg-0000000000000000c",
    "node": "sg-0000000000000000d",
    "bastion": "sg-0000000000000000e",
    "node-eks-additional": "sg-0000000000000000f",
}
CP, NODE, APILB, BASTION = IDS["controlplane"], IDS["node"], IDS["apiserver-lb"], IDS["bastion"]


def tcp(port: int, source: str, description: str, to_port: int | None = None) -> tuple:
    kind = "source_security_group_id" if source.startswith("sg-") else "cidr_block"
    return ("tcp", port, to_port or port, kind, source, description)


def as_tuples(rules: set[Rule]) -> set[tuple]:
    return {(r.protocol, r.from_port, r.to_port, r.source_kind, r.source, r.description) for r in rules}


def rules_for(role: str, **params: Any) -> set[tuple]:
    params.setdefault("vpc_cidr_block", "10.0.0.0/16")
    return as_tuples(desired_rules(parse_spec(params), IDS)[role])


CALICO = {
    ("tcp", 179, 179, "source_security_group_id", CP, "bgp (calico)"),
    ("tcp", 179, 179, "source_security_group_id", NODE, "bgp (calico)"),
    ("4", None, None, "source_security_group_id", CP, "IP-in-IP (calico)"),
    ("4", None, None, "source_security_group_id", NODE, "IP-in-IP (calico)"),
}
CONTROLPLANE_BASE = {
    tcp(6443, APILB, "Kubernetes API"),
    tcp(6443, CP, "Kubernetes API"),
    tcp(6443, NODE, "Kubernetes API"),
    tcp(2379, CP, "etcd"),
    tcp(2380, CP, "etcd peer"),
}
NODE_BASE = {
    tcp(30000, "0.0.0.0/0", "Node Port Services", 32767),
    tcp(10250, CP, "Kubelet API"),
    tcp(10250, NODE, "Kubelet API"),
}


@pytest.mark.parametrize(
    "role, params, expected",
    [
        ("controlplane", {}, CONTROLPLANE_BASE | CALICO),
        ("controlplane", {"cni_ingress_rules": "none"}, CONTROLPLANE_BASE),
        (
            "controlplane",
            {"cni_ingress_rules": "none", "bastion": {"enabled": True}},
            CONTROLPLANE_BASE | {tcp(22, BASTION, "SSH")},
        ),
        (
            "controlplane",
            {"cni_ingress_rules": [{"description": "vxlan", "protocol": "udp", "from_port": 8472, "to_port": 8472}]},
            CONTROLPLANE_BASE
            | {
                ("udp", 8472, 8472, "source_security_group_id", CP, "vxlan"),
                ("udp", 8472, 8472, "source_security_group_id", NODE, "vxlan"),
            },
        ),
        (
            # No source at all: CAPA falls back to the controlplane group.
            "controlplane",
            {
                "cni_ingress_rules": "none",
                "additional_control_plane_ingress_rules": [
                    {"description": "x", "protocol": "tcp", "from_port": 8080, "to_port": 8081}
                ],
            },
            CONTROLPLANE_BASE | {tcp(8080, CP, "x", 8081)},
        ),
        ("node", {}, NODE_BASE | CALICO),
        (
            "node",
            {
                "cni_ingress_rules": "none",
                "bastion": {"enabled": True},
                "node_port_ingress_cidr_blocks": ["10.1.0.0/16", "10.2.0.0/16"],
                "additional_node_ingress_rules": [
                    {
                        "description": "multi",
                        "protocol": "tcp",
                        "from_port": 9100,
                        "to_port": 9100,
                        "cidr_blocks": ["192.168.0.0/24"],
                        "source_security_group_ids": ["sg-0123456789abcdef0"],
                        "source_security_group_roles": ["bastion"],
                    },
                    {
                        "description": "all",
                        "protocol": "-1",
                        "from_port": 1,
                        "to_port": 2,
                        "cidr_blocks": ["10.9.0.0/16"],
                    },
                ],
            },
            {
                tcp(30000, "10.1.0.0/16", "Node Port Services", 32767),
                tcp(30000, "10.2.0.0/16", "Node Port Services", 32767),
                tcp(10250, CP, "Kubelet API"),
                tcp(10250, NODE, "Kubelet API"),
                tcp(22, BASTION, "SSH"),
                tcp(9100, "192.168.0.0/24", "multi"),
                tcp(9100, "sg-0123456789abcdef0", "multi"),
                tcp(9100, BASTION, "multi"),
                ("-1", None, None, "cidr_block", "10.9.0.0/16", "all"),
            },
        ),
        ("apiserver-lb", {}, {tcp(6443, "0.0.0.0/0", "Kubernetes API")}),
        (
            "apiserver-lb",
            {"nat_gateway_ips": ["198.51.100.1", "198.51.100.2"], "api_server_port": 443},
            {
                tcp(443, "198.51.100.1/32", "Kubernetes API"),
                tcp(443, "198.51.100.2/32", "Kubernetes API"),
                tcp(443, "0.0.0.0/0", "Kubernetes API"),
            },
        ),
        (
            # A NAT address still planned: CAPA's fallback, everyone.
            "apiserver-lb",
            {"nat_gateway_ips": ["planned:eip:demo-eip-common"]},
            {tcp(6443, "0.0.0.0/0", "Kubernetes API")},
        ),
        (
            "apiserver-lb",
            {
                "nat_gateway_ips": ["198.51.100.1"],
                "control_plane_load_balancer": {
                    "scheme": "internal",
                    "ingress_rules": [
                        {
                            "description": "office",
                            "protocol": "tcp",
                            "from_port": 6443,
                            "to_port": 6443,
                            "cidr_blocks": ["203.0.113.0/24"],
                        }
                    ],
                },
            },
            {tcp(6443, "10.0.0.0/16", "Kubernetes API"), tcp(6443, "203.0.113.0/24", "office")},
        ),
        ("lb", {}, set()),
        (
            "lb",
            {"control_plane_load_balancer": {"type": "nlb", "additional_listeners": [{"port": 8132}]}},
            {
                tcp(6443, "10.0.0.0/16", "Kubernetes API (NLB)"),
                tcp(8132, "10.0.0.0/16", "NLB additional listener 8132"),
            },
        ),
        (
            "lb",
            {"control_plane_load_balancer": {"type": "nlb", "preserve_client_ip": True}},
            {tcp(6443, "0.0.0.0/0", "Kubernetes API (NLB)")},
        ),
        (
            "bastion",
            {"bastion": {"enabled": True, "allowed_cidr_blocks": ["203.0.113.0/24", "198.51.100.0/24"]}},
            {tcp(22, "203.0.113.0/24", "SSH"), tcp(22, "198.51.100.0/24", "SSH")},
        ),
        (
            "node-eks-additional",
            {
                "kind": "eks",
                "bastion": {"enabled": True},
                "additional_control_plane_ingress_rules": [
                    {
                        "description": "x",
                        "protocol": "tcp",
                        "from_port": 443,
                        "to_port": 443,
                        "cidr_blocks": ["10.0.0.0/8"],
                    }
                ],
            },
            {tcp(443, "10.0.0.0/8", "x"), tcp(22, BASTION, "SSH")},
        ),
    ],
)
def test_desired_rules(role: str, params: dict[str, Any], expected: set[tuple]) -> None:
    assert rules_for(role, **params) == expected


@pytest.mark.parametrize(
    "params, roles",
    [
        ({}, ("apiserver-lb", "lb", "controlplane", "node")),
        ({"bastion": {"enabled": True}}, ("bastion", "apiserver-lb", "lb", "controlplane", "node")),
        ({"kind": "eks"}, ("node-eks-additional",)),
        ({"kind": "eks", "bastion": {"enabled": True}}, ("bastion", "node-eks-additional")),
    ],
)
def test_roles(params: dict[str, Any], roles: tuple[str, ...]) -> None:
    spec = parse_spec(params)
    assert spec.roles == roles
    assert set(desired_rules(spec, IDS)) == set(roles)


RULE = {"description": "d", "protocol": "tcp", "from_port": 1, "to_port": 2}


@pytest.mark.parametrize(
    "params, field",
    [
        ({"additional_node_ingress_rules": [{**RULE, "protocol": "gre"}]}, "additional_node_ingress_rules[0].protocol"),
        ({"additional_node_ingress_rules": [{**RULE, "to_port": 70000}]}, "additional_node_ingress_rules[0].to_port"),
        (
            {"additional_node_ingress_rules": [{**RULE, "from_port": 9, "to_port": 2}]},
            "additional_node_ingress_rules[0]",
        ),
        (
            {"additional_node_ingress_rules": [{**RULE, "from_port": None}]},
            "additional_node_ingress_rules[0].from_port",
        ),
        (
            {"additional_control_plane_ingress_rules": [{**RULE, "cidr_blocks": ["10.0.0.1/8"]}]},
            "additional_control_plane_ingress_rules[0].cidr_blocks[0]",
        ),
        (
            {"additional_node_ingress_rules": [{**RULE, "source_security_group_roles": ["nodes"]}]},
            "additional_node_ingress_rules[0].source_security_group_roles[0]",
        ),
        (
            {"additional_node_ingress_rules": [{**RULE, "source_security_group_roles": ["bastion"]}]},
            "additional_node_ingress_rules[0].source_security_group_roles[0]",
        ),
        (
            {"additional_node_ingress_rules": [{**RULE, "source_security_group_ids": ["sg-xyz"]}]},
            "additional_node_ingress_rules[0].source_security_group_ids[0]",
        ),
        ({"security_group_overrides": {"workers": "sg-0123456789abcdef0"}}, "security_group_overrides.workers"),
        ({"security_group_overrides": {"node": "subnet-0123456789abcdef0"}}, "security_group_overrides.node"),
        ({"node_port_ingress_cidr_blocks": ["nowhere"]}, "node_port_ingress_cidr_blocks[0]"),
        ({"bastion": {"enabled": True, "allowed_cidr_blocks": ["1.2.3.4/33"]}}, "bastion.allowed_cidr_blocks[0]"),
        ({"cni_ingress_rules": "cilium"}, "cni_ingress_rules"),
        ({"cni_ingress_rules": [{"protocol": "tcp", "from_port": 1}]}, "cni_ingress_rules[0].to_port"),
        ({"nat_gateway_ips": ["300.1.1.1"]}, "nat_gateway_ips[0]"),
        ({"vpc_cidr_block": None, "control_plane_load_balancer": {"scheme": "internal"}}, "vpc_cidr_block"),
        ({"vpc_cidr_block": None, "control_plane_load_balancer": {"type": "nlb"}}, "vpc_cidr_block"),
        ({"kind": "eks", "additional_control_plane_ingress_rules": [RULE]}, "additional_control_plane_ingress_rules"),
    ],
)
def test_bad_input_names_the_field(params: dict[str, Any], field: str) -> None:
    params.setdefault("vpc_cidr_block", "10.0.0.0/16")
    with pytest.raises(SpecError) as caught:
        parse_spec(params)
    assert caught.value.field == field


# explode / diff -------------------------------------------------------------------------------------------------
def test_explode_multi_source_permission() -> None:
    permissions = [
        {
            "IpProtocol": "tcp",
            "FromPort": 22,
            "ToPort": 22,
            "IpRanges": [{"CidrIp": "10.0.0.0/8", "Description": "a"}, {"CidrIp": "192.168.0.0/16"}],
            "Ipv6Ranges": [{"CidrIpv6": "::/0", "Description": "v6"}],
            "PrefixListIds": [{"PrefixListId": "pl-12345678"}],
            "UserIdGroupPairs": [{"GroupId": CP, "UserId": "123456789012", "Description": "b"}],
        }
    ]
    assert as_tuples(explode_permissions(permissions)) == {
        ("tcp", 22, 22, "cidr_block", "10.0.0.0/8", "a"),
        ("tcp", 22, 22, "cidr_block", "192.168.0.0/16", ""),
        ("tcp", 22, 22, "cidr_ipv6", "::/0", "v6"),
        ("tcp", 22, 22, "prefix_list_id", "pl-12345678", ""),
        ("tcp", 22, 22, "source_security_group_id", CP, "b"),
    }


@pytest.mark.parametrize(
    "permission, expected",
    [
        # AWS describes IP-in-IP without ports; some tools send -1 ports: the same rule either way.
        ({"IpProtocol": "4", "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}, ("4", None, None)),
        ({"IpProtocol": "4", "FromPort": -1, "ToPort": -1, "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}, ("4", None, None)),
        ({"IpProtocol": "-1", "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}, ("-1", None, None)),
        ({"IpProtocol": "6", "FromPort": 80, "ToPort": 81, "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}, ("tcp", 80, 81)),
        (
            {"IpProtocol": "icmp", "FromPort": -1, "ToPort": -1, "IpRanges": [{"CidrIp": "10.0.0.0/8"}]},
            ("icmp", -1, -1),
        ),
    ],
)
def test_explode_normalises_protocol_and_ports(permission: dict[str, Any], expected: tuple) -> None:
    (rule,) = explode_permissions([permission])
    assert (rule.protocol, rule.from_port, rule.to_port) == expected


def test_to_permissions_groups_by_protocol_and_ports_and_omits_portless_ports() -> None:
    rules = [
        Rule.make("tcp", 179, 179, "source_security_group_id", CP, "bgp (calico)"),
        Rule.make("tcp", 179, 179, "source_security_group_id", NODE, "bgp (calico)"),
        Rule.make("4", None, None, "source_security_group_id", CP, "IP-in-IP (calico)"),
        Rule.make("tcp", 22, 22, "cidr_block", "0.0.0.0/0", "SSH"),
    ]
    permissions = to_permissions(rules)
    assert permissions == [
        {
            "IpProtocol": "4",
            "UserIdGroupPairs": [{"GroupId": CP, "Description": "IP-in-IP (calico)"}],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 22,
            "ToPort": 22,
            "IpRanges": [{"CidrIp": "0.0.0.0/0", "Description": "SSH"}],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 179,
            "ToPort": 179,
            "UserIdGroupPairs": [
                {"GroupId": CP, "Description": "bgp (calico)"},
                {"GroupId": NODE, "Description": "bgp (calico)"},
            ],
        },
    ]
    # Round trip: what we would send reads back as the same rules.
    assert explode_permissions(permissions) == set(rules)


def test_description_only_change_replaces_the_rule() -> None:
    old = Rule.make("tcp", 22, 22, "cidr_block", "10.0.0.0/8", "old")
    new = Rule.make("tcp", 22, 22, "cidr_block", "10.0.0.0/8", "new")
    keep = Rule.make("tcp", 80, 80, "cidr_block", "10.0.0.0/8", "web")
    assert diff_rules({old, keep}, {new, keep}) == ([old], [new])


def test_diff_of_describe_output_is_idempotent() -> None:
    """A group as DescribeSecurityGroups returns it after our authorisation diffs to nothing."""
    spec = parse_spec({"vpc_cidr_block": "10.0.0.0/16", "bastion": {"enabled": True}})
    desired = desired_rules(spec, IDS)["controlplane"]
    described = [
        {
            "IpProtocol": "tcp",
            "FromPort": 6443,
            "ToPort": 6443,
            "IpRanges": [],
            "Ipv6Ranges": [],
            "PrefixListIds": [],
            "UserIdGroupPairs": [
                {"Description": "Kubernetes API", "GroupId": g, "UserId": "123456789012"} for g in (APILB, CP, NODE)
            ],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 2379,
            "ToPort": 2379,
            "UserIdGroupPairs": [{"Description": "etcd", "GroupId": CP, "UserId": "123456789012"}],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 2380,
            "ToPort": 2380,
            "UserIdGroupPairs": [{"Description": "etcd peer", "GroupId": CP, "UserId": "123456789012"}],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 22,
            "ToPort": 22,
            "UserIdGroupPairs": [{"Description": "SSH", "GroupId": BASTION, "UserId": "123456789012"}],
        },
        {
            "IpProtocol": "tcp",
            "FromPort": 179,
            "ToPort": 179,
            "UserIdGroupPairs": [
                {"Description": "bgp (calico)", "GroupId": g, "UserId": "123456789012"} for g in (CP, NODE)
            ],
        },
        {
            "IpProtocol": "4",
            "UserIdGroupPairs": [
                {"Description": "IP-in-IP (calico)", "GroupId": g, "UserId": "123456789012"} for g in (CP, NODE)
            ],
        },
    ]
    assert diff_rules(explode_permissions(described), desired) == ([], [])
    # One extra source in a permission is exactly one rule to revoke.
    described[1]["IpRanges"] = [{"CidrIp": "0.0.0.0/0"}]
    assert diff_rules(explode_permissions(described), desired) == (
        [Rule.make("tcp", 2379, 2379, "cidr_block", "0.0.0.0/0", "")],
        [],
    )
