"""Bad input matrix: wrong cluster specs fail through the real entry point, naming the field, before AWS is asked.

``test_bad_specs_fail_before_any_request`` puts every spec-only mistake in ONE inventory (a host per bad spec) and
runs ``playbooks/site.yml`` once: each host must fail on its own with a message naming the field, the run as a whole
fails, and the moto server's request counter stays EMPTY (not a single request, read-only ones included).

Some mistakes can only be seen against what exists: an immutable field changed (a managed VPC's primary CIDR block,
a subnet's CIDR block, the control-plane load balancer's type) or a Kubernetes version that skips a minor from what
the machines run (kubeadm upgrades one minor at a time; the running version is the tag the machines were made with).
``test_changes_the_current_state_forbids`` builds a small cluster, then runs site.yml once with a host per such
change. Deviation, said plainly: these refusals come after the read-only describes that learn the current state
(nothing else records it), so the assertion is ZERO MUTATING requests and only Describe/List/Get ones, not zero
requests - the same deviation docs/docsite/rst/development.rst documents for EKS downgrades (tested in
test_eks_cluster.py). An EKS jump of two minors is not a mistake: like CAPA, capa_eks_cluster steps through each
minor (tests/unit/plugins/module_utils/eks/test_control_plane.py).

Not in the matrix because the spec has no such option: IPv6 (the collection builds IPv4 networks only).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
FORKS = {"ANSIBLE_FORKS": "10"}

POOL = {"name": "pool-0", "min_size": 1, "max_size": 3}
MD = {"name": "md-0"}
SUBNETS = [
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True},
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24"},
]

# (what is wrong, overrides of a valid one-control-plane spec, texts the failure must contain: the field first)
BAD: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # types
    (
        "replicas is a word",
        {"control_plane": {"replicas": "three"}},
        ("'replicas'", "capa_cluster -> control_plane", "int"),
    ),
    ("bool is a word", {"bastion": {"enabled": "maybe"}}, ("'enabled'", "capa_cluster -> bastion", "bool")),
    ("list where a dict goes", {"network": {"vpc": ["10.0.0.0/16"]}}, ("'vpc'", "capa_cluster -> network", "dict")),
    (
        "dict where a list goes",
        {"machine_deployments": {"name": "md-0"}},
        ("'machine_deployments'", "capa_cluster", "list"),
    ),
    (
        "choice not offered",
        {"control_plane_load_balancer": {"type": "alb"}},
        ("type", "capa_cluster -> control_plane_load_balancer", "alb"),
    ),
    # ranges
    ("negative control-plane replicas", {"control_plane": {"replicas": -1}}, ("capa_cluster.control_plane.replicas",)),
    ("even control-plane replicas", {"control_plane": {"replicas": 2}}, ("capa_cluster.control_plane.replicas",)),
    (
        "negative worker replicas",
        {"machine_deployments": [{**MD, "replicas": -2}]},
        ("capa_cluster.machine_deployments[0].replicas",),
    ),
    # the machine health check (MachineHealthCheck's fields)
    (
        "max_unhealthy over 100%",
        {"control_plane": {"max_unhealthy": "150%"}},
        ("capa_cluster.control_plane.max_unhealthy",),
    ),
    (
        "unhealthy_range not a range",
        {"machine_deployments": [{**MD, "unhealthy_range": "[3-1]"}]},
        ("capa_cluster.machine_deployments[0].unhealthy_range", "[3-1]"),
    ),
    (
        "negative node condition timeout",
        {
            "machine_deployments": [
                {**MD, "unhealthy_node_conditions": [{"type": "Ready", "status": "False", "timeout": -1}]}
            ]
        },
        ("capa_cluster.machine_deployments[0].unhealthy_node_conditions[0].timeout",),
    ),
    (
        "node condition status not offered",
        {
            "machine_deployments": [
                {**MD, "unhealthy_node_conditions": [{"type": "Ready", "status": "Down", "timeout": 60}]}
            ]
        },
        ("status", "unhealthy_node_conditions", "Down"),
    ),
    (
        "negative node_startup_timeout",
        {"control_plane": {"node_startup_timeout": -60}},
        ("capa_cluster.control_plane.node_startup_timeout",),
    ),
    # join tokens (CABPK's --bootstrap-token-ttl): a machine needs minutes to join, and no token lives for ever
    (
        "bootstrap token shorter than a boot",
        {"bootstrap_token_ttl": 60},
        ("capa_cluster.bootstrap_token_ttl", "between 300 and 604800"),
    ),
    (
        "certificate window shorter than KCP allows",
        {"control_plane": {"rollout_before_certificates_expiry_days": 3}},
        ("capa_cluster.control_plane.rollout_before_certificates_expiry_days", "at least 7"),
    ),
    # etcd snapshots: the bucket's name and retention are checked before a bucket is asked for
    (
        "snapshot bucket that is not a bucket name",
        {"etcd_backup": {"enabled": True, "bucket": "Etcd_Snapshots"}},
        ("capa_cluster.etcd_backup.bucket", "is not a bucket name"),
    ),
    (
        "snapshot retention of 0 days",
        {"etcd_backup": {"enabled": True, "retention_days": 0}},
        ("capa_cluster.etcd_backup.retention_days", "between 1 and 3650"),
    ),
    (
        "default snapshot bucket name too long",
        {"name": "a-cluster-name-long-enough-to-overflow", "etcd_backup": {"enabled": True}},
        ("capa_cluster.etcd_backup.bucket", "longer than 63"),
    ),
    (
        "etcd snapshots of an EKS cluster",
        {"kind": "eks", "etcd_backup": {"enabled": True}},
        ("capa_cluster.etcd_backup", "not used by kind eks"),
    ),
    (
        "pool token longer than a week",
        {"machine_pools": [{**POOL, "bootstrap_token_ttl": 1209600}]},
        ("capa_cluster.machine_pools[0].bootstrap_token_ttl", "between 300 and 604800"),
    ),
    (
        "pool max_size < min_size",
        {"machine_pools": [{**POOL, "min_size": 3, "max_size": 1}]},
        ("capa_cluster.machine_pools[0].max_size",),
    ),
    (
        "pool desired outside min..max",
        {"machine_pools": [{**POOL, "desired_capacity": 7}]},
        ("capa_cluster.machine_pools[0].desired_capacity",),
    ),
    (
        "root volume of 0 GiB",
        {"control_plane": {"root_volume": {"size": 0}}},
        ("capa_cluster.control_plane.root_volume.size",),
    ),
    ("VPC CIDR /29", {"network": {"vpc": {"cidr_block": "10.0.0.0/29"}}}, ("capa_cluster.network.vpc.cidr_block",)),
    ("VPC CIDR /8", {"network": {"vpc": {"cidr_block": "10.0.0.0/8"}}}, ("capa_cluster.network.vpc.cidr_block",)),
    (
        "AZ usage limit 0",
        {"network": {"vpc": {"availability_zone_usage_limit": 0}}},
        ("capa_cluster.network.vpc.availability_zone_usage_limit",),
    ),
    (
        "IMDS hop limit 65",
        {"control_plane": {"imds": {"http_put_response_hop_limit": 65}}},
        ("capa_cluster.control_plane.imds.http_put_response_hop_limit",),
    ),
    (
        "port above 65535",
        {"network": {"additional_node_ingress_rules": [{"from_port": 30000, "to_port": 70000}]}},
        ("capa_cluster.network.additional_node_ingress_rules[0].to_port",),
    ),
    # CIDRs
    ("malformed VPC CIDR", {"network": {"vpc": {"cidr_block": "10.0.0/16"}}}, ("capa_cluster.network.vpc.cidr_block",)),
    (
        "subnet outside the VPC",
        {"network": {"subnets": [{**SUBNETS[0], "cidr_block": "10.9.0.0/24"}]}},
        ("capa_cluster.network.subnets[0].cidr_block",),
    ),
    (
        "overlapping subnets",
        {"network": {"subnets": [SUBNETS[0], {**SUBNETS[1], "cidr_block": "10.0.0.128/25"}]}},
        ("capa_cluster.network.subnets[1].cidr_block",),
    ),
    (
        "secondary CIDR overlapping the primary",
        {"network": {"vpc": {"secondary_cidr_blocks": ["10.0.128.0/17"]}}},
        ("capa_cluster.network.vpc.secondary_cidr_blocks[0]",),
    ),
    (
        "bastion allowed CIDR malformed",
        {"bastion": {"enabled": True, "allowed_cidr_blocks": ["203.0.113.0/33"]}},
        ("capa_cluster.bastion.allowed_cidr_blocks[0]",),
    ),
    (
        "NodePort source with host bits",
        {"network": {"node_port_ingress_cidr_blocks": ["10.0.0.1/16"]}},
        ("capa_cluster.network.node_port_ingress_cidr_blocks[0]",),
    ),
    # names
    ("cluster name with upper case", {"name": "Bad-It"}, ("capa_cluster.name",)),
    ("cluster name with underscore", {"name": "bad_it"}, ("capa_cluster.name",)),
    ("cluster name of 41 characters", {"name": "b" * 41}, ("capa_cluster.name",)),
    (
        "machine deployment named twice",
        {"machine_deployments": [MD, MD]},
        ("capa_cluster.machine_deployments[1].name",),
    ),
    (
        "machine deployment name with a dot",
        {"machine_deployments": [{"name": "md.0"}]},
        ("capa_cluster.machine_deployments[0].name",),
    ),
    (
        "machine pool name too short",
        {"machine_pools": [{**POOL, "name": "mp"}]},
        ("capa_cluster.machine_pools[0].name",),
    ),
    (
        "load balancer name starting with -",
        {"control_plane_load_balancer": {"name": "-api"}},
        ("capa_cluster.control_plane_load_balancer.name",),
    ),
    ("reserved tag prefix", {"additional_tags": {"aws:team": "x"}}, ("capa_cluster.additional_tags.aws:team",)),
    # AZs
    (
        "subnet AZ of another region",
        {"network": {"subnets": [{**SUBNETS[0], "availability_zone": "eu-west-1a"}]}},
        ("capa_cluster.network.subnets[0].availability_zone",),
    ),
    (
        "failure domain of another region",
        {"machine_deployments": [{**MD, "failure_domains": ["us-west-2a"]}]},
        ("capa_cluster.machine_deployments[0].failure_domains[0]",),
    ),
    (
        "failure domain listed twice",
        {"machine_deployments": [{**MD, "failure_domains": ["us-east-1a", "us-east-1a"]}]},
        ("capa_cluster.machine_deployments[0].failure_domains[1]",),
    ),
    (
        "pool failure domain of another region",
        {"machine_pools": [{**POOL, "failure_domains": ["us-east-2b"]}]},
        ("capa_cluster.machine_pools[0].failure_domains[0]",),
    ),
    # conflicting options
    (
        "classic load balancer with an NLB-only option",
        {"control_plane_load_balancer": {"type": "classic", "preserve_client_ip": True}},
        ("capa_cluster.control_plane_load_balancer.preserve_client_ip",),
    ),
    (
        "classic load balancer with additional listeners",
        {"control_plane_load_balancer": {"additional_listeners": [{"port": 8443}]}},
        ("capa_cluster.control_plane_load_balancer.additional_listeners",),
    ),
    (
        "external load balancer without a name",
        {"control_plane_load_balancer": {"type": "external"}},
        ("capa_cluster.control_plane_load_balancer.name",),
    ),
    (
        "no load balancer and no endpoint",
        {"control_plane_load_balancer": {"type": "disabled"}},
        ("capa_cluster.control_plane_endpoint.host",),
    ),
    (
        "spot and a mixed instances policy",
        {"machine_pools": [{**POOL, "spot_market_options": {}, "mixed_instances_policy": {"overrides": []}}]},
        ("capa_cluster.machine_pools[0]", "exclude each other"),
    ),
    (
        "on-demand share above 100 %",
        {
            "machine_pools": [
                {
                    **POOL,
                    "mixed_instances_policy": {
                        "instances_distribution": {"on_demand_percentage_above_base_capacity": 150}
                    },
                }
            ]
        },
        (
            "capa_cluster.machine_pools[0].mixed_instances_policy.instances_distribution.on_demand_percentage_above_base_capacity",
        ),
    ),
    (
        "spot on a dedicated host",
        {"machine_deployments": [{**MD, "tenancy": "host", "spot_market_options": {}}]},
        ("capa_cluster.machine_deployments[0].spot_market_options",),
    ),
    (
        "spot price that is not a price",
        {"machine_deployments": [{**MD, "spot_market_options": {"max_price": "cheap"}}]},
        ("capa_cluster.machine_deployments[0].spot_market_options.max_price",),
    ),
    (
        "externally managed replicas with desired outside min..max",
        {"machine_pools": [{**POOL, "externally_managed_replicas": True, "desired_capacity": 10}]},
        ("capa_cluster.machine_pools[0].desired_capacity",),
    ),
    (
        "fleet without instance types",
        {"machine_pools": [{**POOL, "kind": "fleet"}]},
        ("capa_cluster.machine_pools[0].mixed_instances_policy.overrides",),
    ),
    (
        "eks kind with control-plane machines",
        {"kind": "eks", "control_plane": {"replicas": 3}},
        ("capa_cluster.control_plane",),
    ),
    (
        "eks kind with machine deployments",
        {"kind": "eks", "machine_deployments": [MD]},
        ("capa_cluster.machine_deployments",),
    ),
    ("eks section on an unmanaged cluster", {"eks": {"node_groups": [{"name": "ng-0"}]}}, ("capa_cluster.eks",)),
    (
        "rollout that can never start",
        {"machine_deployments": [{**MD, "rollout": {"max_surge": 0, "max_unavailable": 0}}]},
        ("capa_cluster.machine_deployments[0].rollout",),
    ),
    (
        "control-plane surge of 2",
        {"control_plane": {"rollout": {"max_surge": 2}}},
        ("capa_cluster.control_plane.rollout.max_surge",),
    ),
    (
        "VPC brought without its subnets",
        {"network": {"vpc": {"id": "vpc-0123456789abcdef0"}}},
        ("capa_cluster.network.subnets",),
    ),
    (
        "security group override for an unknown role",
        {"network": {"security_group_overrides": {"web": "sg-0123456789abcdef0"}}},
        ("capa_cluster.network.security_group_overrides.web",),
    ),
    # unknown keys, at several depths
    ("unknown top-level key", {"nodes": 3}, ("capa_cluster.nodes.",)),
    ("unknown key in network.vpc", {"network": {"vpc": {"cidr": "10.0.0.0/16"}}}, ("capa_cluster.network.vpc.cidr.",)),
    (
        "unknown key in a subnet",
        {"network": {"subnets": [{**SUBNETS[0], "public": True}]}},
        ("capa_cluster.network.subnets.public.",),
    ),
    (
        "unknown key in a machine deployment's rollout",
        {"machine_deployments": [{**MD, "rollout": {"strategy": "surge"}}]},
        ("capa_cluster.machine_deployments.rollout.strategy.",),
    ),
    (
        "unknown key in a CNI rule",
        {"network": {"cni_ingress_rules": [{"protocol": "tcp", "from_port": 179, "to_port": 179, "cidr": "x"}]}},
        ("capa_cluster.network.cni_ingress_rules[0]", "cidr"),
    ),
    # versions the spec alone shows to be impossible
    ("Kubernetes version without a patch", {"kubernetes_version": "v1.31"}, ("capa_cluster.kubernetes_version",)),
    ("EKS version with a patch", {"kind": "eks", "eks": {"version": "1.31.2"}}, ("capa_cluster.eks.version",)),
    (
        "EKS node group newer than its control plane",
        {"kind": "eks", "eks": {"version": "1.30", "node_groups": [{"name": "ng-0", "version": "1.31"}]}},
        ("capa_cluster.eks.node_groups[0].version",),
    ),
    (
        "EKS node group 4 minors behind",
        {"kind": "eks", "eks": {"version": "1.31", "node_groups": [{"name": "ng-0", "version": "1.27"}]}},
        ("capa_cluster.eks.node_groups[0].version",),
    ),
]


def inventory(tmp_path: Path, hosts: dict[str, dict[str, Any]]) -> Path:
    data = {
        "capa_clusters": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "capa_output_dir": str(tmp_path / "out"),
            },
            "hosts": {host: {"capa_cluster": spec} for host, spec in hosts.items()},
        }
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def failures(result: Any) -> dict[str, list[str]]:
    """Each host's failure messages (the task's msg and, for SpecError, its field)."""
    found: dict[str, list[str]] = {}
    for task in result.tasks:
        if task.failed:
            found.setdefault(task.host, []).append(f"{task.result.get('msg', '')} field={task.result.get('field', '')}")
    return found


def test_bad_specs_fail_before_any_request(aws, run_playbook, tmp_path):
    hosts = {f"bad-{index:02d}": {"name": "bad-it", "region": "us-east-1", **case[1]} for index, case in enumerate(BAD)}
    started = time.monotonic()
    result = run_playbook(SITE, inventory=inventory(tmp_path, hosts), env=FORKS, expect_rc=None)
    seconds = time.monotonic() - started
    assert result.rc != 0, result.describe()
    failed = failures(result)
    problems = []
    for index, (what, _spec, texts) in enumerate(BAD):
        host = f"bad-{index:02d}"
        messages = failed.get(host, [])
        if len(messages) != 1 or not all(text in messages[0] for text in texts):
            problems.append(f"{host} ({what}): expected {texts} in one failure, got {messages}")
        if result.stats[host]["failed"] != 1 or result.stats[host]["changed"] != 0:
            problems.append(f"{host} ({what}): stats {result.stats[host]}")
    assert problems == [], "\n".join(problems)
    assert aws.requests() == []
    print(f"bad input: {len(BAD)} specs rejected in one site.yml run ({seconds:.1f} s), AWS requests: 0")


def test_changes_the_current_state_forbids(aws, run_playbook, tmp_path):
    """Immutable fields and a skipped kubeadm minor, against a built cluster: refused after reads, before changes."""
    base = {
        "name": "imm-it",
        "region": "us-east-1",
        "kubernetes_version": "v1.31.2",
        "network": {"subnets": SUBNETS, "nat_gateways": "none"},
    }
    run_playbook(SITE, inventory=inventory(tmp_path, {"imm-it": base}))
    changes = {
        "vpc-cidr": (
            {"network": {**base["network"], "vpc": {"cidr_block": "10.0.0.0/17"}}},
            ("cidr_block", "primary CIDR block of a VPC cannot change"),
        ),
        "subnet-cidr": (
            {"network": {**base["network"], "subnets": [SUBNETS[0], {**SUBNETS[1], "cidr_block": "10.0.1.0/25"}]}},
            ("subnets[1].cidr_block", "a subnet's CIDR block cannot change"),
        ),
        "lb-type": (
            {"control_plane_load_balancer": {"type": "nlb"}},
            ("type", "load balancer cannot change"),
        ),
        "two-minors": (
            {"kubernetes_version": "v1.33.0"},
            ("kubernetes_version", "upgrade to v1.32 first"),
        ),
        "downgrade": (
            {"kubernetes_version": "v1.30.4"},
            ("kubernetes_version", "cannot downgrade"),
        ),
    }
    hosts = {name: {**base, **change[0]} for name, change in changes.items()}
    aws.reset_requests()
    result = run_playbook(SITE, inventory=inventory(tmp_path, hosts), env=FORKS, expect_rc=None)
    assert result.rc != 0
    failed = failures(result)
    for name, (_overrides, texts) in changes.items():
        messages = failed.get(name, [])
        assert len(messages) == 1 and all(t in messages[0] for t in texts), (name, texts, messages)
    assert aws.mutating_requests() == []
    reads = {f"{r['service']}:{r['operation']}" for r in aws.requests()}
    assert reads and all(op.split(":")[1].startswith(("Describe", "List", "Get", "Simulate")) for op in reads), reads
    print(f"state-dependent bad input: {len(changes)} refused, mutating requests: 0, reads: {sorted(reads)}")
