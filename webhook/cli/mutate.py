"""`gpu-admission mutate`: print the manifests as the mutating webhook would leave them."""
from __future__ import annotations

import json
import sys

import jsonpatch
import yaml

from webhook.cli.common import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_input_options, evaluate_inputs, policy_and_inputs


def register(sub) -> None:
    p = sub.add_parser("mutate", help="print manifests as the mutating webhook would leave them",
                       description="Print every document, with Pods patched as the mutating webhook would patch them "
                       "on CREATE (workload templates are never mutated). Comments are not kept. The input files are "
                       "never written. Exit 0: nothing would be denied; 1: something would (its objects are printed "
                       "all the same, patched as far as the webhook would patch them); 2: usage, policy or input "
                       "errors.")
    p.add_argument("--output", "-o", choices=("yaml", "json"), default="yaml")
    add_input_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    loaded = policy_and_inputs(args)
    if loaded is None:
        return EXIT_ERROR
    policy, inputs = loaded
    patched = {}
    denied = False
    for doc, ev in evaluate_inputs(inputs, policy, args.namespace):
        denied = denied or not ev.allowed
        if ev.patch:
            patched[id(doc)] = jsonpatch.apply_patch(doc.obj, list(ev.patch))
        for v in ev.violations:
            if not v.rule.is_mutation:
                print(f"gpu-admission: {v.action.value}: {v.message}", file=sys.stderr)
    out = [patched.get(id(d), d.obj) for d in inputs.documents]
    if args.output == "json":
        json.dump(out if len(out) != 1 else out[0], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(yaml.safe_dump_all(out, sort_keys=False, allow_unicode=True))
    if inputs.errors and not inputs.documents:
        return EXIT_ERROR
    if denied:
        return EXIT_DENIED
    return EXIT_ERROR if inputs.errors else EXIT_OK
