"""`gpu-admission export`: the rules CEL can express, as ValidatingAdmissionPolicies and bindings the
apiserver runs itself; with --chart-values, the same as a values file the Helm chart installs them from;
with --check, what a live cluster holds compared with them."""
from __future__ import annotations

import argparse
import json
import sys

import yaml

from webhook.cli.exits import fail, warn
from webhook.cli.policy_arg import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_policy_options, load_policy_or_exit
from webhook.intree.drift import drift
from webhook.intree.export import RULE_LABEL, export
from webhook.intree.mutations import NEWEST, api_version, export_mutations

GATE_HINT = ("on Kubernetes 1.34 and 1.35 MutatingAdmissionPolicy is beta and off by default: the kube-apiserver "
             "needs --feature-gates=MutatingAdmissionPolicy=true and "
             "--runtime-config=admissionregistration.k8s.io/v1beta1=true; from 1.36 it is "
             "admissionregistration.k8s.io/v1, on by default")


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
        description="Print, from the policy in force (--config / --set / --base as for check), one "
        "ValidatingAdmissionPolicy per exported rule, for every kind it reads, and its bindings, and one "
        "MutatingAdmissionPolicy per exported mutation and its bindings where the Kubernetes version serves them "
        "(docs/rules/<rule>.md, section In-tree policy, says which rules and which objects). With --chart-values, "
        "print them as a values file for the Helm chart's inTree (docs/deployment.md, In-tree policies). With "
        "--check, compare them with those the cluster holds, in the MutatingAdmissionPolicy API version the "
        "cluster's own version and discovery say: exit 1 when one is missing, differs or is left over, or when "
        "the policy exports mutations that the cluster cannot run (no MutatingAdmissionPolicy API served in that "
        "version, or its feature gate off), 0 when they are equal, 2 on usage, configuration or cluster errors.")
    add_policy_options(p, read_locale=False)
    p.add_argument("--output", "-o", choices=("yaml", "json"), default="yaml", help="yaml (default) or json (a List)")
    p.add_argument("--kubernetes-version", metavar="1.MINOR", type=_version, default=None,
                   help=f"the cluster's version (default {NEWEST[0]}.{NEWEST[1]}; --check reads the cluster's own "
                   "instead): MutatingAdmissionPolicy is admissionregistration.k8s.io/v1 from 1.36, v1beta1 on 1.34 "
                   "and 1.35 (feature gate MutatingAdmissionPolicy and "
                   "--runtime-config=admissionregistration.k8s.io/v1beta1=true), not exported below 1.34")
    p.add_argument("--only", choices=("validating", "mutating"), help="only the Validating- or the "
                   "MutatingAdmissionPolicies and their bindings")
    p.add_argument("--chart-values", action="store_true",
                   help="print a values file for the Helm chart (inTree.exported): the objects and the policy "
                   "they were exported from; the chart installs them with inTree.validation / inTree.mutation "
                   "and refuses a release whose policy differs from that one. Give the policy the release "
                   "renders (--base its policy.yaml)")
    p.add_argument("--check", action="store_true", help="compare with the live cluster instead of printing")
    p.add_argument("--kubeconfig", metavar="FILE", help="with --check: kubeconfig file (default: $KUBECONFIG, "
                   "~/.kube/config, then the in-cluster service account)")
    p.add_argument("--context", metavar="NAME", help="with --check: kubeconfig context (default: the current one)")
    p.set_defaults(func=run)


def dump_yaml(objects: list[dict]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, width=1_000_000)


def _objects(args, policy, kubernetes: tuple[int, int]) -> list[dict]:
    return ([] if args.only == "mutating" else export(policy)) + (
        [] if args.only == "validating" else export_mutations(policy, kubernetes))


def run(args) -> int:
    usage = _usage(args)
    if usage:
        return fail(usage)
    policy = load_policy_or_exit(args, read_locale=False)
    if policy is None:
        return EXIT_ERROR
    if args.check:
        return _check(args, policy)
    kubernetes = args.kubernetes_version or NEWEST
    if args.chart_values:
        from webhook.config.load import merged_document
        from webhook.intree.chart import chart_values

        values = chart_values(merged_document(args.config, args.set_values, base=args.base), policy, kubernetes)
        sys.stdout.write("# gpu-admission export --chart-values: the chart's inTree.exported "
                         "(docs/deployment.md, In-tree policies)\n")
        sys.stdout.write(yaml.safe_dump(values, sort_keys=False, width=1_000_000))
        return EXIT_OK
    objects = _objects(args, policy, kubernetes)
    if args.output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(dump_yaml(objects))
    return EXIT_OK


def _usage(args) -> str | None:
    if args.check and args.kubernetes_version is not None:
        return "--check reads the cluster's version; --kubernetes-version is for printing without a cluster"
    if args.chart_values and (args.check or args.only):
        return "--chart-values writes both halves of the export for the chart; it takes neither --check nor --only"
    if args.chart_values and args.lang:
        return ("--chart-values writes the messages in the language of the policy the release runs; leave out "
                "--lang (set the policy's `language` instead)")
    if args.chart_values and args.output == "json":
        return "--chart-values writes a YAML values file; leave out -o json"
    return None


def _check(args, policy) -> int:
    from webhook.cli.export_cluster import Discovery, list_objects, read_discovery, read_feature_gate
    from webhook.lookups.apiserver import ApiError
    from webhook.lookups.kubeconfig import ClusterConfigError, load_api_client

    try:
        client = load_api_client(args.kubeconfig, args.context)
    except ClusterConfigError as exc:
        return fail(str(exc))
    try:
        found: Discovery = read_discovery(client)
    except ApiError as exc:
        return fail(f"reading the cluster's version and discovery failed: {exc}")
    kubernetes = found.kubernetes
    objects = _objects(args, policy, kubernetes)
    mutating = [o for o in objects if o["kind"].startswith("Mutating")]
    want = api_version(kubernetes)
    served = found.mutating
    print(f"cluster: Kubernetes {found.git_version}, MutatingAdmissionPolicy served as "
          f"{', '.join(served) if served else 'none'}")
    lines: list[str] = []
    check_mutating = args.only != "validating"
    if mutating and want not in served:
        lines.append(f"MutatingAdmissionPolicy: the policy exports {len(mutating)} MutatingAdmissionPolicy objects "
                     f"({', '.join(sorted({o['metadata']['labels'][RULE_LABEL] for o in mutating}))}), and the "
                     f"cluster (Kubernetes {found.git_version}) does not serve "
                     f"{want or 'MutatingAdmissionPolicy'}: {GATE_HINT}; or turn those rules' mutations off in "
                     "the policy (inTree.mutation needs them served)")
        objects = [o for o in objects if not o["kind"].startswith("Mutating")]
        check_mutating = False
    elif mutating and want is not None and want.endswith("/v1beta1"):
        try:
            gate = read_feature_gate(client)
        except ApiError as exc:
            # /metrics needs its own permission (get on the non-resource URL); the objects are compared all the same
            warn(f"the apiserver's /metrics cannot be read ({exc}): whether its MutatingAdmissionPolicy feature "
                 "gate is on is not checked (the API is served with the gate off too)")
            gate = None
        if gate is False:
            lines.append(f"MutatingAdmissionPolicy: the cluster serves {want} but its feature gate "
                         "MutatingAdmissionPolicy is off (kubernetes_feature_enabled 0 in the apiserver's /metrics), "
                         f"so it stores the policies and applies none: {GATE_HINT}")
    try:
        live = list_objects(client, validating=args.only != "mutating",
                            mutating=want if check_mutating and want in served else None)
    except ApiError as exc:
        return fail(f"listing the cluster's admission policies failed: {exc}")
    lines += drift(objects, live)
    for line in lines:
        print(line)
    if not lines:
        print(f"{len(objects)} in-tree admission objects, as the policy exports them")
    return EXIT_DENIED if lines else EXIT_OK
