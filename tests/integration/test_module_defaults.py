# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A play's module_defaults for group/clusterapi.aws.capa reach every task the roles run.

The credentials a play gives them: docs/docsite/rst/getting_started.rst, "Credentials".

The roles used to set that group's defaults per cluster themselves, and Ansible replaces a group's defaults rather than
merging them, so a play-level entry was silently dropped inside the roles (a profile that does not exist was ignored).
Now the roles pass the cluster's own values (name, region, identity, tags) as explicit arguments of each step, and
everything else comes from the play. site.yml's play is used as it is, with a module_defaults entry added:

* a profile that does not exist fails the run, naming the profile, before any AWS request;
* with a profile whose keys are the only credentials there are (no AWS_ACCESS_KEY_ID in the environment, no default
  profile), two clusters - self-managed with a bastion and a machine pool, and EKS - are built, read back and deleted:
  every AWS task of every role signed with the profile, or it would have found no credentials. The region comes from
  the same module_defaults entry (neither the specs nor the environment name one); a spec's own additional_tags win
  over the play's, and a spec without tags gets the play's.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cluster_helpers import eks_spec, write_inventory

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DELETE = REPO / "playbooks/delete.yml"
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION")


def with_module_defaults(playbook: Path, tmp_path: Path, defaults: dict) -> Path:
    """The playbook's plays, each with a play-level module_defaults entry for group/clusterapi.aws.capa."""
    plays = yaml.safe_load(playbook.read_text())
    for play in plays:
        play["module_defaults"] = {"group/clusterapi.aws.capa": defaults}
    path = tmp_path / f"{playbook.stem}-with-defaults.yml"
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    return path


def profile_only(aws, monkeypatch, tmp_path: Path) -> dict[str, str]:
    """An environment whose only credentials are those of the profile capa-test."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    credentials = tmp_path / "credentials"
    credentials.write_text("[capa-test]\naws_access_key_id = AKIAPROFILEONLY0001\naws_secret_access_key = profile\n")
    return {"AWS_SHARED_CREDENTIALS_FILE": str(credentials)}


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def test_a_profile_that_does_not_exist_fails_the_run_naming_it(aws, run_playbook, tmp_path, monkeypatch):
    env = profile_only(aws, monkeypatch, tmp_path)
    playbook = with_module_defaults(SITE, tmp_path, {"profile": "capa-missing", "region": "us-east-1"})
    inventory = write_inventory(tmp_path, {"name": "prof-bad", "network": {"nat_gateways": "none"}})
    result = run_playbook(playbook, inventory=inventory, env=env, expect_rc=None)
    assert result.rc != 0
    [failed] = [t for t in result.tasks if t.failed]
    assert "capa-missing" in failed.result["msg"], failed.result
    # The preflight is the run's first module that talks to AWS (right after the spec is compiled).
    assert failed.name.endswith("Preflight (what the spec needs from the account, checked before the first change)"), (
        failed.name
    )
    assert aws.requests() == []


def test_the_plays_profile_and_region_reach_every_role(aws, run_playbook, tmp_path, monkeypatch):
    env = profile_only(aws, monkeypatch, tmp_path)
    env["ANSIBLE_SHOW_CUSTOM_STATS"] = "1"
    defaults = {"profile": "capa-test", "region": "us-east-1", "additional_tags": {"source": "play"}}
    unmanaged = {
        "name": "prof-sm",
        "additional_tags": {"team": "spec"},
        "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "single"},
        "bastion": {"enabled": True},
        "machine_deployments": [{"name": "md-0"}],
        "machine_pools": [{"name": "prof-sm-asg", "min_size": 1, "max_size": 1}],
    }
    eks = eks_spec("prof-eks")
    del eks["region"]
    inventory = write_inventory(tmp_path, unmanaged, eks)

    result = run_playbook(with_module_defaults(SITE, tmp_path, defaults), inventory=inventory, env=env)
    aws_tasks = {t.name.split(" : ")[-1] for t in result.tasks if "api_calls" in t.result}
    roles = {t.name.split(" : ")[0] for t in result.tasks if "api_calls" in t.result or "results" in t.result}
    assert {f"clusterapi.aws.{r}" for r in ("network", "bastion", "control_plane", "machine_deployment")} <= roles
    assert {f"clusterapi.aws.{r}" for r in ("machine_pool", "eks_control_plane", "eks_node_groups")} <= roles
    assert "Read back what the cluster owns, its conditions and orphans" in aws_tasks
    assert len(aws.requests()) > 100 and not [t.name for t in result.tasks if t.failed]
    for cluster in ("prof-sm", "prof-eks"):
        status = json.loads((tmp_path / "out" / cluster / "status.json").read_text())
        assert status["region"] == "us-east-1" and all(c["status"] for c in status["conditions"].values()), status
        # The same status is published for AWX (capa_status publish: set_stats' form, aggregated over the clusters).
        assert result.json["global_custom_stats"]["capa_status"][cluster] == status

    ec2 = aws.client("ec2")
    [spec_tagged] = ec2.describe_vpcs(Filters=[{"Name": "tag-key", "Values": ["*/cluster/prof-sm"]}])["Vpcs"]
    assert tags(spec_tagged)["team"] == "spec" and "source" not in tags(spec_tagged)
    [play_tagged] = ec2.describe_vpcs(Filters=[{"Name": "tag-key", "Values": ["*/cluster/prof-eks"]}])["Vpcs"]
    assert tags(play_tagged)["source"] == "play"

    run_playbook(with_module_defaults(DELETE, tmp_path, defaults), inventory=inventory, env=env)
    assert ec2.describe_vpcs(Filters=[{"Name": "tag-key", "Values": ["*/cluster/prof-*"]}])["Vpcs"] == []
