"""`gpu-admission audit`: evaluate what a live cluster runs with the webhook's engine and lookups."""
from __future__ import annotations

import datetime
import json
import sys

import yaml

from webhook.audit import cohorts
from webhook.audit.apply import apply_reports, not_served, owner_reference
from webhook.audit.evaluate import Audited, cluster_lookups, evaluate_listing
from webhook.audit.listing import ListFailure, Listing, list_cluster
from webhook.audit.pending import Pending, has_pending, list_capacity, missing_runtime_classes, pending_gpu_pods
from webhook.audit.policyreport import OPENREPORTS, WGPOLICY, build_reports
from webhook.audit.progress import Progress
from webhook.audit.table import render_table
from webhook.cli.common import (
    EXIT_DENIED,
    EXIT_ERROR,
    EXIT_OK,
    add_ci_options,
    add_policy_options,
    load_policy_or_exit,
    write_ci_output,
)
from webhook.cli.exits import fail, warn
from webhook.cli.report import JSON_FORMAT_VERSION, result_dict
from webhook.cli.subjects import Subject, warned
from webhook.lookups.apiserver import ApiError
from webhook.lookups.cluster import ClusterResolver
from webhook.lookups.kubeconfig import ClusterConfigError, load_api_client
from webhook.lookups.resources import NODES, RESOURCE_SLICES
from webhook.policy.explain import explanation_dict, render_text
from webhook.policy.messages import T, line, render
from webhook.rules import Action, Rule
from webhook.text import columns


def register(sub) -> None:
    p = sub.add_parser(
        "audit", help="evaluate what a live cluster runs",
        description="List Pods, pod-bearing workloads, ResourceClaims, ResourceClaimTemplates and DeviceClasses "
        "from a live cluster (kubeconfig, or in-cluster), evaluate each as the webhooks would on CREATE, and "
        "report as a table, JSON (the objects of `check -o json`), wgpolicyk8s.io PolicyReports, "
        "openreports.io Reports, or the CI formats of `check` (sarif, junit, github). Running Pods are "
        "reported for what the validating rules say of them as they run. Across all namespaces the audit "
        "also lists Nodes and ResourceSlices for its cohort report: each GPU node's allocation owners and "
        "GFD labels against the cohort the policy assigns (rule allocation-owner, cluster-scoped results; a "
        "disagreement counts as a denial at the rule's enforce action), and cohorts with no node (a "
        "warning). Kinds that cannot be listed are "
        "reported and the rest goes on. Exit 0: nothing would be denied; 1: something would (or, with "
        "--fail-on-warn, something was warned about); 2: usage or configuration errors, nothing could be "
        "listed, or --apply failed. With --apply, writing the reports is the job: exit 0 once they are "
        "written, findings or not, unless --fail-on-findings.")
    p.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                   help="audit this namespace (repeatable; default: all namespaces)")
    p.add_argument("--output", "-o", choices=("table", "json", "policyreport", "openreports", "sarif", "junit",
                                              "github"), default="table",
                   help="table (default), json, policyreport (wgpolicyk8s.io/v1alpha2), openreports "
                   "(openreports.io/v1alpha1), sarif, junit, github")
    p.add_argument("--apply", action="store_true",
                   help="with -o policyreport or openreports: write the reports to the cluster (create or update) "
                   "instead of printing them, and delete this tool's reports the audited scope no longer produces")
    p.add_argument("--owner-webhook", metavar="NAME",
                   help="with --apply: make the ValidatingWebhookConfiguration NAME own the reports, so that "
                   "uninstalling the webhook removes them")
    p.add_argument("--fail-on-findings", action="store_true",
                   help="with --apply: exit 1 when something would be denied, even though the reports were written")
    add_policy_options(p)
    add_ci_options(p)
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, "
                   "then the in-cluster service account)")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current context)")
    p.add_argument("--chunk-size", type=int, default=500, metavar="N",
                   help="objects per list request (default: 500, as kubectl)")
    p.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="timeout of each API request (default: 30)")
    p.set_defaults(func=run)


REPORTS = ("policyreport", "openreports")


def _subjects(audited: list[Audited]) -> list[Subject]:
    out = []
    for a in audited:
        ev = a.evaluation
        where = f"{a.resource.qualified} {f'{ev.namespace}/' if ev.namespace else ''}{ev.name}"
        out.append(Subject(evaluation=ev, where=where, group=ev.namespace or "(cluster)"))
    return out



def _failure_dict(f: ListFailure, source: dict) -> dict:
    """A kind that could not be listed, in the shape of a result (so consumers iterate one list)."""
    return {"kind": f.resource.kind, "namespace": f.namespace or "", "name": "",
            "source": {**source, "resource": f.resource.qualified}, "allowed": None, "violations": [],
            "patch": [], "error": f.reason}


def _runtime_text(name: str, cohort: str):
    return T('RuntimeClass "{runtime}" of cohort "{cohort}" does not exist in the cluster: default-runtime-class '
             'does not set it (with RuntimeClass lookups on) and pods that name it are refused; create it, or set '
             "the cohort's runtimeClassName to one that exists", runtime=name, cohort=cohort)


def _runtime_dict(name: str, cohort: str, source: dict, language: str) -> dict:
    """A missing RuntimeClass, in the shape of a result (so consumers iterate one list)."""
    return {"kind": "RuntimeClass", "namespace": "", "name": name, "source": source, "allowed": None,
            "violations": [{"rule": "default-runtime-class", "action": "warn", "path": "metadata.name",
                            "message": render(_runtime_text(name, cohort), language)}], "patch": []}


def _cluster_notes(pending: list[Pending], runtime: list[tuple[str, str]], language: str) -> str:
    """The Pending GPU pods with their explanations, and missing RuntimeClasses, after the findings' table."""
    out = []
    for name, cohort in runtime:
        out.append("\n" + render(_runtime_text(name, cohort), language))
    if pending:
        out.append("\n" + render(T("Pending GPU pods ({count}):", count=len(pending)), language))
        out.extend(render_text(p.explanation, language) for p in pending)
    return "\n".join(out) + ("\n" if out else "")


def _policy_reports(args, client, audited, listing, namespaces, language="en", pending=()) -> bool:
    """Print the reports, or with --apply write them; False when something could not be done."""
    owner = None
    if args.owner_webhook:
        try:
            owner = owner_reference(client, args.owner_webhook, timeout=args.request_timeout)
        except ApiError as err:
            warn(f"owner ValidatingWebhookConfiguration {args.owner_webhook!r}: {err.describe()}")
            return False
    api = OPENREPORTS if args.output == "openreports" else WGPOLICY
    reports = build_reports(audited, listing.failures, now=datetime.datetime.now(datetime.UTC), owner=owner,
                            api=api, language=language, pending=pending)
    if not args.apply:
        sys.stdout.write(yaml.safe_dump_all(reports, sort_keys=False, allow_unicode=True))
        return True
    problem = not_served(client, api, timeout=args.request_timeout)
    if problem:
        warn(problem)
        return False
    if listing.failures:
        warn("old reports are kept: with kinds unlisted, this audit cannot tell which are stale")
    applied = apply_reports(client, reports, namespaces=namespaces, timeout=args.request_timeout,
                            prune=not listing.failures, api=api)
    for item in applied:
        print(item.line(), file=sys.stderr if item.outcome == "failed" else sys.stdout)
    return not any(item.outcome == "failed" for item in applied)


def _cohort_report(capacity: Listing, policy) -> tuple[cohorts.CohortReport | None, tuple[ListFailure, ...]]:
    """The cohort report from the Nodes and ResourceSlices listed with the capacity; without Nodes there is no
    report, without ResourceSlices no DRA owner is known (both said as kinds that could not be listed)."""
    failures = tuple(f for f in capacity.failures if f.resource in (NODES, RESOURCE_SLICES))
    if any(f.resource == NODES for f in failures):
        return None, failures
    slices = None if any(f.resource == RESOURCE_SLICES for f in failures) else \
        [o for r, o in capacity.objects if r == RESOURCE_SLICES]
    return cohorts.build([o for r, o in capacity.objects if r == NODES], slices, policy), failures


def _empty_cohorts(report: cohorts.CohortReport | None, policy) -> list[tuple[str, dict]]:
    """Cohorts with no node, each as a warning (an autoscaled cohort may be at zero for now)."""
    if report is None:
        return []
    out = []
    for name in report.empty:
        message = line(policy, Rule.ALLOCATION_OWNER, f'cohort "{name}"',
                       T('no node carries its node labels (cohorts[name="{name}"].nodeLabels)', name=name),
                       T("the policy declares a cohort that no GPU node belongs to"),
                       T("label the cohort's nodes, or remove the cohort from the policy"), policy.language)
        out.append((name, {"rule": Rule.ALLOCATION_OWNER.value, "action": Action.WARN.value,
                           "path": f'cohorts[name="{name}"].nodeLabels', "message": message}))
    return out


def _cohort_table(report: cohorts.CohortReport, empty: list[tuple[str, dict]], language: str) -> str:
    """The GPU nodes with their cohort and owners, as people compare them with the policy."""
    header = [render(h, language) for h in (T("NODE"), T("COHORT"), T("OWNERS"), T("GFD LABELS"), T("DISAGREES"))]
    rows = [header]
    for r in report.nodes:
        rows.append([r.name, r.cohort.name if r.cohort else render(T("(none)"), language),
                     ", ".join(r.owners) or "-", ", ".join(f"{k}={v}" for k, v in sorted(r.labels.items())) or "-",
                     ", ".join(p for p, _ in r.problems) or "-"])
    widths = [max(columns(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = ["", render(T("GPU nodes and their cohorts:"), language)]
    lines += ["   ".join(c + " " * (w - columns(c)) for c, w in zip(row, widths)) + "   " + row[-1] for row in rows]
    label = render(T("Cohort with no node:"), language)
    lines += [f"{label} {name}" for name, _ in empty]
    return "\n".join(x.rstrip() for x in lines)


def run(args) -> int:
    if (args.apply or args.owner_webhook) and args.output not in REPORTS:
        return fail("--apply and --owner-webhook go with --output policyreport or openreports")
    if args.owner_webhook and not args.apply:
        return fail("--owner-webhook goes with --apply")
    if args.fail_on_findings and not args.apply:
        return fail("--fail-on-findings goes with --apply (without it, findings always exit 1)")
    if args.chunk_size < 1 or args.request_timeout <= 0:
        return fail("--chunk-size and --request-timeout must be positive")
    policy = load_policy_or_exit(args)
    if policy is None:
        return EXIT_ERROR
    try:
        client = load_api_client(args.kubeconfig, args.context)
    except ClusterConfigError as exc:
        return fail(str(exc))
    namespaces = tuple(dict.fromkeys(args.namespace))
    progress = Progress(sys.stderr)
    try:
        listing = list_cluster(client, namespaces, chunk_size=args.chunk_size, timeout=args.request_timeout,
                               on_page=progress.listed)
        progress.finish()
        for f in listing.failures:
            warn(f"cannot list {f.where}: {f.reason}")
        if listing.nothing_listed:
            return fail("nothing could be listed")
        lookups = cluster_lookups(policy, client)
        try:
            audited = evaluate_listing(listing, policy, lookups, cluster_scoped=not namespaces,
                                       on_object=progress.evaluated)
        finally:
            if isinstance(lookups, ClusterResolver):
                lookups.close()
        progress.finish()
        # Nodes and ResourceSlices serve both the Pending pods' explanations and (across all namespaces) the
        # cohort report: listed once for both
        capacity = list_capacity(client, listing, policy, chunk_size=args.chunk_size, timeout=args.request_timeout,
                                 cohort_report=not namespaces)
        waiting = has_pending(listing)
        for f in capacity.failures:
            if f.resource in (NODES, RESOURCE_SLICES):
                warn(f"cannot list {f.where}: {f.reason}" +
                     (" (Pending GPU pods are explained without them)" if waiting else ""))
        pending = pending_gpu_pods(listing, capacity, policy)
        runtime = missing_runtime_classes(capacity, policy)
        report = None
        if not namespaces:
            report, node_failures = _cohort_report(capacity, policy)
            listing = type(listing)(listing.objects, listing.failures + node_failures, listing.attempts,
                                    listing.resources)
            if report is not None:
                audited += cohorts.audited(report, policy)
        empty = _empty_cohorts(report, policy)
        denied = any(not a.evaluation.allowed for a in audited)
        status = EXIT_DENIED if denied or (args.fail_on_warn and (empty or any(warned(a.evaluation)
                                                                             for a in audited))) else EXIT_OK
        if args.output == "json":
            source = {"cluster": client.configuration.host}
            # check's JSON format (its version; no file, so no line)
            results = [{"formatVersion": JSON_FORMAT_VERSION,
                        **result_dict(a.evaluation, {**source, "resource": a.resource.qualified})}
                       for a in audited]
            for r in results:
                for v in r["violations"]:
                    v["line"] = None
            results += [_failure_dict(f, source) for f in listing.failures]
            explained = {(p.namespace, p.name): explanation_dict(p.explanation, policy.language) for p in pending}
            for r in results:
                if r["kind"] == "Pod" and (r["namespace"], r["name"]) in explained:
                    r["explain"] = explained[(r["namespace"], r["name"])]
            results += [_runtime_dict(name, cohort, source, policy.language) for name, cohort in runtime]
            results += [{"kind": "Cohort", "namespace": "", "name": name, "source": {**source, "resource": "policy"},
                         "allowed": True, "violations": [v], "patch": []} for name, v in empty]
            json.dump(results, sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
        elif args.output == "table":
            print(render_table(audited, listing.failures, policy.language))
            print(_cluster_notes(pending, runtime, policy.language), end="")
            if report is not None and report.nodes:
                print(_cohort_table(report, empty, policy.language))
        elif args.output not in REPORTS:
            write_ci_output(args.output, _subjects(audited), policy, name="gpu-admission audit",
                            input_errors=[f"cannot list {f.where}: {f.reason}" for f in listing.failures])
        elif not _policy_reports(args, client, audited, listing, namespaces, policy.language, pending):
            return EXIT_ERROR
        elif args.apply and not args.fail_on_findings:
            return EXIT_OK  # a CronJob that writes reports succeeds when they are written
        return status
    finally:
        progress.finish()
        client.close()
