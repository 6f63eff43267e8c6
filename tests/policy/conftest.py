"""Fixtures of the policy tests: evaluation through the CLI's path and golden message files.

Golden files live under tests/golden/rules/, one per case id that gives messages, one message per line. A missing or
different file fails the test; `pytest --update-golden` rewrites them from the current output (review the diff)."""
from __future__ import annotations

import copy

import pytest

from tests.support import GOLDEN_RULES, compare_golden
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver


def evaluate_docs(obj: dict, *, policy, docs=(), namespace: str | None = None, user: dict | None = None,
                  default_namespace: str = "default"):
    """Evaluate `obj` as `gpu-admission check` does: every document given (the object included) resolves
    claims, templates, DeviceClasses, Namespaces and envFrom sources. The input must come out untouched."""
    before = copy.deepcopy(obj)
    resolver = BundleResolver([obj, *docs], default_namespace=default_namespace)
    result = evaluate_object(obj, policy=policy, resolver=resolver, namespace=namespace or default_namespace,
                             user_info=user)
    assert obj == before, "evaluation changed its input object"
    return result


@pytest.fixture
def evaluate():
    return evaluate_docs


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("update_golden", default=False))


@pytest.fixture
def golden(request, update_golden):
    """`golden(lines)` compares the lines with tests/golden/rules/<case id>.txt (or `name`)."""

    def check(lines, name: str | None = None) -> None:
        lines = list(lines)
        path = GOLDEN_RULES / f"{name or request.node.callspec.id}.txt"
        if not lines:  # a case without messages has no golden file
            if update_golden and path.exists():
                path.unlink()
            assert not path.exists(), f"{path.name}: the case gives no message; remove the file"
            return
        compare_golden(lines, path, update=update_golden, suite="tests/policy")

    return check
