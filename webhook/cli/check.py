"""`gpu-admission check`: evaluate manifests as the webhooks would on CREATE."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from webhook.cli.cluster_fields import as_stored, enabled, feature_gates, kubernetes_version
from webhook.cli.common import (
    EXIT_DENIED,
    EXIT_ERROR,
    EXIT_OK,
    add_ci_options,
    add_input_options,
    evaluate_inputs,
    handled,
    policy_and_inputs,
    write_ci_output,
)
from webhook.cli.lines import LineFinder
from webhook.cli.report import JSON_FORMAT_VERSION, result_dict, summary, text_block
from webhook.cli.subjects import Subject, warned
from webhook.policy.definitions import REASONS
from webhook.policy.messages import T, render
from webhook.rules import Rule

STDIN = "<stdin>"
FORMATS = ("text", "json", "sarif", "junit", "github", "codeclimate")
SHOWS = ("all", "failures", "summary")
# Not checked, but read: the cluster's capacity that unsatisfiable-request compares requests with.
CAPACITY_KINDS = ("Node", "ResourceSlice")


def register(sub) -> None:
    p = sub.add_parser("check", help="evaluate manifests as the webhooks would on CREATE",
                       description="Evaluate manifests (files, directories, - for stdin; multi-document YAML, JSON, "
                       "List kinds, Helm output) as the webhooks would on CREATE. Claims, templates and DeviceClasses "
                       "resolve from every document given. Exit 0: nothing would be denied; 1: something would "
                       "(or, with --fail-on-warn, something was warned about); 2: usage, policy or input errors.")
    p.add_argument("--output", "-o", type=_output, action="append", default=None, metavar="FORMAT[=FILE]",
                   help="text (default), json, sarif (SARIF 2.1.0 for code scanning), junit (JUnit XML), github "
                   "(GitHub Actions annotations, groups and step summary), codeclimate (GitLab Code Quality); "
                   "FORMAT=FILE writes that format to FILE, so one run gives several (-o sarif=out.sarif "
                   "-o github); at most one goes to stdout")
    p.add_argument("--show", choices=SHOWS, default=None,
                   help="what the text output lists: all (every object), failures (objects with findings, then the "
                   "summary) or summary (the summary line alone); default all on a terminal and failures where "
                   "the CI environment variable is set, as every CI system sets it: a pipeline's log is read for "
                   "what failed, and the summary counts the rest")
    p.add_argument("--path-prefix", metavar="PREFIX", default="",
                   help="put before the template paths of `helm template` output (its # Source: comments), so that "
                   "annotations reach the chart's files in the repository: --path-prefix charts/ for charts/my-chart")
    p.add_argument("--kubernetes-version", metavar="1.MINOR", type=kubernetes_version, default=None,
                   help="the cluster the verdicts are for (1.34 to 1.37): fields its apiserver would not store are "
                   "dropped first, as there (a DeviceClass's extendedResourceName without DRAExtendedResource, "
                   "off by default before 1.36); default: every field counts")
    p.add_argument("--feature-gates", metavar="GATE=BOOL,...", type=feature_gates, default={},
                   help="the cluster's apiserver feature gates that differ from the version's defaults "
                   "(DRAExtendedResource=true)")
    p.add_argument("--explain", action="store_true",
                   help="text output: after the objects, the full reason of each rule that found something (a "
                   "finding's line gives the fix and a one-clause why), with the link to its page")
    add_ci_options(p)
    add_input_options(p)
    p.set_defaults(func=run)


def _output(text: str) -> tuple[str, str | None]:
    fmt, eq, file = text.partition("=")
    if fmt not in FORMATS:
        raise argparse.ArgumentTypeError(f"{fmt!r}: not one of {', '.join(FORMATS)}")
    if eq and not file:
        raise argparse.ArgumentTypeError(f"{text!r}: FORMAT=FILE needs a file")
    return fmt, file or None


def relative_file(label: str) -> str | None:
    """A manifest's path as SARIF and GitHub want it: relative to the working directory (the
    repository's root in CI) where it is under it."""
    if label == STDIN:
        return None
    path = Path(label)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            pass
    return path.as_posix()


def subjects(results, inputs, prefix: str = "") -> list[Subject]:
    finders = {label: LineFinder(text) for label, text in inputs.texts.items()}
    out = []
    for doc, ev in results:
        finder = finders.get(doc.file)
        file = relative_file(doc.file)
        line_of = None if finder is None else (lambda path, f=finder, d=doc: f.line(d.index, path, d.item))
        if file is None and finder is not None:
            # `helm template ... | check -`: the template a document came from, without a line (the
            # rendered document's lines are not the template's).
            file, line_of = finder.helm_source(doc.index), None
            if file is not None and prefix:
                file = f"{prefix.rstrip('/')}/{file}"
        out.append(Subject(evaluation=ev, where=doc.where, group=doc.file, file=file, line_of=line_of))
    return out


def capacity_line(docs) -> str:
    """`6 nodes and 2 resourceslices (nodes.yaml, slices.yaml)`."""
    counts = {kind: sum(1 for d in docs if d.obj.get("kind") == kind) for kind in CAPACITY_KINDS}
    parts = [f"{n} {kind.lower()}{'s' if n != 1 else ''}" for kind, n in counts.items() if n]
    files = ", ".join(dict.fromkeys(d.file for d in docs))
    return f"{' and '.join(parts)} ({files})"


def _show(args) -> str:
    if args.show:
        return args.show
    return "failures" if os.environ.get("CI", "").lower() not in ("", "0", "false") else "all"


def _as_stored(args, inputs):
    """The documents as the named cluster's apiserver stores them; each dropped field said on stderr."""
    if args.kubernetes_version is None and not args.feature_gates:
        return inputs
    minor = args.kubernetes_version
    on = enabled(37 if minor is None else minor, args.feature_gates)
    documents = []
    for doc, (obj, dropped) in zip(inputs.documents, as_stored((d.obj for d in inputs.documents), minor,
                                                                args.feature_gates)):
        for path in dropped:
            gates = ", ".join(g for g, v in on.items() if not v)
            print(f"gpu-admission: {doc.where}: {path} dropped, as Kubernetes 1.{minor or 37} without {gates} "
                  "does not store it", file=sys.stderr)
        documents.append(dataclasses.replace(doc, obj=obj) if dropped else doc)
    return dataclasses.replace(inputs, documents=tuple(documents))


def _json(results, finders) -> list[dict]:
    out = []
    for doc, ev in results:
        r = {"formatVersion": JSON_FORMAT_VERSION, **result_dict(ev, doc.source)}
        finder = finders.get(doc.file)
        for v in r["violations"]:
            v["line"] = finder.line(doc.index, v["path"], doc.item) if finder is not None else None
        out.append(r)
    return out


def _text(results, inputs, policy, capacity, others, show: str, out, explain: bool = False) -> None:
    spoke: dict[Rule, str] = {}  # the rules of the findings shown, in order, with their language
    for doc, ev in results:
        if show == "summary" or (show == "failures" and not (warned(ev) or not ev.allowed)):
            continue
        print("\n".join(text_block(ev, doc.where)), file=out)
        for v in ev.violations:
            spoke.setdefault(v.rule, ev.language)
    if explain:
        for rule, language in spoke.items():
            if rule in REASONS:
                print(render(T("why [{rule}]: {reason} {docs}", rule=rule.value, reason=REASONS[rule],
                               docs=policy.docs_url(rule, language)), language), file=out)
    if show == "all":
        if capacity:
            print(f"- {capacity_line(capacity)}: the cluster capacity that unsatisfiable-request compares with",
                  file=out)
        for d in others:
            print(render(T("- {kind} ({where}): skipped, not a kind gpu-admission handles",
                           kind=str(d.obj.get("kind")).lower(), where=d.where), policy.language), file=out)
    print(summary([ev for _, ev in results], len(others), len(inputs.errors), policy.language,
                  not_manifests=inputs.not_manifests, ignored=inputs.ignored,
                  left_out=inputs.skipped_kinds), file=out)


def run(args) -> int:
    outputs = args.output or [("text", None)]
    if sum(1 for _, file in outputs if file is None) > 1:
        print("gpu-admission: at most one --output goes to stdout; give the others a file (-o sarif=FILE)",
              file=sys.stderr)
        return EXIT_ERROR
    loaded = policy_and_inputs(args)
    if loaded is None:
        return EXIT_ERROR
    policy, inputs = loaded
    inputs = _as_stored(args, inputs)
    results = list(evaluate_inputs(inputs, policy, args.namespace))
    others = [d for d in inputs.documents if not handled(d)]
    capacity = [d for d in others if d.obj.get("kind") in CAPACITY_KINDS]
    others = [d for d in others if d.obj.get("kind") not in CAPACITY_KINDS]
    finders = {label: LineFinder(text) for label, text in inputs.texts.items()}
    for fmt, file in outputs:
        try:
            out = sys.stdout if file is None else open(file, "w", encoding="utf-8")
        except OSError as exc:
            print(f"gpu-admission: {file}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
        try:
            if fmt == "text":
                _text(results, inputs, policy, capacity, others, _show(args), out, args.explain)
            elif fmt == "json":
                json.dump(_json(results, finders), out, indent=2, ensure_ascii=False)
                out.write("\n")
            else:
                write_ci_output(fmt, subjects(results, inputs, args.path_prefix), policy,
                                name="gpu-admission check", input_errors=inputs.errors, out=out)
        finally:
            if file is not None:
                out.close()
    if any(fmt != "text" for fmt, _ in outputs):
        for d in others:
            print(f"gpu-admission: {d.where}: skipped, kind {d.obj.get('kind')} is not one gpu-admission handles",
                  file=sys.stderr)
    if inputs.errors and not inputs.documents:
        return EXIT_ERROR
    if any(not ev.allowed for _, ev in results):
        return EXIT_DENIED
    if inputs.errors:
        return EXIT_ERROR
    return EXIT_DENIED if args.fail_on_warn and any(warned(ev) for _, ev in results) else EXIT_OK
