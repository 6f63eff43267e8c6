"""host-node-labels: the Node carries its cohort's labels.

With a Node (`--node`, or node.json in a capture). Fit: the Node carries every one of the cohort's nodeLabels. Not
fit: it lacks one or has another value (the cohort's pods are placed by those labels, so they never land there)."""
from __future__ import annotations

from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status, quoted
from webhook.policy.messages import T

ID = HostCheckId.NODE_LABELS


def check(host: HostInput) -> Findings:
    node, cohort = host.facts.node, host.cohort
    if node is None:
        return ()
    subject = f"node {quoted(node.name)}"
    wrong = [f"{k}={v}" for k, v in cohort.node_labels.items() if node.labels.get(k) != v]
    if wrong:
        return (host.finding(ID, Status.FAIL, subject, T("lacks the cohort's labels {labels}", labels=", ".join(wrong)),
                             T("cohort {cohort}'s pods are placed by those labels, so they never land here",
                               cohort=quoted(cohort.name)),
                             T("label the node as its cohort's (the GPU owner's inventory process), or check it "
                               "against the cohort it is labelled for")),)
    return (host.finding(ID, Status.PASS, subject, T("carries the cohort's labels")),)
