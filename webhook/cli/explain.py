"""`gpu-admission explain`: why a GPU pod is (or would be) Pending, in GPU terms, against a live cluster
(kubeconfig as `audit`) or a saved snapshot of it."""
from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

from webhook.cli.exits import fail
from webhook.cli.inputs import read_inputs
from webhook.cli.policy_arg import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_policy_options, load_policy_or_exit
from webhook.config.model import Policy
from webhook.evaluation.explain import explain_pod
from webhook.lookups.base import NoLookups
from webhook.lookups.bundle import BundleResolver
from webhook.objects.access import as_dict, as_str
from webhook.objects.claims import claim_spec
from webhook.objects.occupancy import build as build_occupancy
from webhook.objects.occupancy import scheduler_words
from webhook.policy.context import Context
from webhook.policy.explain import Explanation, explanation_dict, render_text

SNAPSHOT_HINT = "kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses -A -o yaml"
PENDING = frozenset({"waits", "never"})
# the driver a DeviceClass's CEL selector names (the selection probes know only the policy's drivers)
_DRIVER = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")


@dataclass(slots=True)
class Snapshot:
    """The cluster as explain reads it: every object, and the events of the pods asked about."""

    objects: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    _kinds: dict[str, list[dict]] | None = None  # the objects by kind, indexed on the first question

    def of_kind(self, kind: str) -> list[dict]:
        if self._kinds is None:
            kinds: dict[str, list[dict]] = {}
            for o in self.objects:
                of = o.get("kind")
                kinds.setdefault(of if type(of) is str else "", []).append(o)
            self._kinds = kinds
        return self._kinds.get(kind, [])

    def replace(self, objects: list[dict]) -> None:
        self.objects = objects
        self._kinds = None


class ExplainError(Exception):
    """Input explain cannot work with: one line, exit 2."""


def register(sub) -> None:
    p = sub.add_parser(
        "explain", help="say in GPU terms why a pod is Pending",
        description="Explain why a GPU pod is (or would be) Pending: its cohort and mechanism, what it asks for, "
        "for each node of its cohort why that node cannot take it (node selection, taints, resources not offered, "
        "free capacity and the pods holding it; for DRA the devices its claims match, those other claims hold, "
        "device taints and capacity), the scheduler's own words and one fix. `explain pod NAME -n NS` reads a "
        "live cluster (kubeconfig as `audit`); `explain FILE --cluster SNAPSHOT` explains the pods of FILE, as "
        f"the webhook would leave them, against a snapshot saved with `{SNAPSHOT_HINT}` (with --cluster, "
        "`pod NAME` is taken from the snapshot). Exit 0: the pod is bound, a node can take it now, or it asks "
        "for no GPU; 1: it waits for capacity or never schedules as it is; 2: usage or input errors (a pod "
        "that does not exist, a snapshot without nodes, a claim of a driver gpu-admission does not know, a "
        "cluster where the caller may not list nodes or ResourceSlices).")
    p.add_argument("target", nargs="+", metavar="pod NAME | FILE",
                   help="`pod NAME`, or manifests holding pods (files, - for stdin)")
    p.add_argument("--namespace", "-n", default="default", metavar="NS",
                   help="the pod's namespace (default: default), and that of pods in FILE that name none")
    p.add_argument("--cluster", metavar="SNAPSHOT", help=f"a saved cluster ({SNAPSHOT_HINT}) instead of a live one")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text", help="text (default) or json")
    add_policy_options(p)
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (as `audit`)")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current context)")
    p.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="timeout of each API request (default: 30)")
    p.set_defaults(func=run)


def _read_snapshot(path: str) -> Snapshot:
    inputs = read_inputs([path])
    if inputs.errors:
        raise ExplainError(inputs.errors[0])
    snapshot = Snapshot()
    for d in inputs.documents:
        (snapshot.events if d.obj.get("kind") == "Event" else snapshot.objects).append(d.obj)
    if not snapshot.of_kind("Node"):
        raise ExplainError(f"{path}: the snapshot holds no Node; save one with `{SNAPSHOT_HINT}`")
    return snapshot


def _live_snapshot(args, pods: list[tuple[str, str]]) -> Snapshot:
    from webhook.lookups.apiserver import ApiError, get, list_pages
    from webhook.lookups.kubeconfig import ClusterConfigError, load_api_client
    from webhook.lookups.resources import (
        DEVICE_CLASSES,
        DEVICE_TAINT_RULES,
        EVENTS,
        MACHINE_DEPLOYMENTS,
        NODE_POOLS,
        NODES,
        PODS,
        RESOURCE_CLAIMS,
        RESOURCE_SLICES,
        RUNTIME_CLASSES,
    )

    try:
        client = load_api_client(args.kubeconfig, args.context)
    except ClusterConfigError as exc:
        raise ExplainError(str(exc)) from None
    timeout = args.request_timeout
    snapshot = Snapshot()
    try:
        for namespace, name in pods:
            try:
                pod = get(client, PODS, namespace, name, timeout=timeout)
            except ApiError as err:
                if err.not_found:
                    raise ExplainError(f'pod "{namespace}/{name}" not found') from None
                raise ExplainError(f'pod "{namespace}/{name}": {err.describe()}') from None
            pod.setdefault("apiVersion", "v1")
            pod.setdefault("kind", "Pod")
            snapshot.objects.append(pod)
        optional = {DEVICE_TAINT_RULES.plural, RUNTIME_CLASSES.plural, NODE_POOLS.plural, MACHINE_DEPLOYMENTS.plural}
        for resource in (NODES, RESOURCE_SLICES, PODS, RESOURCE_CLAIMS, DEVICE_CLASSES, RUNTIME_CLASSES,
                         DEVICE_TAINT_RULES, NODE_POOLS, MACHINE_DEPLOYMENTS):
            try:
                for page in list_pages(client, resource, None, limit=500, timeout=timeout):
                    snapshot.objects.extend(i for i in page.get("items") or () if isinstance(i, dict)
                                            and not (resource is PODS and _named(i, pods)))
            except ApiError as err:
                if resource.plural in optional and (err.status in (403, 404)):
                    continue  # not served (an alpha API, no Karpenter), or not granted: nothing said of them
                raise ExplainError(f"cannot list {resource.qualified}: {err.describe()}") from None
        for namespace, name in pods:
            try:
                page = next(iter(list_pages(client, EVENTS, namespace, limit=500, timeout=timeout)), {})
            except ApiError:
                continue  # the scheduler's words are a bonus, not the explanation
            snapshot.events.extend(e for e in page.get("items") or () if isinstance(e, dict)
                                   and as_dict(e.get("involvedObject")).get("name") == name)
    finally:
        client.close()
    return snapshot


def _named(obj: dict, pods: list[tuple[str, str]]) -> bool:
    meta = as_dict(obj.get("metadata"))
    return (as_str(meta.get("namespace")), as_str(meta.get("name"))) in pods


def check_drivers(namespace: str, name: str, policy: Policy, context: Context) -> None:
    """A claim whose DeviceClass cannot be found, or selects devices of a driver that gpu-admission does not
    know and that no ResourceSlice publishes, cannot be explained in GPU terms."""
    inventory = context.inventory
    published = {d.driver for d in (inventory.devices or ())} if inventory is not None else set()
    for (kind, claim), found in context.claims.items():
        if not found.found:
            raise ExplainError(f'pod "{namespace}/{name}": {kind} "{claim}": {found.reason}')
        for request in claim_spec(found.value, kind).requests:
            for leaf in request.leaves():
                info = context.device_class(leaf.device_class)
                if info is None:
                    reason = context.class_misses.get(leaf.device_class or "", "not found")
                    raise ExplainError(f'{kind} "{namespace}/{claim}": DeviceClass "{leaf.device_class}": {reason}')
                if info.driver not in policy.gpu_drivers and info.driver not in published and \
                        info.name not in policy.device_classes:
                    named = _DRIVER.search(" ".join(info.selectors or ()))
                    driver = named.group(1) if named else info.driver or "?"
                    if driver in published:
                        continue
                    raise ExplainError(
                        f'{kind} "{namespace}/{claim}": DeviceClass "{info.name}" selects devices of driver '
                        f'"{driver}", which gpu-admission does not know and no ResourceSlice publishes '
                        f"(GPU drivers: {', '.join(sorted(policy.gpu_drivers))})")


def _uses_dra(pod: dict, snapshot: Snapshot) -> bool:
    """The pod may get devices through DRA: claims, or an extended resource a DeviceClass serves (KEP-5004).
    Otherwise the ResourceSlices, the larger part of a big snapshot to read, say nothing of it."""
    spec = as_dict(pod.get("spec"))
    return bool(spec.get("resourceClaims")) or any(
        as_dict(c.get("spec")).get("extendedResourceName") for c in snapshot.of_kind("DeviceClass")) or \
        "deviceclass.resource.kubernetes.io/" in json.dumps(spec.get("containers"))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The snapshot of a large cluster is a million objects that live until explain answers: the cyclic
    garbage collector's passes over them cost as much as the explanation (bench/explain.py), and they free
    nothing. Paused while the snapshot is read and explained."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _explanations(args, policy: Policy) -> list[Explanation]:
    target = args.target
    asked: list[tuple[dict, bool]] = []  # (pod, created)
    if target[0] == "pod":
        name = target[1]
        snapshot = _read_snapshot(args.cluster) if args.cluster else _live_snapshot(args, [(args.namespace, name)])
        found = [p for p in snapshot.of_kind("Pod") if as_dict(p.get("metadata")).get("name") == name
                 and _named(p, [(args.namespace, name)])]
        if not found:
            raise ExplainError(f'pod "{args.namespace}/{name}" not found' +
                               (f" in {args.cluster}" if args.cluster else ""))
        asked.append((found[0], True))
    else:
        inputs = read_inputs(target)
        if inputs.errors:
            raise ExplainError(inputs.errors[0])
        pods = [d.obj for d in inputs.documents if d.obj.get("kind") == "Pod"]
        if not pods:
            raise ExplainError(f"{', '.join(target)}: holds no Pod")
        named = [(as_str(as_dict(p.get("metadata")).get("namespace")) or args.namespace,
                  as_str(as_dict(p.get("metadata")).get("name")) or "") for p in pods]
        snapshot = _read_snapshot(args.cluster) if args.cluster else _live_snapshot(args, [])
        # the file's other documents (claims, classes) resolve with the snapshot's
        snapshot.replace([o for o in snapshot.objects if not (o.get("kind") == "Pod" and _named(o, named))] +
                         [d.obj for d in inputs.documents if d.obj.get("kind") != "Pod"])
        asked.extend((p, False) for p in pods)
    objects = snapshot.objects if any(_uses_dra(p, snapshot) for p, _ in asked) else \
        [o for o in snapshot.objects if o.get("kind") != "ResourceSlice"]
    resolver = BundleResolver(objects, default_namespace=args.namespace,
                              fallback=NoLookups("not found in the cluster"))
    occupancy = build_occupancy(snapshot.of_kind("Pod"), snapshot.of_kind("ResourceClaim"))
    explanations = []
    for pod, created in asked:
        meta = as_dict(pod.get("metadata"))
        namespace = as_str(meta.get("namespace")) or args.namespace
        pod_name = as_str(meta.get("name")) or ""
        explanations.append(explain_pod(
            pod, policy=policy, resolver=resolver, occupancy=occupancy, namespace=namespace, created=created,
            scheduler=scheduler_words(pod, snapshot.events),
            vet=partial(check_drivers, namespace, pod_name, policy)))
    return explanations


def run(args) -> int:
    target = args.target
    if target[0] == "pod" and len(target) != 2:
        return fail("explain pod NAME: give one pod name (or FILE ... for manifests)", command="explain")
    policy = load_policy_or_exit(args)
    if policy is None:
        return EXIT_ERROR
    try:
        with _collector_paused():
            explanations = _explanations(args, policy)
    except ExplainError as exc:
        return fail(str(exc), command="explain")
    language = policy.language
    if args.output == "json":
        json.dump([explanation_dict(e, language) for e in explanations], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n\n".join(render_text(e, language) for e in explanations) + "\n")
    return EXIT_DENIED if any(e.verdict in PENDING for e in explanations) else EXIT_OK
