"""Each validation rule's reason in full: the long form of the one-clause why that a finding's line carries.

A line leads with what to do and keeps its why to one clause (webhook/policy/messages.py); the reason in full
is here, shown by `gpu-admission check --explain` and given as SARIF's rule `fullDescription` and `help`, and
the rule's page (docs/rules/<rule>.md, "What it stops and why") says the rest. Catalogue msgids, rendered
in the policy's language."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from webhook.policy.messages import N_, Text
from webhook.rules import Rule

REASONS: Mapping[Rule, Text] = MappingProxyType({rule: Text(msgid) for rule, msgid in {
    Rule.DOUBLE_MECHANISM: N_(
        "A GPU has exactly one allocation owner: the device plugin hands out nvidia.com/gpu, the DRA driver "
        "hands out devices through ResourceClaims, and neither knows of the other. Each cohort runs one of them, "
        "so a pod asking through both is never satisfied on any node."),
    Rule.COHORT_MISMATCH: N_(
        "Each GPU node belongs to one cohort, chosen by its node labels, and each cohort allocates GPUs one way. "
        "A pod sent to a cohort with the other mechanism's request stays Pending, and a node selection naming "
        "two cohorts matches no node."),
    Rule.RESOURCE_NOT_OFFERED: N_(
        "A pod that asks for something its cohort's nodes never advertise is admitted and then stays Pending "
        "for ever: MIG resources without MIG geometry and a matching migStrategy, a MIG profile the GPU model "
        "cannot host, a device type the cohort's DeviceClasses exclude, a shared resource under another name."),
    Rule.SHARED_REQUEST_COUNT: N_(
        "The device plugin refuses more than one shared (time-sliced or MPS) replica per container only at "
        "allocation time on the node, with UnexpectedAdmissionError long after admission; more replicas buy "
        "neither memory nor proportional compute."),
    Rule.SHARED_EXCLUSIVE_MIX: N_(
        "A whole GPU and a time-shared replica are different products: a replica shares the GPU's memory and "
        "faults with every other pod on it. A container asking for both gets an unpredictable mixture, and a "
        "workload marked exclusive silently loses the isolation it was promised."),
    Rule.SHARING_NOT_ENABLED: N_(
        "GPU sharing exists only where the GPU owner turned it on: shared replicas are advertised only by nodes "
        "whose device plugin has a time-slicing or MPS config, and the DRA driver's sharing is an Alpha feature "
        "behind its own feature gate. Elsewhere the pod never schedules or its claim cannot be prepared."),
    Rule.SHARED_CLAIM: N_(
        "A ResourceClaim is one allocation: every pod that names the same claim gets the same GPUs at the same "
        "time, with no isolation between them, so every replica of a Deployment or Job lands on one device. "
        "That is sometimes intended, so the rule warns."),
    Rule.VISIBLE_DEVICES_OVERRIDE: N_(
        "The device plugin or DRA driver makes exactly the allocated GPUs visible; an override grants nothing "
        "and hides or misreports the allocation, and under the nvidia runtime NVIDIA_VISIBLE_DEVICES and its "
        "kin make the container toolkit expose GPUs the pod never requested, outside any allocation."),
    Rule.DEVICE_ACCESS_BYPASS: N_(
        "Privileged containers, hostPaths of GPU device nodes and plugin sockets, the container toolkit's "
        "device-list mounts and CDI/NRI device annotations hand a container GPUs without allocation, so nothing "
        "accounts for them and two workloads can use the same device."),
    Rule.RUNTIME_CLASS_CONFLICT: N_(
        "On a device-plugin cohort the GPU reaches the container through the NVIDIA container runtime, the "
        "cohort's RuntimeClass and its containerd handler; a pod with another RuntimeClass is scheduled, its GPU "
        "counted as allocated, and starts without it."),
    Rule.RUN_AS_ROOT: N_(
        "GPU containers get device nodes and driver libraries from the host, and a root container with extra "
        "capabilities is a short step from it: cohort workloads run as non-root without privilege escalation "
        "or added capabilities. Absent settings are filled in; explicit ones against the defaults are reported."),
    Rule.CLAIM_SHAPE: N_(
        "allocationMode All takes every matching GPU of a node, large counts monopolise nodes, and adminAccess "
        "reaches devices already allocated to other workloads; a resource.k8s.io/v1 request must also say what "
        "it asks for under exactly or firstAvailable."),
    Rule.DEVICE_CONFIG: N_(
        "Kubernetes stores a claim's opaque driver configs unread, and the NVIDIA DRA driver decodes them "
        "strictly only when it prepares the claim on a node: a typo or a value it refuses leaves the pod "
        "scheduled, holding its devices, in ContainerCreating."),
    Rule.LEGACY_API: N_(
        "Dynamic Resource Allocation changed shape several times before resource.k8s.io/v1; forms from older "
        "guides (the alpha API, suitableNodes, the source wrapper) are rejected or misread by every Kubernetes "
        "1.34+ apiserver."),
    Rule.UNRESOLVED_CLAIM: N_(
        "Whether a pod asks for GPUs through DRA is written in the claim or template it names and in its "
        "DeviceClass, not in the pod, and the webhook never guesses; unresolved, the claim escapes the GPU rules, "
        "so a double mechanism or a mismatched cohort may go unnoticed. It may simply not exist yet, so the rule "
        "warns."),
    Rule.UNSATISFIABLE_REQUEST: N_(
        "A pod can pass every other rule and still never schedule, because no node or device of its cohort "
        "could ever hold the request, even empty; the developer would learn it from a Pending pod long after "
        "admission. Capacity changes (a node pool may scale up), so the rule warns."),
    Rule.ALLOCATION_OWNER: N_(
        "Every other rule trusts the policy's picture of the cohorts: each GPU node has exactly one allocation "
        "owner. A second owner reaching the same nodes advertises the same GPUs twice, pods get GPUs that "
        "another owner also hands out, and NVIDIA's charts and the GPU Operator refuse it only after the fact."),
}.items()})
