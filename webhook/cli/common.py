"""What the CLI's commands share: the policy option and evaluating the given documents as one bundle."""
from __future__ import annotations

import argparse
import json
import sys

from webhook.cli.annotations import github_lines, write_step_summary
from webhook.cli.codeclimate import codeclimate_issues
from webhook.cli.inputs import Inputs, read_inputs
from webhook.cli.junit import junit_xml
from webhook.cli.policy_arg import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_policy_options, load_policy_or_exit
from webhook.cli.sarif import sarif_log
from webhook.cli.subjects import Subject
from webhook.config import Policy
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.objects.kinds import BY_KIND, is_legacy_dra

__all__ = ["EXIT_DENIED", "EXIT_ERROR", "EXIT_OK", "add_input_options", "add_policy_options", "evaluate_inputs",
           "handled", "load_policy_or_exit", "policy_and_inputs"]


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """The manifests to read and the policy to read them with (what `policy_and_inputs` returns)."""
    parser.add_argument("paths", nargs="+", metavar="FILE|DIR|-")
    add_policy_options(parser)
    parser.add_argument("--namespace", "-n", default="default", metavar="NS",
                        help="namespace of documents that name none, as kubectl apply would place them "
                             "(default: default)")
    parser.add_argument("--ignore", metavar="PATTERN", action="append", default=[],
                        help="leave out files whose path or name matches the glob (k8s/tests/*, *-values.yaml); "
                        "repeatable. Directories are walked without their hidden folders and files")
    parser.add_argument("--skip-kind", metavar="KIND", action="append", default=[], dest="skip_kinds",
                        type=lambda v: v.strip(),
                        help="leave out documents of this kind (case-insensitive; repeatable, or KIND,KIND): "
                        "they are neither checked nor read for claims")


def add_ci_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fail-on-warn", action="store_true",
                        help="exit 1 when a finding warns (warn or audit actions, dry-run denials, rules that "
                        "failed), not only when something would be denied")


def write_ci_output(output: str, subjects: list[Subject], policy: Policy, *, name: str, input_errors=(),
                    out=None) -> None:
    """sarif, junit, codeclimate or github output on `out` (stdout)."""
    out = sys.stdout if out is None else out
    if output == "sarif":
        json.dump(sarif_log(subjects, policy, input_errors=input_errors), out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif output == "junit":
        out.write(junit_xml(subjects, name=name, input_errors=input_errors))
    elif output == "codeclimate":
        json.dump(codeclimate_issues(subjects, input_errors=input_errors), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        lines = github_lines(subjects, input_errors=input_errors)
        out.write("".join(line + "\n" for line in lines))
        write_step_summary(subjects, input_errors=input_errors, title=name)


def policy_and_inputs(args) -> tuple[Policy, Inputs] | None:
    """A command's policy and documents, with each input error printed; None when the policy does not load."""
    policy = load_policy_or_exit(args)
    if policy is None:
        return None
    skip = [k for v in getattr(args, "skip_kinds", []) for k in v.split(",") if k.strip()]
    inputs = read_inputs(args.paths, ignore=getattr(args, "ignore", ()), skip_kinds=skip)
    for error in inputs.errors:
        print(f"gpu-admission: {error}", file=sys.stderr)
    return policy, inputs


def handled(doc) -> bool:
    """A document the engine evaluates. Nodes are the cluster's capacity here, not objects being applied
    (a Node is judged only on the UPDATE that relabels it, which manifests never are)."""
    kind = doc.obj.get("kind")
    return (kind in BY_KIND and kind != "Node") or is_legacy_dra(doc.obj)


def evaluate_inputs(inputs: Inputs, policy: Policy, namespace: str, *, fallback=None):
    """(document, Evaluation) for each handled document, resolving references across all of them."""
    resolver = BundleResolver((d.obj for d in inputs.documents), default_namespace=namespace, fallback=fallback)
    for doc in inputs.documents:
        if handled(doc):
            yield doc, evaluate_object(doc.obj, policy=policy, resolver=resolver, namespace=namespace)
