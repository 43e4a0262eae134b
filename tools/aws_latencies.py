"""How long AWS resources stay in their intermediate states: the one table of the harness's latency model.

tools/moto_server.py (fix 16) makes moto's resources walk through these states when the model is on, and
bench/critical_path.py computes a cluster's shortest possible create, upgrade and delete from the same figures.
BENCHMARKS.md ("The AWS latency model") prints the table with its sources; keep the two in step.

Each entry is keyed ``(resource, transition)`` and gives the state AWS reports meanwhile, the state moto settles in,
the typical (median) seconds and where the figure comes from. Figures are observations from public sources, not
AWS service levels; "est." marks an estimate to replace once measured on real AWS.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Latency:
    """One timed transition: AWS reports ``during`` for ``seconds`` before ``settled``."""

    during: str
    settled: str
    seconds: float
    source: str


LATENCIES: dict[tuple[str, str], Latency] = {
    ("instance", "launch"): Latency(
        "pending", "running", 12, "daemonology.net EC2 boot benchmark (2021); brevdev/ec2-coldboot-research: 5-17 s"
    ),
    ("instance", "terminate"): Latency(
        "shutting-down", "terminated", 45, "est.; TerminateInstances API reference (stays listed about an hour)"
    ),
    ("nat_gateway", "create"): Latency("pending", "available", 105, "Terraform apply logs (n=8, 85-125 s)"),
    ("nat_gateway", "delete"): Latency("deleting", "deleted", 55, "Terraform destroy logs (n=9, 37-79 s)"),
    ("eip", "release_after_nat"): Latency(
        "in use", "released", 5, "ReleaseAddress refused until its NAT gateway is deleted (+0-15 s reported)"
    ),
    ("load_balancer", "create"): Latency(
        "provisioning", "active", 150, "Terraform logs (~2m54s); network-load-balancers user guide (states)"
    ),
    ("eks_cluster", "create"): Latency("CREATING", "ACTIVE", 600, "Terraform logs (n=10, 8m23s-11m23s)"),
    ("eks_cluster", "update"): Latency(
        "UPDATING", "ACTIVE", 1500, "est. from eksctl/terraform-aws-eks reports (21-47 min)"
    ),
    ("eks_cluster", "delete"): Latency("DELETING", "gone", 180, "Terraform destroy logs (n=9, 1m9s-8m42s)"),
    ("eks_nodegroup", "create"): Latency("CREATING", "ACTIVE", 120, "Terraform logs (n=7, 88-201 s)"),
    ("eks_nodegroup", "delete"): Latency("DELETING", "gone", 300, "Terraform destroy logs (n=5, 252-501 s)"),
    # Per node replaced (maxUnavailable 1): a node group's rolling version update takes this times its nodes.
    ("eks_nodegroup", "update"): Latency(
        "UPDATING", "ACTIVE", 300, "~5 min per node (aws-quickstart/quickstart-amazon-eks#377; containers-roadmap#1560)"
    ),
    ("eks_fargate_profile", "create"): Latency(
        "CREATING", "ACTIVE", 60, "est.; aws/containers-roadmap#2392 (26 s - 5m45s)"
    ),
    ("eks_fargate_profile", "delete"): Latency("DELETING", "gone", 120, "aws/containers-roadmap#1211, #2392"),
    ("eks_addon", "create"): Latency("CREATING", "ACTIVE", 20, "Terraform logs (n~10, 14-66 s)"),
    ("asg_instance", "launch"): Latency(
        "Pending", "InService", 12, "as the instance's launch (EC2 Auto Scaling lifecycle guide)"
    ),
    # Not AWS states but the time a machine needs after it runs; the critical path needs them.
    ("kubeadm", "first_control_plane"): Latency(
        "booting", "API server serving", 180, "est.: boot + image pulls + kubeadm init (kubernetes/kubeadm#87)"
    ),
    ("kubeadm", "join"): Latency(
        "booting", "Node Ready", 90, "est.; CAPA rollout reports (kubernetes-sigs/cluster-api-provider-aws#4293)"
    ),
    ("eks_node", "join"): Latency("booting", "Node Ready", 40, "AL2023 nodeadm reports (~30-40 s)"),
}


def scaled_seconds(resource: str, transition: str, scale: float) -> float:
    """The model's delay for one transition at ``scale`` (0 = off: no delay)."""
    return LATENCIES[(resource, transition)].seconds * scale if scale > 0 else 0.0


def parse_scale(value: object) -> float:
    """A latency scale from a control call or the environment: a number >= 0 (0 turns the model off)."""
    scale = float(value)  # type: ignore[arg-type]
    if scale < 0 or math.isnan(scale):
        raise ValueError("scale must be a number >= 0")
    return scale


class Clock:
    """When a timed transition settles: ``due(seconds)`` now, ``passed(due)`` later (monotonic, so wall-clock
    jumps do not end a state early); a seam for unit tests."""

    def now(self) -> float:
        return time.monotonic()

    def due(self, seconds: float) -> float:
        return self.now() + seconds

    def passed(self, due: float) -> bool:
        return self.now() >= due


def reported_state(real: str, latency: Latency, due: float, clock: Clock) -> str:
    """What AWS would answer: the intermediate state while a transition into ``latency.settled`` is under way."""
    if real == latency.settled and not clock.passed(due):
        return latency.during
    return real
