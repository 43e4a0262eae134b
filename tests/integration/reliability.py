"""Helpers of the reliability tests (test_faults.py, test_crash_resume.py): fault control, census, figures.

The fault injector lives in tools/moto_server.py (``/_capa/faults``); only requests whose User-Agent carries
``clusterapi.aws`` (the collection's modules) are faulted, so the tests' own boto3 checks never are.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DELETE = REPO / "playbooks/delete.yml"
FIGURES = REPO / ".build" / "reliability"
GROUP_TAG = "clusterapi.aws/machine-group"
LIVE = ["pending", "running", "stopping", "stopped"]


def owner(cluster: str) -> str:
    return f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}"


def tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", []) or []}


# fault control ----------------------------------------------------------------------------------------------------
class Faults:
    """Configure and read the moto server's fault injector."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _post(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(payload or {}).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def configure(self, **config: Any) -> dict[str, Any]:
        return self._post("/_capa/faults", config)

    def off(self) -> dict[str, Any]:
        return self._post("/_capa/faults/reset")

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/_capa/faults", timeout=30) as response:
            return json.loads(response.read())


# inventory and runs -----------------------------------------------------------------------------------------------
def ansible_env(extra: dict[str, str]) -> dict[str, str]:
    """tests/conftest.py's environment for ansible-* subprocesses ("import conftest" finds the integration one
    here, so the root one is loaded by path under its own name)."""
    import importlib.util

    name = "capa_tests_root_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].ansible_env(extra)


def demo_spec(name: str) -> dict[str, Any]:
    """A cluster spec of examples/inventory.yml (the make demo clusters)."""
    inventory = yaml.safe_load((REPO / "examples/inventory.yml").read_text())
    return json.loads(json.dumps(inventory["capa_clusters"]["hosts"][name]["capa_cluster"]))


def run_killable(
    playbook: Path,
    inventory: Path,
    env: dict[str, str],
    faults: Faults,
    kill_at: list[int],
    seed: int,
    timeout: float,
    kill_mutating: bool = False,
) -> tuple[int, dict[str, Any], str]:
    """Run ``ansible-playbook`` in its own process group and let the fault injector SIGKILL the group and every
    descendant (ansible's workers and modules run in sessions of their own) when it has seen eligible request number
    ``kill_at[0]`` (after moto applied that request). Returns (rc, fault status,
    output tail); rc is -9 when the kill happened."""
    command = [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook), "-i", str(inventory)]
    # The child waits for a line on stdin, so the injector knows the process group before the first request.
    proc = subprocess.Popen(
        ["/bin/sh", "-c", 'read -r go && exec "$@"', "sh", *command],
        env=env,
        cwd=str(REPO),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        faults.configure(seed=seed, kill_at=kill_at, kill_pgid=proc.pid, kill_mutating=kill_mutating)
        output, _err = proc.communicate(input="go\n", timeout=timeout)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        raise
    status = faults.status()
    faults.off()
    return proc.returncode, status, output[-3000:]


# A small cluster so that a run is quick: one AZ (public + private subnet, one NAT gateway and its EIP, two route
# tables), the four role security groups of a cluster without bastion, the classic API load balancer, one
# control-plane machine, md-0 with one worker, the ASG pool mp-0 (one instance, one launch template) and the
# owned Secrets Manager secrets: the PKI, kubeadm init's token (the joins of this build without the Kubernetes API
# use it) and the machines' and the template's bootstrap data (6, as a fault-free run makes).
SMALL_EXPECTED = {
    "auto_scaling_group": 1,
    "classic_elb": 1,
    "eip": 1,
    "instance": 3,
    "instance:control-plane": 1,
    "instance:md-0": 1,
    "instance:mp-0": 1,
    "internet_gateway": 1,
    "launch_template": 1,
    "nat_gateway": 1,
    "route_table": 2,
    "secret": 6,
    "security_group": 4,
    "subnet": 2,
    "vpc": 1,
}


def small_spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "kubernetes_version": "v1.31.2",
        "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "single"},
        "control_plane": {"replicas": 1},
        "machine_deployments": [{"name": "md-0", "replicas": 1}],
        "machine_pools": [{"name": "mp-0", "kind": "asg", "min_size": 1, "max_size": 2, "desired_capacity": 1}],
    }


# census -------------------------------------------------------------------------------------------------------
def census(aws: Any, cluster: str) -> dict[str, list[str]]:
    """Every live resource carrying the cluster's ownership tag, by kind -> sorted list of ids (or names)."""
    ec2 = aws.client("ec2")
    key = owner(cluster)
    owned = [{"Name": f"tag:{key}", "Values": ["owned"]}]

    def ids(items: list[dict[str, Any]], id_key: str) -> list[str]:
        return sorted(i[id_key] for i in items)

    found = {
        "vpc": ids(ec2.describe_vpcs(Filters=owned)["Vpcs"], "VpcId"),
        "subnet": ids(ec2.describe_subnets(Filters=owned)["Subnets"], "SubnetId"),
        "internet_gateway": ids(ec2.describe_internet_gateways(Filters=owned)["InternetGateways"], "InternetGatewayId"),
        "route_table": ids(ec2.describe_route_tables(Filters=owned)["RouteTables"], "RouteTableId"),
        "nat_gateway": ids(
            [
                n
                for n in ec2.describe_nat_gateways(Filters=owned)["NatGateways"]
                if n["State"] in ("pending", "available")
            ],
            "NatGatewayId",
        ),
        "eip": ids(ec2.describe_addresses(Filters=owned)["Addresses"], "AllocationId"),
        "security_group": ids(ec2.describe_security_groups(Filters=owned)["SecurityGroups"], "GroupId"),
        "launch_template": ids(ec2.describe_launch_templates(Filters=owned)["LaunchTemplates"], "LaunchTemplateId"),
        "fleet": ids(
            [
                f
                for f in ec2.describe_fleets(Filters=[])["Fleets"]
                if tags(f).get(key) == "owned" and f.get("FleetState") not in ("deleted", "deleted_terminating")
            ],
            "FleetId",
        ),
        "secret": sorted(
            s["Name"]
            for s in aws.client("secretsmanager").list_secrets(Filters=[{"Key": "tag-key", "Values": [key]}])[
                "SecretList"
            ]
        ),
    }
    instances = [
        i
        for r in ec2.describe_instances(Filters=owned + [{"Name": "instance-state-name", "Values": LIVE}])[
            "Reservations"
        ]
        for i in r["Instances"]
    ]
    found["instance"] = ids(instances, "InstanceId")
    for group, count in Counter(tags(i).get(GROUP_TAG, "other") for i in instances).items():
        found[f"instance:{group}"] = [str(count)]
    elb = aws.client("elb")
    names = [d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"]]
    described = elb.describe_tags(LoadBalancerNames=names)["TagDescriptions"] if names else []
    found["classic_elb"] = sorted(d["LoadBalancerName"] for d in described if key in tags(d))
    v2 = aws.client("elbv2")
    arns = [lb["LoadBalancerArn"] for lb in v2.describe_load_balancers()["LoadBalancers"]]
    arns += [tg["TargetGroupArn"] for tg in v2.describe_target_groups()["TargetGroups"]]
    described = v2.describe_tags(ResourceArns=arns)["TagDescriptions"] if arns else []
    found["elbv2"] = sorted(d["ResourceArn"] for d in described if key in tags(d))
    groups = aws.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    found["auto_scaling_group"] = sorted(
        g["AutoScalingGroupName"] for g in groups if any(t["Key"] == key for t in g.get("Tags", []))
    )
    return {kind: items for kind, items in found.items() if items}


def counts(found: dict[str, list[str]]) -> dict[str, int]:
    """Kinds -> number of resources (instance:<group> entries carry their count as their only item)."""
    return {k: (int(v[0]) if k.startswith("instance:") else len(v)) for k, v in sorted(found.items())}


def tagged_anywhere(aws: Any, cluster: str) -> list[str]:
    """ARNs the tagging API still knows with the cluster's ownership tag (live resources only)."""
    api = aws.client("resourcegroupstaggingapi")
    pages = api.get_paginator("get_resources").paginate(TagFilters=[{"Key": owner(cluster), "Values": ["owned"]}])
    arns = [m["ResourceARN"] for page in pages for m in page["ResourceTagMappingList"]]
    # Terminated instances and deleted NAT gateways linger in describes (as on AWS) and in moto's tag index.
    ec2 = aws.client("ec2")
    gone: set[str] = set()
    for reservation in ec2.describe_instances()["Reservations"]:
        gone |= {
            i["InstanceId"] for i in reservation["Instances"] if i["State"]["Name"] in ("terminated", "shutting-down")
        }
    gone |= {
        n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"] if n["State"] in ("deleted", "deleting")
    }
    fleets = ec2.describe_fleets()["Fleets"]
    gone |= {
        f["FleetId"] for f in fleets if f.get("FleetState") in ("deleted", "deleted_terminating", "deleted_running")
    }
    return sorted(a for a in arns if a.rsplit("/", 1)[-1] not in gone)


def write_figures(name: str, figures: dict[str, Any]) -> Path:
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / f"{name}.json"
    path.write_text(json.dumps(figures, indent=2, sort_keys=True))
    print(f"\n{name} figures ({path}):\n{json.dumps(figures, indent=2, sort_keys=True)}")
    return path
