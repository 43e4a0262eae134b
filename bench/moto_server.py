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
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import moto_server  # noqa: E402
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


if __name__ == "__main__":
    _fix_missing_elb_attributes()
    _fix_default_health_check()
    sys.exit(moto_server.main())
