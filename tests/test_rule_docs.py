"""Everything derived from the rules' definitions (webhook/policy/definitions.py) is theirs: the docs index, a
page per rule with its kind and default action, the docs link every message ends with."""
from __future__ import annotations

import re

import pytest

from tests.support import REPO
from tools.rule_docs import with_index
from webhook.config import default_policy
from webhook.policy.definitions import BY_RULE
from webhook.rules import Rule

RULE_DOCS = REPO / "docs" / "rules"


def test_the_index_is_written_from_the_rule_list():
    readme = (RULE_DOCS / "README.md").read_text(encoding="utf-8")
    assert readme == with_index(readme), "run `make docs`"


def test_every_rule_has_a_page_and_every_page_a_rule():
    pages = {p.stem for p in RULE_DOCS.glob("*.md")} - {"README"}
    assert pages == {r.value for r in Rule}


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_a_rule_s_page_states_its_kind_and_default_action(rule):
    text = (RULE_DOCS / f"{rule.value}.md").read_text(encoding="utf-8")
    info = BY_RULE[rule]
    assert text.startswith(f"# {rule.value}\n")
    assert re.search(r"^\| Kind \| (\w+) \|$", text, re.M).group(1) == ("mutation" if info.mutation else "validation")
    assert re.search(r"^\| Default action \| `(\w+)`", text, re.M).group(1) == info.default.value


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_the_docs_link_names_the_rule_s_page(rule):
    assert default_policy().docs_url(rule).endswith(f"/docs/rules/{rule.value}.md")


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_a_rule_s_japanese_page_states_its_kind_and_default_action(rule):
    """docs/rules/ja/<rule>.md, which the Japanese messages link to, says what the English page says of it."""
    text = (RULE_DOCS / "ja" / f"{rule.value}.md").read_text(encoding="utf-8")
    info = BY_RULE[rule]
    assert text.startswith(f"# {rule.value}\n")
    assert re.search(r"^\| 種類 \| (\w+) ", text, re.M).group(1) == ("mutation" if info.mutation else "validation")
    assert re.search(r"^\| 既定のアクション \| `(\w+)`", text, re.M).group(1) == info.default.value
    assert f"](../{rule.value}.md)" in text  # the English page, for the full detail


def test_every_japanese_page_is_a_rule_s():
    assert {p.stem for p in (RULE_DOCS / "ja").glob("*.md")} == {r.value for r in Rule}


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_the_japanese_docs_link_names_the_japanese_page(rule):
    assert default_policy().docs_url(rule, "ja").endswith(f"/docs/rules/ja/{rule.value}.md")


_FENCE = re.compile(r"^```[^\n]*\n.*?^```$", re.M | re.S)


def _structure(text: str) -> tuple[list[int], list[str]]:
    """The heading levels in order (outside code blocks) and the code blocks, verbatim."""
    blocks = _FENCE.findall(text)
    prose = _FENCE.sub("", text)
    levels = [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) ", prose, re.M)]
    return levels, blocks


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_a_japanese_page_is_a_full_twin_of_the_english_page(rule):
    """Every section of the English page, in its order, with its examples and YAML exactly as they are."""
    english = (RULE_DOCS / f"{rule.value}.md").read_text(encoding="utf-8")
    japanese = (RULE_DOCS / "ja" / f"{rule.value}.md").read_text(encoding="utf-8")
    en_levels, en_blocks = _structure(english)
    ja_levels, ja_blocks = _structure(japanese)
    assert ja_levels == en_levels, "the headings differ in number, order or level"
    assert ja_blocks == en_blocks, "the code blocks differ: examples and YAML stay as they are"
    en_rows = re.findall(r"^\|.*\|$", _FENCE.sub("", english), re.M)
    ja_rows = re.findall(r"^\|.*\|$", _FENCE.sub("", japanese), re.M)
    assert len(ja_rows) == len(en_rows), "the tables differ in rows"


def test_the_twin_check_sees_a_translated_example_and_a_missing_section():
    english = "# r\n\n## Why\n\ntext\n\n```yaml\nrules: {r: warn}\n```\n\n## Exceptions\n"
    assert _structure(english.replace("text", "説明")) == _structure(english)  # the benign twin: prose translated
    assert _structure(english.replace("rules: {r: warn}", "ルール: {r: warn}")) != _structure(english)
    assert _structure(english.replace("## Exceptions\n", "")) != _structure(english)
    assert _structure(english.replace("```yaml\nrules: {r: warn}\n```\n", "## 例\n")) != _structure(english)
