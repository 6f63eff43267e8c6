"""The policy options every command shares (`--config` overlays, `--set`, `--base`); light on
imports, so that `host` runs on a GPU host that has only the policy's own dependencies."""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from webhook.cli.exits import EXIT_DENIED, EXIT_ERROR, EXIT_OK
from webhook.config import ConfigError, Policy, load_layers
from webhook.config.model import InTree
from webhook.locale import LANGUAGES, from_environment

__all__ = ["EXIT_DENIED", "EXIT_ERROR", "EXIT_OK", "add_policy_options", "cli_language", "load_policy_or_exit"]


def add_policy_options(parser: argparse.ArgumentParser, read_locale: bool = True) -> None:
    """The options; `read_locale` as load_policy_or_exit's (the --lang help says which)."""
    parser.add_argument("--config", metavar="FILE", action="append", default=[],
                        help="policy overlay YAML, merged over the shipped default as the Helm chart merges its "
                        "policy value (maps merged, lists replaced, null drops a key); repeatable, later files win")
    parser.add_argument("--set", metavar="PATH=VALUE", action="append", default=[], dest="set_values",
                        help="one policy value after the files, e.g. cohorts[0].migStrategy=mixed or "
                        "rules.shared-claim=enforce (VALUE is YAML; null removes the key); repeatable")
    parser.add_argument("--base", metavar="FILE",
                        help="a complete policy the overlays go over, instead of the shipped default (the chart's "
                        "audit CronJob passes the policy the webhook runs)")
    parser.add_argument("--lang", choices=LANGUAGES, default=None,
                        help="language of the messages and reports; without it LANGUAGE, LC_ALL, LC_MESSAGES or LANG "
                        "(the first set, as gettext reads them) decides, and where that names no language of ours "
                        "(C, POSIX) the policy's `language` does" if read_locale else
                        "language of every message the exported objects write; without it the policy's `language` "
                        "and its namespace overrides' decide (never the locale: the messages are for the "
                        "cluster's users)")


def load_policy_or_exit(args, read_locale: bool = True) -> Policy | None:
    """The policy as the command evaluates it: the webhook's `inTree` setting is dropped, because no apiserver
    runs the in-tree policies for a command (`check` and `audit` report every rule themselves). Without
    `read_locale` only --lang changes the messages' language, not the user's locale (`export` writes
    messages for the cluster's users, in the policy's languages)."""
    try:
        policy = load_layers(args.config, args.set_values, base=args.base)
    except ConfigError as exc:
        for error in exc.errors:
            print(f"gpu-admission: {exc.source}: {error}", file=sys.stderr)
        return None
    if policy.in_tree != InTree():
        policy = dataclasses.replace(policy, in_tree=InTree())
    language = cli_language(args, None if read_locale else {})
    return policy.in_language(language) if language else policy


def cli_language(args, environ=None) -> str | None:
    """The language a command's user asked for: --lang, else the locale, as gettext programs read it."""
    return getattr(args, "lang", None) or from_environment(os.environ if environ is None else environ)
