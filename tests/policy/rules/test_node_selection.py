"""What a nodeSelector means is kept per policy (most pods share a few): the kept reading gives the same
choice as a fresh one, belongs to its policy only, and an unhashable value is read without being kept."""
from __future__ import annotations

from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import view_of
from webhook.policy import cohorts

DP = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}


def choice(policy, selector, prefix_kind="Pod"):
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"nodeSelector": selector, "containers": []}}
    c = cohorts.from_selectors(view_of(obj, BY_KIND[prefix_kind], "ai"), policy)
    return (c.cohort.name if c.cohort else None, c.source, c.path, c.conflict, c.excluded, c.admitted)


def test_kept_reading_gives_the_fresh_choice():
    policy = default_policy()
    first = choice(policy, DP)
    assert tuple(DP.items()) in policy.selector_readings
    assert choice(policy, DP) == first == ("device-plugin", "selector", "spec.nodeSelector", (), (), ())
    contradiction = {**DP, "workload.example.com/gpu-allocation": "dra", "eks.amazonaws.com/compute-type": "ec2"}
    assert choice(policy, contradiction) == choice(policy, contradiction)
    assert choice(policy, contradiction)[3] == ("dra",)


def test_readings_belong_to_their_policy():
    one = default_policy()
    other = parse_policy(DEFAULT_PATH.read_text().replace("workload.example.com/gpu-allocation: dra",
                                                          "workload.example.com/gpu-allocation: dra-nodes"))
    choice(one, {"workload.example.com/gpu-allocation": "dra"})
    assert other.selector_readings == {}
    assert choice(other, {"workload.example.com/gpu-allocation": "dra"})[0] is None
    assert choice(one, {"workload.example.com/gpu-allocation": "dra"})[0] == "dra"


def test_unhashable_value_is_read_not_kept():
    policy = default_policy()
    assert choice(policy, {**DP, "x": ["not", "a", "label"]})[0] == "device-plugin"
    assert all(all(type(v) is not list for _, v in key) for key in policy.selector_readings)
