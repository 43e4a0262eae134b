# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fixtures of the EKS package's tests: botocore Stubbers for the AWS paths moto cannot serve, no poll delays."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import control_plane, members
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession


@pytest.fixture
def aws_stub(monkeypatch):
    """(session, eks stubber, iam stubber) of one AwsSession, as capa_eks_cluster's runs use it."""
    monkeypatch.setattr(control_plane, "POLL_DELAY", 0)
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    eks = Stubber(session.client("eks").raw)
    iam = Stubber(session.client("iam").raw)
    eks.activate()
    iam.activate()
    yield session, eks, iam
    eks.deactivate()
    iam.deactivate()


@pytest.fixture
def eks(monkeypatch):
    """(raw eks client, stubber) for the node group and Fargate tiers; every expected request must be made."""
    monkeypatch.setattr(members, "POLL_DELAY", 0.0)
    raw = boto3.client("eks", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(raw) as stub:
        yield raw, stub
        stub.assert_no_pending_responses()
