"""Mutation announcements in both languages: every mutation rule set to `warn` announces what it set, one line
per field, in English and in Japanese (tests/golden/locale/[ja/]mutations-announced.txt)."""
from __future__ import annotations

import json

import pytest

from tests.support import REPO, compare_golden
from webhook.cli.main import main
from webhook.rules import MUTATIONS

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ai}
spec:
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      resources: {limits: {nvidia.com/gpu: 1}}
    - name: metrics
      image: registry.example.invalid/cuda-metrics:12
"""


@pytest.mark.parametrize("language", ["en", "ja"])
def test_every_mutation_announces_what_it_set(tmp_path, capsys, request, language):
    path = tmp_path / "pod.yaml"
    path.write_text(POD)
    warn = [arg for rule in sorted(MUTATIONS) for arg in ("--set", f"rules.{rule.value}=warn")]
    assert main(["check", "-o", "json", "--lang", language, *warn, str(path)]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    announced = [v for v in result["violations"] if v["rule"] in {r.value for r in MUTATIONS}]
    assert {v["rule"] for v in announced} == {r.value for r in MUTATIONS}
    assert all(v["action"] == "warn" for v in announced)
    name = "mutations-announced" if language == "en" else "ja/mutations-announced"
    compare_golden([v["message"] for v in announced], REPO / "tests" / "golden" / "locale" / f"{name}.txt",
                   update=bool(request.config.getoption("update_golden")), suite="tests/locale")
