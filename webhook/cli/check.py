"""`gpu-admission check`: evaluate manifests as the webhooks would on CREATE."""
from __future__ import annotations

import json
import sys

from webhook.cli.common import EXIT_DENIED, EXIT_ERROR, EXIT_OK, add_input_options, evaluate_inputs, handled, \
    policy_and_inputs
from webhook.cli.report import result_dict, summary, text_block


def register(sub) -> None:
    p = sub.add_parser("check", help="evaluate manifests as the webhooks would on CREATE",
                       description="Evaluate manifests (files, directories, - for stdin; multi-document YAML, JSON, "
                       "List kinds, Helm output) as the webhooks would on CREATE. Claims, templates and DeviceClasses "
                       "resolve from every document given. Exit 0: nothing would be denied; 1: something would; "
                       "2: usage, policy or input errors.")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text")
    add_input_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    loaded = policy_and_inputs(args)
    if loaded is None:
        return EXIT_ERROR
    policy, inputs = loaded
    results = list(evaluate_inputs(inputs, policy, args.namespace))
    others = [d for d in inputs.documents if not handled(d)]
    if args.output == "json":
        json.dump([result_dict(ev, doc.source) for doc, ev in results], sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        for d in others:
            print(f"gpu-admission: {d.where}: skipped, kind {d.obj.get('kind')} is not one gpu-admission handles",
                  file=sys.stderr)
    else:
        for doc, ev in results:
            print("\n".join(text_block(ev, doc.where)))
        for d in others:
            print(f"- {str(d.obj.get('kind')).lower()} ({d.where}): skipped, not a kind gpu-admission handles")
        print(summary([ev for _, ev in results], len(others), len(inputs.errors)))
    if inputs.errors and not inputs.documents:
        return EXIT_ERROR
    if any(not ev.allowed for _, ev in results):
        return EXIT_DENIED
    return EXIT_ERROR if inputs.errors else EXIT_OK
