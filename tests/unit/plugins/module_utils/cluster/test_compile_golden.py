"""Compiled steps build the golden machines: a cluster spec, compiled, its references filled in with the golden
account's network, is exactly what ``test_golden_machines.py`` hands the machine module for that case (after the
module's own argument spec - so the same machines, template hash included), and run through the module it sends the
requests ``fixtures/golden_machines.json`` pins (resource ids masked as the golden test masks them). moto's seeded ids
depend on which cases ran before in the process; when they differ from the fixture's, the template-hash tag (a hash
over those ids) is masked too - the group spec equality above already makes the hash the golden case's.

Three of the pinned cases are what a cluster spec can say (the others pass a root volume without a size, which a
cluster spec never does: its default is 80 GiB): the bastion with the cluster's ssh key, a machine deployment with
every machine option, and a spot pool with its own volume, IMDS, profile and the SSM backend.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any, Callable

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from moto import mock_aws

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import module_argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import compile_cluster, resolve
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.instance import HASH_TAG, GroupSpec

GOLDEN_TESTS = Path(__file__).resolve().parents[1] / "machines" / "test_golden_machines.py"
_spec = importlib.util.spec_from_file_location("golden_machines_cases", GOLDEN_TESTS)
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)  # type: ignore[union-attr]

ENDPOINT = {"host": "gold-apiserver.elb.amazonaws.com", "port": 6443}


def bastion(account: Any) -> dict[str, Any]:
    return {"ssh_key_name": "gold-key", "bastion": {"enabled": True}}


def every_machine_option(account: Any) -> dict[str, Any]:
    return {
        "machine_deployments": [
            {
                "name": "md-opts",
                "failure_domains": ["us-east-1b"],
                "root_volume": {"size": 120, "type": "gp2", "encrypted": False},
                "imds": {"http_tokens": "optional", "http_put_response_hop_limit": 2},
                "ssh_key_name": "gold-key",
                "iam_instance_profile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
                "additional_security_group_ids": [account.groups["bastion"]],
            }
        ]
    }


def spot_pool(account: Any) -> dict[str, Any]:
    return {
        "machine_pools": [
            {
                "name": "mp-spot",
                "min_size": 1,
                "max_size": 3,
                "desired_capacity": 2,
                "spot_market_options": {"max_price": "0.04"},
                "root_volume": {"size": 60},
                "imds": {"http_put_response_hop_limit": 2},
                "bootstrap_backend": "ssm-parameter-store",
                "iam_instance_profile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
            }
        ]
    }


# golden case -> (the cluster spec's sections, the module, where its step is in the compiled steps)
CASES: dict[str, tuple[Callable[[Any], dict[str, Any]], str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "instance/bastion": (bastion, "capa_instance", lambda steps: steps["bastion"]["instance"]),
    "instance/worker-every-machine-option": (
        every_machine_option,
        "capa_instance",
        lambda steps: steps["machine_deployment"]["instances"][0],
    ),
    "asg/pool-spot-ssm-volume-imds": (spot_pool, "capa_asg", lambda steps: steps["machine_pool"]["asg"][0]),
}


def compiled_params(account: Any, sections: dict[str, Any], pick: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    cluster = {
        "name": golden.CLUSTER,
        "region": golden.REGION,
        "kubernetes_api": {"server": account.kube.url},
        **sections,
    }
    validated = ArgumentSpecValidator(module_argument_spec()).validate({"cluster": cluster})
    assert not validated.error_messages, validated.error_messages
    steps = compile_cluster(validated.validated_parameters["cluster"], None)["steps"]
    network = {"subnets": account.subnets, "security_groups": {r: {"id": g} for r, g in account.groups.items()}}
    params = resolve(pick(steps), {"network": network, "control_plane": {"endpoint": ENDPOINT}})
    # The connection options are amazon.aws's, which the golden runner (our options only) does not take.
    params.pop("region")
    return params


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_steps_build_the_golden_machines(name: str, tmp_path: Path) -> None:
    sections, module, pick = CASES[name]
    golden_module, build = golden.CASES[name]
    assert golden_module == module
    argument_spec, _tier = golden.module_tier(module)
    with mock_aws():
        golden.seed_moto()
        with golden.Account(tmp_path) as account:
            compiled = compiled_params(account, sections(account), pick)
            assert as_module_reads(module, argument_spec, compiled) == as_module_reads(
                module, argument_spec, build(account)
            )
            calls: list[dict[str, Any]] = []
            golden.run_module(module, compiled, recorder=calls)
    expected = golden._golden()[name]
    got = [golden.normalise(c, account.ids) for c in calls]
    if account.ids == expected["inputs"]:
        assert got == expected["requests"]
    else:  # the machines' template-hash tag holds the hash of the (differently seeded) group ids
        assert mask_hash(got) == mask_hash(expected["requests"])


def mask_hash(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("Key") == HASH_TAG:
            return {**value, "Value": "<hash>"}
        return {key: mask_hash(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mask_hash(item) for item in value]
    return value


def as_module_reads(module: str, argument_spec: dict[str, Any], params: dict[str, Any]) -> Any:
    """The parameters after the module's argument spec; for capa_instance its group spec, whose defaults depend on
    the role (a bastion's instance type, public IP and bootstrap type)."""
    # The validator fills sub-option defaults into the dicts it holds (a spec's default {} included): validate with
    # copies, as each real module run validates once, in its own process.
    result = ArgumentSpecValidator(copy.deepcopy(argument_spec)).validate(
        {"cluster_name": golden.CLUSTER, **copy.deepcopy(params)}
    )
    assert not result.error_messages, result.error_messages
    return (
        GroupSpec.from_params(result.validated_parameters) if module == "capa_instance" else result.validated_parameters
    )
