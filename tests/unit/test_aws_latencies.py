"""Unit tests of the latency model's table and timing rules (tools/aws_latencies.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from aws_latencies import LATENCIES, Clock, Latency, parse_scale, reported_state, scaled_seconds  # noqa: E402


class FakeClock(Clock):
    def __init__(self) -> None:
        self.at = 1000.0

    def now(self) -> float:
        return self.at


def test_every_entry_has_a_positive_time_distinct_states_and_a_source():
    for key, latency in LATENCIES.items():
        assert latency.seconds > 0, key
        assert latency.during != latency.settled, key
        assert latency.source.strip(), key


def test_the_issue_s_transitions_are_in_the_table():
    for key in [
        ("instance", "launch"),
        ("instance", "terminate"),
        ("nat_gateway", "create"),
        ("nat_gateway", "delete"),
        ("eip", "release_after_nat"),
        ("load_balancer", "create"),
        ("eks_cluster", "create"),
        ("eks_cluster", "update"),
        ("eks_cluster", "delete"),
        ("eks_nodegroup", "create"),
        ("eks_nodegroup", "delete"),
        ("eks_fargate_profile", "create"),
        ("eks_fargate_profile", "delete"),
        ("asg_instance", "launch"),
    ]:
        assert key in LATENCIES


def test_scaled_seconds_multiplies_by_the_scale_and_zero_turns_the_model_off():
    assert scaled_seconds("nat_gateway", "create", 1) == 105
    assert scaled_seconds("eks_cluster", "create", 1 / 30) == pytest.approx(20)
    assert scaled_seconds("eks_cluster", "create", 0) == 0


@pytest.mark.parametrize("value, expected", [(0, 0.0), ("0.0333", 0.0333), (1, 1.0)])
def test_parse_scale_accepts_numbers_from_zero_up(value, expected):
    assert parse_scale(value) == expected


@pytest.mark.parametrize("value", [-0.1, "fast", float("nan"), None])
def test_parse_scale_refuses_negative_and_non_numbers(value):
    with pytest.raises((ValueError, TypeError)):
        parse_scale(value)


def test_reported_state_is_the_intermediate_state_until_due_then_moto_s():
    clock = FakeClock()
    nat = Latency("pending", "available", 105, "test")
    due = clock.due(1.05)
    assert reported_state("available", nat, due, clock) == "pending"
    clock.at += 1.04
    assert reported_state("available", nat, due, clock) == "pending"
    clock.at += 0.01
    assert reported_state("available", nat, due, clock) == "available"


def test_reported_state_passes_other_states_through():
    clock = FakeClock()
    nat = Latency("pending", "available", 105, "test")
    assert reported_state("failed", nat, clock.due(100), clock) == "failed"
