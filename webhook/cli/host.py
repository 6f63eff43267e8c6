"""`gpu-admission host inventory|check|capture`: what a GPU host runs, and whether it fits its cohort.

Read-only on the host: nvidia-smi queries, `nvidia-ctk --version`, containerd's config and the CDI specs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from webhook.cli.exits import fail, warn
from webhook.cli.policy_arg import (
    EXIT_DENIED,
    EXIT_ERROR,
    EXIT_OK,
    add_policy_options,
    cli_language,
    load_policy_or_exit,
)
from webhook.host.checks import Status, check_host, quoted, verdict
from webhook.host.facts import CONTAINERD_CONFIG, collect
from webhook.host.inventory import inventory, text
from webhook.host.node import parse_node
from webhook.host.nvsmi import ParseError
from webhook.host.sources import CapturedHost, LiveHost, Source, capture
from webhook.locale import LANGUAGES
from webhook.policy.messages import T, render
from webhook.text import columns, pad

EXIT = {Status.PASS: EXIT_OK, Status.FAIL: EXIT_DENIED, Status.UNKNOWN: EXIT_ERROR}
_MARK = {Status.PASS: T("pass"), Status.FAIL: T("FAIL"), Status.UNKNOWN: T("unknown")}
_VERDICT = {Status.PASS: "fit", Status.FAIL: "not fit", Status.UNKNOWN: "cannot tell"}  # JSON's `result`: a contract
_SAID = {Status.PASS: T("fit"), Status.FAIL: T("not fit"), Status.UNKNOWN: T("cannot tell")}


def register(sub) -> None:
    p = sub.add_parser("host", help="read nvidia-smi on a GPU host; check it against its cohort",
                       description="Read a GPU host (nvidia-smi, the container toolkit, containerd, CDI) or a "
                       "directory of its captured outputs, and check it against a cohort. Nothing is changed on the "
                       "host. See docs/host.md.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    inv = verbs.add_parser("inventory", help="each GPU and its model's MIG profile table",
                           description="Each GPU (product, memory, driver, CUDA, MIG capable and current/pending mode, "
                           "persistence and compute mode) and each model's MIG profile table as a cohort's mig: takes "
                           "it. Exit 0: GPUs read; 2: they could not be.")
    _source_options(inv)
    inv.add_argument("--show-ids", action="store_true", help="include UUIDs, serial numbers and PCI bus ids")
    inv.add_argument("--output", "-o", choices=("text", "json"), default="text")
    inv.add_argument("--lang", choices=LANGUAGES, default=None,
                     help="language of the text report; without it LANGUAGE, LC_ALL, LC_MESSAGES or LANG decides "
                     "(the JSON is the same in every language)")
    inv.set_defaults(func=run_inventory)

    chk = verbs.add_parser("check",
                           help="check this host against a cohort and the driver, toolkit and runtime prerequisites",
                           description="Check the host against cohort NAME of the policy: driver branch, container "
                           "toolkit, CDI (DRA), the containerd runtime handler (device plugin), MIG mode and profiles, "
                           "compute mode and MPS. Exit 0: fit; 1: not fit; 2: cannot tell (something could not be "
                           "read) or usage and policy errors.")
    chk.add_argument("--cohort", required=True, metavar="NAME")
    add_policy_options(chk)
    chk.add_argument("--node", metavar="FILE", help="the host's Node as `kubectl get node NAME -o json` prints it, to "
                     "check its labels and what it offers (default: node.json in --from DIR, if there)")
    chk.add_argument("--handler", metavar="NAME", help="the containerd handler of the cohort's RuntimeClass "
                     "(default: the RuntimeClass name, as the RuntimeClass nvidia has handler nvidia)")
    _source_options(chk)
    chk.add_argument("--output", "-o", choices=("text", "json"), default="text")
    chk.set_defaults(func=run_check)

    cap = verbs.add_parser("capture", help="write what --from DIR reads, on the GPU host",
                           description="Run the read-only commands and copy the files that inventory and check read "
                           "into DIR, for --from DIR elsewhere. Run it as root to read containerd's config.")
    cap.add_argument("dir", metavar="DIR")
    cap.set_defaults(func=run_capture)


def _source_options(p) -> None:
    p.add_argument("--from", dest="source", metavar="DIR",
                   help="read captured outputs from DIR instead of this host (file names: docs/host.md)")
    p.add_argument("--containerd-config", metavar="PATH", default=CONTAINERD_CONFIG,
                   help=f"containerd's root config (default: {CONTAINERD_CONFIG})")


def _source(args) -> Source | None:
    if args.source is None:
        return LiveHost()
    if not Path(args.source).is_dir():
        warn(f"--from {args.source}: not a directory")
        return None
    return CapturedHost(args.source)


def run_inventory(args) -> int:
    source = _source(args)
    if source is None:
        return EXIT_ERROR
    language = "en" if args.output == "json" else cli_language(args) or "en"
    inv = inventory(collect(source, containerd_config=args.containerd_config), show_ids=args.show_ids,
                    language=language)
    if args.output == "json":
        json.dump(inv, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print("\n".join(text(inv, language)))
    return EXIT_ERROR if inv["errors"] else EXIT_OK


def run_check(args) -> int:
    policy = load_policy_or_exit(args)
    if policy is None:
        return EXIT_ERROR
    cohort = policy.cohort(args.cohort)
    if cohort is None:
        return fail(f"unknown cohort {args.cohort!r}; the policy's cohorts are "
                    f"{', '.join(c.name for c in policy.cohorts)}")
    source = _source(args)
    if source is None:
        return EXIT_ERROR
    node_file = args.node or (str(Path(args.source) / "node.json") if args.source and
                              (Path(args.source) / "node.json").is_file() else None)
    node = None
    if node_file is not None:
        try:
            node = parse_node(Path(node_file).read_text(encoding="utf-8"), node_file)
        except (OSError, UnicodeDecodeError) as exc:
            return fail(f"--node {node_file}: cannot read: {getattr(exc, 'strerror', None) or exc}")
        except ParseError as exc:
            return fail(str(exc))
    facts = collect(source, containerd_config=args.containerd_config, node=node)
    findings = check_host(facts, cohort, policy, handler=args.handler)
    result = verdict(findings)
    if args.output == "json":
        json.dump({"cohort": cohort.name, "mechanism": cohort.mechanism, "manager": cohort.manager,
                   "source": render(facts.where), "result": _VERDICT[result], "exitCode": EXIT[result],
                   "findings": [f.as_dict() for f in findings]}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        language = policy.language
        print(render(T("host check: cohort {cohort} (mechanism {mechanism}, manager {manager}) against {source}",
                       cohort=quoted(cohort.name), mechanism=cohort.mechanism, manager=cohort.manager,
                       source=facts.where), language))
        marks = {s: render(m, language) for s, m in _MARK.items()}
        width = max(8, *(columns(m) for m in marks.values()))
        for f in findings:
            print(f"    {pad(marks[f.status], width)} {f.message}")
        counts = {s: sum(1 for f in findings if f.status is s) for s in Status}
        print(render(T("{verdict}: {failed} failed, {unknown} unknown, {passed} passed", verdict=_SAID[result],
                       failed=counts[Status.FAIL], unknown=counts[Status.UNKNOWN], passed=counts[Status.PASS]),
                     language))
    return EXIT[result]


def run_capture(args) -> int:
    target = Path(args.dir)
    try:
        notes = capture(LiveHost(), target)
    except OSError as exc:
        return fail(f"cannot write {target}: {exc.strerror or exc}")
    for note in notes:
        warn(f"not captured: {note}")
    print(f"captured into {target}; read it with gpu-admission host inventory|check --from {target}")
    return EXIT_OK
