"""The export a reviewer reads: `gpu-admission export` of the shipped default policy is at most 100 KB as it prints
it (YAML, every object: the validating and mutating policies and their bindings), and the messages are built from
the policies' variables (the container, the entry, the config a message names is a variable of its own, read by
name; a line's shared ending is one too), so that no messageExpression runs past a screen or two and none reads
the same element of the object over and over."""
from __future__ import annotations

import io
import re
from collections import Counter
from contextlib import redirect_stdout

import yaml

from webhook.cli.main import main
from webhook.config import default_policy
from webhook.intree.export import export

MAX_EXPORT = 100_000  # bytes
MAX_MESSAGE = 1_500
# A subscript by a variable's value (`variables.spec.containers[variables.containers]`): an element of the object
# the message reads; hoisted into a variable, a message names it once.
SUBSCRIPT = re.compile(r"[\w.]+\[variables\.[\w.]+\]")


def _printed(*argv: str) -> bytes:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["export", *argv]) == 0
    return out.getvalue().encode("utf-8")


def _messages() -> list[tuple[str, str]]:
    return [(o["metadata"]["name"], v["messageExpression"]) for o in export(default_policy())
            if o["kind"] == "ValidatingAdmissionPolicy" for v in o["spec"]["validations"]]


def test_the_shipped_default_exports_messages():
    assert len(_messages()) >= 40


def test_the_export_of_the_shipped_default_is_at_most_100_kb():
    printed = _printed()
    kinds = Counter(d["kind"] for d in yaml.safe_load_all(printed))
    assert kinds["ValidatingAdmissionPolicy"] >= 6 and kinds["MutatingAdmissionPolicy"] >= 1, kinds
    assert len(printed) <= MAX_EXPORT, (len(printed), kinds)


def test_no_message_expression_of_the_shipped_default_is_longer_than_1500_characters():
    longest = max(_messages(), key=lambda m: len(m[1]))
    assert len(longest[1]) <= MAX_MESSAGE, (longest[0], len(longest[1]))


def test_no_message_reads_the_same_element_twice():
    for name, message in _messages():
        repeated = {k: n for k, n in Counter(SUBSCRIPT.findall(message)).items() if n > 1}
        assert not repeated, (name, repeated)
