"""Every rule's page says, in its "In-tree policy" section, whether the rule is exported: the decision is
made rule by rule (issue 18)."""
from __future__ import annotations

import pytest

from tests.support import REPO
from webhook.policy.coverage import EXPORTED, MUTATED
from webhook.rules import Rule


@pytest.mark.parametrize("rule", list(Rule), ids=str)
def test_each_rule_page_says_whether_it_is_exported(rule):
    text = (REPO / "docs" / "rules" / f"{rule.value}.md").read_text(encoding="utf-8")
    assert "\n## In-tree policy\n" in text
    section = text.split("\n## In-tree policy\n", 1)[1].split("\n## ", 1)[0].strip()
    assert section.startswith("Exported" if rule in EXPORTED or rule in MUTATED else "Not exported"), section[:80]
