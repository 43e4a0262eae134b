# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_instance's etcd_restore decisions, pure: what the option accepts, when etcd still has quorum (a restore is
refused), and when a restore has happened already (a later run changes nothing). The restore itself runs on the
simulator's real etcd in tests/integration/test_site_on_simulator.py."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.etcd_restore import (
    RESTORED_TAG,
    EtcdRestore,
    quorum_kept,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.plan import Machine
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.etcd import EtcdStatus, Member
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.observe import Workload

RESTORE = EtcdRestore("demo-etcd", "etcd/20261203T181500Z-r7.db", "v1")


def workload(answering: int, members: int = 3, alarm: bool = False) -> Workload:
    listed = tuple(Member(str(i), f"node-{i}", (f"https://10.0.0.{i}:2380",), False) for i in range(members))
    unanswered = {f"node-{i}": "timeout" for i in range(answering, members)}
    alarms = {"0": ("NOSPACE",)} if alarm else {}
    status = EtcdStatus("node-0", listed, "0", alarms, unanswered)
    return Workload(reachable=True, nodes=(), static_pods={}, etcd=status)


@pytest.mark.parametrize(
    "answering,members,alarm,kept",
    [
        (3, 3, False, "3 of 3 etcd members answer"),
        (2, 3, False, "2 of 3 etcd members answer"),
        (1, 3, False, None),
        (2, 3, True, None),  # an alarmed member does not count
        (3, 5, False, "3 of 5 etcd members answer"),
        (2, 5, False, None),
        (1, 1, False, "1 of 1 etcd members answer"),
    ],
)
def test_a_restore_is_refused_while_a_majority_of_members_answer(answering, members, alarm, kept):
    assert quorum_kept(workload(answering, members, alarm)) == kept


def test_an_unreachable_cluster_or_etcd_has_lost_quorum_for_a_restore():
    assert quorum_kept(None) is None
    assert quorum_kept(Workload.unreachable("no route")) is None
    assert quorum_kept(Workload(reachable=True, nodes=(), static_pods={}, etcd=None, etcd_error="no member")) is None


def test_the_option_is_for_the_first_machine_of_a_kubeadm_control_plane():
    RESTORE.validate(control_plane=True, kubeadm=True, initialize=True)
    with pytest.raises(SpecError, match="kubeadm control plane"):
        RESTORE.validate(control_plane=False, kubeadm=True, initialize=True)
    with pytest.raises(SpecError, match="initialize: true"):
        RESTORE.validate(control_plane=True, kubeadm=True, initialize=False)
    with pytest.raises(SpecError, match="longer than a tag value"):
        EtcdRestore("b", "k" * 300).validate(control_plane=True, kubeadm=True, initialize=True)
    assert EtcdRestore.from_params(None) is None
    assert EtcdRestore.from_params({"bucket": "b", "key": "k", "version_id": "", "force": None}) == EtcdRestore(
        "b", "k"
    )


def test_a_restore_is_done_once_a_live_machine_names_its_snapshot():
    restored = Machine(id="i-1", name="cp-1", zone="us-east-1a", state="running", tags={RESTORED_TAG: RESTORE.source})
    other = Machine(
        id="i-2",
        name="cp-2",
        zone="us-east-1a",
        state="running",
        tags={RESTORED_TAG: "s3://demo-etcd/etcd/older.db?versionId=v0"},
    )
    gone = Machine(id="i-3", name="cp-3", zone="us-east-1a", state="terminated", tags={RESTORED_TAG: RESTORE.source})
    assert RESTORE.source == "s3://demo-etcd/etcd/20261203T181500Z-r7.db?versionId=v1"
    assert RESTORE.done([other, restored]) and not RESTORE.done([other, gone])
