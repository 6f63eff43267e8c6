"""The rules index of docs/rules/README.md, written from webhook/rules.py (`make docs`);
tests/test_rule_docs.py fails until this is run after a change to a rule's entry.

    .venv/bin/python -m tools.rule_docs docs/rules/README.md
"""
from __future__ import annotations

import sys
from pathlib import Path

from webhook.rules import RULES

BEGIN = "<!-- index: written by `make docs` from webhook/rules.py -->"
END = "<!-- end of index -->"


def index() -> str:
    lines = ["| Rule | Kind | Default action | Summary |", "| --- | --- | --- | --- |"]
    for rule, info in RULES.items():
        kind = "mutation" if info.mutation else "validation"
        lines.append(f"| [`{rule.value}`]({rule.value}.md) | {kind} | `{info.default.value}` | {info.summary} |")
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
