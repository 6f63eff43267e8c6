"""webhook/rules.py, the rule-id table, written from the rules' definitions (`make schema`, before the schemas'
rule-id enum is written from it); tests/policy/test_registry.py fails until this is run after a rule is added,
removed, or changes its default action.

    .venv/bin/python -m tools.rule_ids webhook/rules.py

It imports every module of webhook/policy/checks and webhook/policy/mutations, not the table: a new rule's module
declares its id as a string, so it is read before its id is in the table. The table keeps its order (the rules'
order wherever they are listed, a public contract: reports list findings in it): the ids in the order they were
added, validations first; a new id comes last of its kind (several new ones alphabetically), a removed one goes.
A table left with a merge's conflict markers (two branches each adding a rule) is first written back without them,
each id once, so that the package imports again; the definitions then decide what it says.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from webhook.rule_id import Action

if TYPE_CHECKING:  # imported where used: the package imports the table, which may hold conflict markers
    from webhook.policy.contract import Definition

PACKAGES = ("webhook.policy.checks", "webhook.policy.mutations")
# A member line of the table as this module writes it: read back for its order (a line scan, not an import, so
# that a table left with merge conflicts is still read)
_MEMBER = re.compile(r'^    [A-Z0-9_]+ = "([a-z0-9-]+)"', re.M)
_CONFLICT = re.compile(r"^(<{7}|={7}|>{7}|\|{7})( .*)?$")

HEAD = '''"""Rule ids: a public contract (docs/architecture.md, Rule ids), used by every layer: messages, config,
metrics, JSON output, docs. Never rename one.

Written by `make schema` (tools/rule_ids.py) from the rules' definitions: a rule's id, its default action (the
config fills it in where a policy names none) and whether it mutates (metrics, reports and exit codes count a
mutation apart from a finding) are declared in its module's `DEFINITION` (webhook/policy/checks/<id>.py,
webhook/policy/mutations/<id>.py), and the layers below the policy read them here. Do not edit: a rule is
added by adding its module. The order of the ids is the rules' order everywhere they are listed: the order
they were added in, validations first.
"""
from __future__ import annotations

from webhook.rule_id import MUTATION, Action, RuleId

__all__ = ["DEFAULT_ACTIONS", "MUTATIONS", "VALIDATIONS", "Action", "Rule"]


class Rule(RuleId):
    """A rule id, with its default action (enforce unless given) and whether it mutates (`MUTATION`)."""

'''

TAIL = '''


MUTATIONS = frozenset(r for r in Rule if r.is_mutation)
VALIDATIONS = tuple(r for r in Rule if not r.is_mutation)
DEFAULT_ACTIONS: dict[Rule, Action] = {r: r.default for r in Rule}
'''


def definitions() -> list[Definition]:
    """Every rule module's definition, each checked against its module's name and package."""
    from webhook.policy.contract import Definition

    out = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"{package_name}.{info.name}")
            definition = getattr(module, "DEFINITION", None)
            if not isinstance(definition, Definition):
                raise ValueError(f"{module.__name__}: a rule's module ends with its DEFINITION")
            if definition.id.replace("-", "_") != info.name or definition.mutates is not package_name.endswith(
                    ".mutations"):
                raise ValueError(f"{module.__name__}: defines {definition.id!r}; a rule's module is named for its id, "
                                 f"in {PACKAGES[0]} (validation) or {PACKAGES[1]} (mutation)")
            out.append(definition)
    return out


def order(found: list[Definition], table: str) -> list[Definition]:
    """`found` in the table's order, the new ids last of their kind."""
    by_id = {d.id: d for d in found}
    kept = [by_id[i] for i in dict.fromkeys(_MEMBER.findall(table)) if i in by_id]
    new = sorted((d for d in found if d not in kept), key=lambda d: d.id)
    listed = kept + new
    return [d for d in listed if not d.mutates] + [d for d in listed if d.mutates]


def _member(d: Definition) -> str:
    value = f'"{d.id}"'
    if d.mutates:
        value += f", Action.{d.default.name}, MUTATION"
    elif d.default is not Action.ENFORCE:
        value += f", Action.{d.default.name}"
    return f"    {d.id.upper().replace('-', '_')} = {value}"


def table(definitions: list[Definition], current: str = "") -> str:
    """The table's text for these definitions (`current`: the table as it stands, for its order)."""
    return HEAD + "\n".join(_member(d) for d in order(definitions, current)) + TAIL


def without_conflicts(text: str) -> str:
    """`text` without a merge's conflict marker lines, each member line's id kept once (its first line)."""
    seen: set[str] = set()
    out = []
    for line in text.splitlines(keepends=True):
        if _CONFLICT.match(line.rstrip("\n")):
            continue
        member = _MEMBER.match(line)
        if member is not None:
            if member.group(1) in seen:
                continue
            seen.add(member.group(1))
        out.append(line)
    return "".join(out)


def main(argv: list[str]) -> int:
    (path,) = argv
    target = Path(path)
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    if without_conflicts(current) != current:  # before any import of the package, which imports the table
        current = without_conflicts(current)
        target.write_text(current, encoding="utf-8")
    text = table(definitions(), current)
    if text != current:
        target.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
