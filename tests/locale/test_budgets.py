"""The apiserver's budgets in Japanese. A Japanese character is one rune but three UTF-8 bytes: the
apiserver counts warnings in runes (k8s.io/apiserver pkg/endpoints/filters/warning.go: 4096 runes of
warning text, then every warning cut to 256 runes), while the webhook's own caps (a warning, a denial,
audit annotations, log fields) are bytes. Every cut lands between characters."""
from __future__ import annotations

import pytest

from webhook.admission import codec, render
from webhook.admission.handlers import validate
from webhook.config import default_policy
from webhook.lookups.base import NoLookups
from webhook.policy.phase import Phase

JA_LINE = ('pod "ai/train-{i}": container "trainer" が CUDA_VISIBLE_DEVICES を設定しています '
           "(spec.containers[0].env[0]、リテラル値で)。対処: 削除してください。理由: 上書きしても GPU は付与されません "
           "[visible-devices-override] https://example.invalid/docs/rules/ja/visible-devices-override.md")


def _apiserver_truncates(warnings: list[str], total: int = 4096) -> bool:
    """Stands in for warning.go's recorder: it starts cutting once the runes of the texts pass `total`."""
    return sum(len(w) for w in warnings) > total


@pytest.mark.parametrize("count", [1, 5, 12, 40, 200])
def test_japanese_warnings_stay_within_the_apiserver_s_rune_budget(count):
    lines = [JA_LINE.format(i=i) for i in range(count)]
    kept = render.sanitize_warnings(lines, language="ja")
    assert not _apiserver_truncates(kept)
    shown = [w for w in kept if w in lines]
    assert shown == lines[: len(shown)]  # whole, in order: no warning is cut
    if len(shown) < count:
        assert kept[-1].startswith(f"gpu-admission: 表示しきれない警告があと {count - len(shown)} 件あります")
    else:
        assert kept == lines


def test_the_budget_counts_runes_not_bytes():
    """Sixteen Japanese warnings: over 4096 bytes, under 4096 runes; the apiserver keeps them all, so do we."""
    lines = [JA_LINE.format(i=i) for i in range(16)]
    assert sum(len(w.encode()) for w in lines) > 4096 >= sum(len(w) for w in lines)
    assert render.sanitize_warnings(lines, language="ja") == lines


def test_the_english_twin_keeps_the_same_number():
    """The benign twin: as many English warnings of the same length in runes are kept alike."""
    ja = [JA_LINE.format(i=i) for i in range(30)]
    en = [f"{i:04d}" + "x" * (len(w) - 4) for i, w in enumerate(ja)]
    assert len(render.sanitize_warnings(ja, language="ja")) == len(render.sanitize_warnings(en))


@pytest.mark.parametrize("limit", range(4, 40))
def test_a_cut_never_splits_a_character(limit):
    text = "GPU を要求しています" * 10
    cut = render._cut(text, limit)
    assert len(cut.encode()) <= limit
    assert cut.endswith("...")
    assert text.startswith(cut[:-3])  # whole characters of the original, then the mark


def test_a_long_japanese_warning_is_cut_to_its_byte_cap_between_characters():
    line = "警" * 2000  # 6000 bytes
    (kept,) = render.sanitize_warnings([line])
    assert len(kept.encode()) <= render.WARNING_MAX_BYTES and kept == "警" * 340 + "..."


def test_a_japanese_denial_is_bounded_in_bytes_and_says_how_many_more_in_japanese():
    lines = [JA_LINE.format(i=i) for i in range(200)]
    message = render.denial_message("\n".join(lines), "ja")
    out = message.split("\n")
    assert len(message.encode()) <= render.DENIAL_MAX_BYTES + 512
    assert out[:-1] == lines[: len(out) - 1]
    assert out[-1] == (f"... ほかに {200 - (len(out) - 1)} 件あります。すべて見るには manifest に "
                       "`gpu-admission check` を実行してください")


def test_japanese_audit_annotations_stay_within_their_byte_caps():
    values = {f"rule-{i}": " | ".join(JA_LINE.format(i=j) for j in range(20)) for i in range(10)}
    out = render.audit_annotations(values)
    assert all(len(v.encode()) <= render.ANNOTATION_VALUE_MAX_BYTES for v in out.values())
    assert sum(len(v.encode()) + len(k) for k, v in out.items()) <= render.ANNOTATIONS_MAX_BYTES + 128
    for v in out.values():
        v.encode("utf-8")  # whole characters only: a cut inside one would not encode back
        assert "\ufffd" not in v


def test_a_japanese_answer_through_the_handler_and_review():
    """A pod with 60 findings in a Japanese namespace: the review the apiserver gets is within budget."""
    policy = default_policy().in_language("ja")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "many", "namespace": "ml"},
           "spec": {"containers": [{"name": f"c{i}", "image": "x", "env": [{"name": "CUDA_VISIBLE_DEVICES",
                                                                             "value": "0"}],
                                    "securityContext": {"runAsUser": 0}} for i in range(60)],
                    "nodeSelector": {"workload.example.com/gpu-allocation": "device-plugin"}}}
    request = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
               "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
               "namespace": "ml", "object": pod, "userInfo": {}}
    outcome = validate(codec.read_request(request), policy=policy, resolver=NoLookups())
    answer = codec.response("u", outcome, Phase.VALIDATE)["response"]
    assert answer["allowed"] is False
    message = answer["status"]["message"]
    assert len(message.encode()) <= render.DENIAL_MAX_BYTES + 512
    assert message.splitlines()[0].endswith("ja/visible-devices-override.md")
    warnings = answer.get("warnings", [])
    assert warnings and not _apiserver_truncates(warnings)
    assert all("[run-as-root]" in w or "gpu-admission:" in w or "run-as-root の指摘" in w for w in warnings)
