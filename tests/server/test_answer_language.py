"""The texts the webhook itself adds to an answer (beside the rules' messages) reach kubectl in the policy's
language: the internal-error answers of each failure mode, the patch-too-large denial, the "N more findings"
count lines, the dry-run wording, the audit annotations' "not shown" note and the empty denial's text.
The lines of both languages are golden files (tests/golden/server/answers.txt and its ja/ twin); a namespace
that no override sets to Japanese is answered in English (the benign twin)."""
from __future__ import annotations

import pytest

from tests.support import GOLDEN, compare_golden
from webhook.admission import codec, handlers, render
from webhook.admission.render import MAX_CARRIED
from webhook.admission.response import patch
from webhook.locale import LANGUAGES
from webhook.policy.phase import Phase

from .apiserver import ApiServer
from .conftest import flask_transport

JAPANESE = "namespaceOverrides: [{namespaces: [ml], language: ja}]"


def _pod(containers: int, *, root: bool = True, namespace: str = "ml") -> dict:
    context = {"securityContext": {"runAsUser": 0}} if root else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wide", "namespace": namespace}, "spec": {
        "nodeSelector": {"workload.example.com/gpu-allocation": "device-plugin"}, "runtimeClassName": "nvidia",
        "containers": [{"name": f"c{i}", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04", **context,
                        "resources": {"limits": {"nvidia.com/gpu": 1}}} for i in range(containers)]}}


def _broken(*args, **kwargs):
    raise KeyError("boom")


def _language_policy(language: str, extra: str = "") -> str:
    return ("" if language == "en" else JAPANESE) + ("\n" + extra if extra else "")


def _lines(language: str, make_app, monkeypatch) -> list[str]:
    """Every text of this module's cases, in `language`, each case's lines under a `# case` heading."""
    out: list[str] = []

    def api(overrides: str = "", **settings) -> ApiServer:
        return ApiServer(flask_transport(make_app(_language_policy(language, overrides), **settings).test_client()))

    enforce = api("rules: {run-as-root: enforce}")
    answer = enforce.send("/validate", enforce.review(_pod(MAX_CARRIED + 3)))
    out += ["# more findings than an answer carries (enforce)", *answer.message.split("\n")[MAX_CARRIED:]]

    audit = api("mode: audit\nrules: {run-as-root: enforce}")
    answer = audit.send("/validate", audit.review(_pod(1)))
    out += ["# dry run, would deny", *answer.warnings]
    answer = audit.send("/mutate", audit.review(_pod(1, root=False)))
    out += ["# dry run, a mutation", *answer.warnings]

    mutating = api()
    answer = mutating.send("/mutate", mutating.review(_pod(2000, root=False)))
    out += ["# a patch too large to send", answer.message]

    with monkeypatch.context() as m:
        m.setattr(handlers, "validate", _broken)
        for mode in ("allow", "deny"):
            broken = api(failure_mode=mode)
            answer = broken.send("/validate", broken.review(_pod(1)))
            out += [f"# an evaluation that raises, failure mode {mode}", *answer.warnings,
                    *([answer.message] if not answer.allowed else [])]

    many = {f"rule-{i}": "x" * 4000 for i in range(8)}
    out += ["# audit annotations past their total", render.audit_annotations(many, language)["not-shown"]]
    out += ["# a denial without text", render.denial_message("", language)]
    return out


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_answer_s_own_texts_are_in_the_policy_s_language(language, make_app, monkeypatch, request):
    lines = _lines(language, make_app, monkeypatch)
    path = GOLDEN / "server" / ("answers.txt" if language == "en" else f"{language}/answers.txt")
    compare_golden(lines, path, update=request.config.getoption("--update-golden"), suite=__file__)
    texts = [line for line in lines if not line.startswith("# ")]
    assert len(texts) == 9
    if language != "en":  # every text is Japanese, and none of the English remains
        english = _lines("en", make_app, monkeypatch)
        assert all(not text.isascii() for text in texts), [t for t in texts if t.isascii()]
        assert not set(texts) & set(english)


def test_a_namespace_without_the_override_is_answered_in_english(make_app, monkeypatch):
    """The benign twin: the override names namespace ml only; a request in another namespace stays English."""
    monkeypatch.setattr(handlers, "validate", _broken)
    api = ApiServer(flask_transport(make_app(JAPANESE, failure_mode="deny").test_client()))
    answer = api.send("/validate", api.review(_pod(1, namespace="other")))
    assert not answer.allowed and answer.message.startswith("gpu-admission could not evaluate this request")
    answer = api.send("/validate", api.review(_pod(1)))
    assert not answer.allowed and answer.message.startswith("gpu-admission はこのリクエストを評価できませんでした")


@pytest.mark.parametrize("count", [1, 2])
def test_the_not_shown_note_counts_in_both_languages(count):
    many = {f"rule-{i}": "x" * 5000 for i in range(4 + count)}  # four fill the 16 KiB
    en = render.audit_annotations(many)["not-shown"]
    ja = render.audit_annotations(many, "ja")["not-shown"]
    assert en.startswith(f"{count} more annotation{'s' if count > 1 else ''};")
    assert f"あと {count} 件" in ja and "`gpu-admission check`" in ja
    assert sum(len(v.encode()) + len(k) for k, v in render.audit_annotations(many, "ja").items()) \
        <= render.ANNOTATIONS_MAX_BYTES + 200


def test_the_patch_too_large_denial_is_one_line_within_the_denial_cap():
    huge = patch(({"op": "add", "path": "/x", "value": "y" * 200_000},))
    text = codec.response("u", huge, Phase.MUTATE)["response"]["status"]["message"]
    assert "\n" not in text and len(text.encode()) <= render.DENIAL_MAX_BYTES
