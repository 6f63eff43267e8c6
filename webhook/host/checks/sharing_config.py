"""host-sharing-config: what the Node offers against the cohort's sharing.

A DRA cohort that shares (sharingStrategies): unknown, since sharing is the DRA driver's feature gates, set in its
Helm values. A device-plugin cohort without a Node: unknown when it shares (the plugin's sharing config lives in its
ConfigMap and shows in the node's capacity), nothing to say when it does not. With a Node, a cohort that shares no
GPU: not fit when the Node is labelled nvidia.com/mps.capable=true, offers shared GPUs (*.shared), offers none of the
cohort's resources, or offers other than one per GPU (without MIG). A sharing cohort: not fit when an exposed name
is not offered or its count is not replicas times GPUs; unknown when the GPU count cannot tell (MIG, or GPUs not read).
Fit otherwise, naming what is offered."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostFinding, HostInput, Status, quoted
from webhook.policy.messages import T

ID = HostCheckId.SHARING
_GATES = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}


def check(host: HostInput) -> Findings:
    cohort, node, gpus = host.cohort, host.facts.node, host.gpus
    if cohort.mechanism == DRA:
        if not cohort.sharing_strategies:
            return ()
        return (host.finding(ID, Status.UNKNOWN, "host", T("DRA sharing ({strategies}) is the DRA driver's feature "
                             "gates, not the host's", strategies=", ".join(cohort.sharing_strategies)),
                             T("they are set in the driver's Helm values"),
                             T("check featureGates: {gates} in the DRA driver's release",
                               gates=", ".join(_GATES[s] for s in cohort.sharing_strategies))),)
    sharing = cohort.time_slicing or cohort.mps
    kind = "time-slicing" if cohort.time_slicing else "MPS"
    units = len(gpus) if gpus and cohort.mig_strategy == "none" else None
    if node is None:
        if sharing is None:
            return ()
        replicas = ", ".join(f"{r.name} × {r.replicas}" for r in sharing.resources)
        return (host.finding(ID, Status.UNKNOWN, "host", T("the device plugin's {kind} config ({replicas}, "
                             "renameByDefault {rename}) is not on the host", kind=kind, replicas=replicas,
                             rename=str(sharing.rename_by_default).lower()),
                             T("it lives in the plugin's ConfigMap and shows in the node's capacity, which a host "
                               "cannot read"),
                             T("give --node with `kubectl get node NODE -o json` to compare them")),)
    subject = f"node {quoted(node.name)}"
    found: list[HostFinding] = []
    if sharing is None:
        if node.labels.get("nvidia.com/mps.capable") == "true":
            found.append(host.finding(ID, Status.FAIL, subject, T("is labelled nvidia.com/mps.capable=true"),
                                      T("cohort {cohort} shares no GPU, and the device plugin chart runs its MPS "
                                        "daemon on nodes with that label", cohort=quoted(cohort.name)),
                                      T("investigate who owns MPS on this node rather than clearing the label")))
        shared = sorted(k for k in node.capacity if k.startswith("nvidia.com/") and k.endswith(".shared"))
        if shared:
            found.append(host.finding(ID, Status.FAIL, subject, T("offers shared GPUs ({resources})",
                                                                  resources=", ".join(shared)),
                                      T("cohort {cohort} shares no GPU", cohort=quoted(cohort.name)),
                                      T("remove the sharing config from the plugin's config for this node, or declare "
                                        "it in the cohort")))
        for name in cohort.resources:
            have = node.count(name)
            if have is None:
                found.append(host.finding(ID, Status.FAIL, subject, T("offers no {resource}", resource=name),
                                          T("the device plugin advertises nothing here: it is not running on the "
                                            "node, or failed to start"),
                                          T("check the device plugin's pod on this node")))
            elif units is not None and have != units:
                found.append(host.finding(ID, Status.FAIL, subject, T("offers {resource}: {count}, the host has "
                                          "{units} GPUs", resource=name, count=have, units=units),
                                          T("cohort {cohort} shares no GPU, so each advertised {resource} must be "
                                            "one GPU", cohort=quoted(cohort.name), resource=name),
                                          T("find the sharing or MIG config the plugin applies here")))
        if not found:
            offered = ", ".join(f"{n}: {node.count(n)}" for n in cohort.resources)
            found.append(host.finding(ID, Status.PASS, subject, T("offers {offered}", offered=offered)
                                      if units is None else
                                      T("offers {offered} for {units} GPUs", offered=offered, units=units)))
        return tuple(found)
    for name, r in zip(sharing.exposed_names(), sharing.resources):
        have = node.count(name)
        if have is None:
            found.append(host.finding(ID, Status.FAIL, subject, T("offers no {resource}", resource=name),
                                      T("cohort {cohort} shares {shared} by {kind} ({replicas} replicas), but the "
                                        "plugin's sharing config is not applied to this node",
                                        cohort=quoted(cohort.name), shared=r.name, kind=kind, replicas=r.replicas),
                                      T("select the plugin's sharing config for the node (its config label), with "
                                        "the cohort's replicas and renameByDefault")))
        elif units is None:
            found.append(host.finding(ID, Status.UNKNOWN, subject, T("offers {resource}: {count}", resource=name,
                                                                     count=have),
                                      T("the replicas per device cannot be told without the GPU count (or with MIG "
                                        "devices)"),
                                      T("compare by hand: {replicas} × the devices", replicas=r.replicas)))
        elif have != r.replicas * units:
            found.append(host.finding(ID, Status.FAIL, subject, T("offers {resource}: {count}, not {replicas} × "
                                      "{units} GPUs", resource=name, count=have, replicas=r.replicas, units=units),
                                      T("cohort {cohort} declares {replicas} replicas per GPU; the webhook's limits "
                                        "on shared requests follow the cohort", cohort=quoted(cohort.name),
                                        replicas=r.replicas),
                                      T("make the plugin's replicas and the cohort's the same")))
    if not found:
        found.append(host.finding(ID, Status.PASS, subject, T("offers the cohort's {kind} replicas ({offered})",
                                                              kind=kind, offered=", ".join(
                                                                  f"{n}: {node.count(n)}"
                                                                  for n in sharing.exposed_names()))))
    return tuple(found)
