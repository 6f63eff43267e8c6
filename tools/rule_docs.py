"""The rules index of docs/rules/README.md, written from the rules' definitions (webhook/policy/definitions.py,
`make docs`); tests/test_rule_docs.py fails until this is run after a change to a rule's definition.

    .venv/bin/python -m tools.rule_docs docs/rules/README.md
"""
from __future__ import annotations

import sys
from pathlib import Path

from webhook.policy.definitions import DEFINITIONS

BEGIN = "<!-- index: written by `make docs` from the rules' definitions -->"
END = "<!-- end of index -->"


def index() -> str:
    lines = ["| Rule | Kind | Default action | Summary |", "| --- | --- | --- | --- |"]
    for d in DEFINITIONS:
        kind = "mutation" if d.mutation else "validation"
        lines.append(f"| [`{d.rule.value}`]({d.rule.value}.md) | {kind} | `{d.default.value}` | {d.summary} |")
    return "\n".join(lines)


def with_index(text: str) -> str:
    """`text` with the part between the markers replaced by the index."""
    head, found, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not found or not end:
        raise ValueError(f"the markers {BEGIN!r} and {END!r} are missing")
    return f"{head}{BEGIN}\n{index()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    (path,) = argv
    target = Path(path)
    target.write_text(with_index(target.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
