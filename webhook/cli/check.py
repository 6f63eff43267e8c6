"""`gpu-admission check`: evaluate manifests as the webhooks would on CREATE."""
from __future__ import annotations

import json
import sys
from pathlib import Path

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
from webhook.cli.report import result_dict, summary, text_block
from webhook.cli.subjects import Subject, warned
from webhook.policy.messages import T, render

STDIN = "<stdin>"
# Not checked, but read: the cluster's capacity that unsatisfiable-request compares requests with.
CAPACITY_KINDS = ("Node", "ResourceSlice")


def register(sub) -> None:
    p = sub.add_parser("check", help="evaluate manifests as the webhooks would on CREATE",
                       description="Evaluate manifests (files, directories, - for stdin; multi-document YAML, JSON, "
                       "List kinds, Helm output) as the webhooks would on CREATE. Claims, templates and DeviceClasses "
                       "resolve from every document given. Exit 0: nothing would be denied; 1: something would "
                       "(or, with --fail-on-warn, something was warned about); 2: usage, policy or input errors.")
    p.add_argument("--output", "-o", choices=("text", "json", "sarif", "junit", "github"), default="text",
                   help="text (default), json, sarif (SARIF 2.1.0 for code scanning), junit (JUnit XML), "
                   "github (GitHub Actions annotations)")
    add_ci_options(p)
    add_input_options(p)
    p.set_defaults(func=run)


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


def subjects(results, inputs) -> list[Subject]:
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
        out.append(Subject(evaluation=ev, where=doc.where, group=doc.file, file=file, line_of=line_of))
    return out


def capacity_line(docs) -> str:
    """`6 nodes and 2 resourceslices (nodes.yaml, slices.yaml)`."""
    counts = {kind: sum(1 for d in docs if d.obj.get("kind") == kind) for kind in CAPACITY_KINDS}
    parts = [f"{n} {kind.lower()}{'s' if n != 1 else ''}" for kind, n in counts.items() if n]
    files = ", ".join(dict.fromkeys(d.file for d in docs))
    return f"{' and '.join(parts)} ({files})"


def run(args) -> int:
    loaded = policy_and_inputs(args)
    if loaded is None:
        return EXIT_ERROR
    policy, inputs = loaded
    results = list(evaluate_inputs(inputs, policy, args.namespace))
    others = [d for d in inputs.documents if not handled(d)]
    capacity = [d for d in others if d.obj.get("kind") in CAPACITY_KINDS]
    others = [d for d in others if d.obj.get("kind") not in CAPACITY_KINDS]
    if args.output == "text":
        for doc, ev in results:
            print("\n".join(text_block(ev, doc.where)))
        if capacity:
            print(f"- {capacity_line(capacity)}: the cluster capacity that unsatisfiable-request compares with")
        for d in others:
            print(render(T("- {kind} ({where}): skipped, not a kind gpu-admission handles",
                           kind=str(d.obj.get("kind")).lower(), where=d.where), policy.language))
        print(summary([ev for _, ev in results], len(others), len(inputs.errors), policy.language))
    else:
        if args.output == "json":
            json.dump([result_dict(ev, doc.source) for doc, ev in results], sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
        else:
            write_ci_output(args.output, subjects(results, inputs), policy, name="gpu-admission check",
                            input_errors=inputs.errors)
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
