"""`gpu-admission export`: the rules CEL can express, as ValidatingAdmissionPolicies and bindings the
apiserver runs itself; with --check, what a live cluster holds compared with them."""
from __future__ import annotations

import argparse
import json
import sys

import yaml

from webhook.cli.exits import fail
from webhook.cli.policy_arg import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_policy_options, load_policy_or_exit
from webhook.intree.drift import drift
from webhook.intree.export import RULE_LABEL, export
from webhook.intree.mutations import NEWEST, api_version, export_mutations


def _version(text: str) -> tuple[int, int]:
    major, dot, minor = text.removeprefix("v").partition(".")
    if not (dot and major.isdigit() and minor.split(".")[0].isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Kubernetes version such as 1.34")
    out = (int(major), int(minor.split(".")[0]))
    if out < (1, 30):
        raise argparse.ArgumentTypeError(f"{text}: ValidatingAdmissionPolicy is GA from Kubernetes 1.30")
    return out


def register(sub) -> None:
    p = sub.add_parser(
        "export", help="print the in-tree admission policies of the policy in force",
        description="Print, from the policy in force (--config / --set as for check), one "
        "ValidatingAdmissionPolicy per exported rule and pod-spec shape and its bindings, and one "
        "MutatingAdmissionPolicy per exported mutation and its bindings where the Kubernetes version serves them "
        "(docs/rules/<rule>.md, section In-tree policy, says which rules and which objects). With --check, compare "
        "them with those "
        "the cluster holds: exit 1 when one is missing, differs or is left over, 0 when they are equal, "
        "2 on usage, configuration or cluster errors.")
    add_policy_options(p, read_locale=False)
    p.add_argument("--output", "-o", choices=("yaml", "json"), default="yaml", help="yaml (default) or json (a List)")
    p.add_argument("--kubernetes-version", metavar="1.MINOR", type=_version, default=NEWEST,
                   help=f"the cluster's version (default {NEWEST[0]}.{NEWEST[1]}): MutatingAdmissionPolicy is "
                   "admissionregistration.k8s.io/v1 from 1.36, v1beta1 on 1.34 and 1.35 (feature gate "
                   "MutatingAdmissionPolicy and --runtime-config=admissionregistration.k8s.io/v1beta1=true), "
                   "not exported below 1.34")
    p.add_argument("--only", choices=("validating", "mutating"), help="only the Validating- or the "
                   "MutatingAdmissionPolicies and their bindings (the chart's files/intree are written so)")
    p.add_argument("--check", action="store_true", help="compare with the live cluster instead of printing")
    p.add_argument("--kubeconfig", metavar="FILE", help="with --check: kubeconfig file (default: $KUBECONFIG, "
                   "~/.kube/config, then the in-cluster service account)")
    p.add_argument("--context", metavar="NAME", help="with --check: kubeconfig context (default: the current one)")
    p.set_defaults(func=run)


def run(args) -> int:
    policy = load_policy_or_exit(args, read_locale=False)
    if policy is None:
        return EXIT_ERROR
    objects = ([] if args.only == "mutating" else export(policy)) + (
        [] if args.only == "validating" else export_mutations(policy, args.kubernetes_version))
    if args.check:
        return _check(args, objects)
    if args.output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False, width=1_000_000))
    return EXIT_OK


def _check(args, objects: list[dict]) -> int:
    from kubernetes.client import AdmissionregistrationV1Api, AdmissionregistrationV1beta1Api
    from kubernetes.client.exceptions import ApiException

    from webhook.lookups.kubeconfig import ClusterConfigError, load_api_client

    try:
        client = load_api_client(args.kubeconfig, args.context)
    except ClusterConfigError as exc:
        return fail(str(exc))
    api = AdmissionregistrationV1Api(client)
    listers = [] if args.only == "mutating" else [
        ("ValidatingAdmissionPolicy", api.list_validating_admission_policy),
        ("ValidatingAdmissionPolicyBinding", api.list_validating_admission_policy_binding)]
    version = api_version(args.kubernetes_version)
    if version is not None and args.only != "validating":
        mutating = api if version.endswith("/v1") else AdmissionregistrationV1beta1Api(client)
        listers += [("MutatingAdmissionPolicy", mutating.list_mutating_admission_policy),
                    ("MutatingAdmissionPolicyBinding", mutating.list_mutating_admission_policy_binding)]
    selector = RULE_LABEL  # every exported object has it, whether applied by hand or installed by Helm
    live = []
    try:
        for kind, lister in listers:
            items = client.sanitize_for_serialization(lister(label_selector=selector)).get("items") or []
            live += [{**item, "kind": kind} for item in items]
    except ApiException as exc:
        hint = (" (is that API version served? --kubernetes-version chooses the MutatingAdmissionPolicy one)"
                if exc.status == 404 else "")
        return fail(f"listing the cluster's admission policies failed: {exc.status} {exc.reason}{hint}")
    except OSError as exc:
        return fail(f"the cluster cannot be reached: {exc}")
    lines = drift(objects, live)
    for line in lines:
        print(line)
    if not lines:
        print(f"{len(objects)} in-tree admission objects, as the policy exports them")
    return EXIT_DENIED if lines else EXIT_OK
