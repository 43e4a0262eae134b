# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kubeadm/addons.py: which Nodes still wait for a network plugin once the CNI was applied (the kubelet's
Ready=False reason NetworkPluginNotReady), and the wait that follows the CNI's apply."""

from __future__ import annotations

from typing import Any

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.addons import (
    nodes_without_network,
    wait_for_network,
)

NO_CNI = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin "
    "returns error: cni plugin not initialized"
)


def node(name: str, status: str, message: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": status, "message": message}]},
    }


class Api:
    """The Node lists a cluster answers, one per call (the last one again once they run out)."""

    def __init__(self, *answers: list[dict[str, Any]]) -> None:
        self.answers, self.calls = list(answers), 0

    def nodes(self) -> list[dict[str, Any]]:
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Ctx:
    check_mode, wait = False, True

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def test_only_nodes_waiting_for_a_network_plugin_are_named():
    api = Api([node("a", "False", NO_CNI), node("b", "False", "kubelet stopped posting"), node("c", "True")])
    assert nodes_without_network(api) == ["a"]  # b is NotReady for another reason: not the CNI's to fix


def test_the_wait_ends_once_the_cni_made_the_network_ready(monkeypatch):
    api = Api([node("a", "False", NO_CNI)], [node("a", "True")])
    seen = []
    monkeypatch.setattr(
        "ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.addons.wait_until",
        lambda poll, done, ctx, what, delay, state: seen.append((what, [poll(), poll()])) or None,
    )
    wait_for_network(Ctx(), api)
    assert seen == [("the CNI to make the Nodes' network ready", [["a"], []])]


def test_no_wait_in_check_mode_or_without_wait():
    api = Api([node("a", "False", NO_CNI)])
    for check_mode, wait in ((True, True), (False, False)):
        ctx = Ctx()
        ctx.check_mode, ctx.wait = check_mode, wait
        wait_for_network(ctx, api)
    assert api.calls == 0
