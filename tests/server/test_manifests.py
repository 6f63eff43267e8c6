"""Real manifests and the seed's, shaped as the apiserver sends them, through both endpoints in every
mode; and the kubernetes/api fixtures (every field set) through both endpoints: well-formed answers only."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.support import API_TESTDATA, REAL_MANIFESTS, SEED
from webhook.app import create_app
from webhook.objects.kinds import BY_KIND
from webhook.settings import Settings

from .apiserver import ApiServer, Rejected, judge
from .conftest import MODES, flask_transport, policy_text


def _documents():
    sources = sorted(REAL_MANIFESTS.glob("*.yaml")) + sorted(SEED.glob("*.yaml"))
    assert len(sources) >= 9, f"fixtures missing: {REAL_MANIFESTS}, {SEED}"
    for path in sources:
        for i, doc in enumerate(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d):
            if "apiVersion" not in doc:
                continue  # kubectl refuses it before any apiserver sees it (dra-example-driver's pod-not-scheduled)
            name = doc.get("metadata", {}).get("name", i)
            yield pytest.param(path, doc, id=f"{path.stem[:40]}#{i}-{doc['kind']}-{name}")


def _with_override(param):
    """A real Pod with one line added that the policy refuses, so every mode meets a denial too."""
    source, doc = param.values
    doc = json.loads(json.dumps(doc))
    doc["spec"]["containers"][0].setdefault("env", []).append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
    return pytest.param(source, doc, id=f"{param.id}+visible-devices")


REAL = list(_documents())
DOCUMENTS = REAL + [_with_override(p) for p in REAL if p.values[1]["kind"] == "Pod"
                    and p.values[0].parent == REAL_MANIFESTS]


@pytest.fixture(scope="module")
def apiservers(tmp_path_factory):
    """One app per mode, shared by the module's tests (each test's requests are independent)."""
    out = {}
    for mode, overrides in MODES.items():
        path = tmp_path_factory.mktemp("policy") / f"{mode}.yaml"
        path.write_text(policy_text(overrides))
        out[mode] = ApiServer(flask_transport(create_app(Settings(policy_path=path)).test_client()))
    return out


def _namespace(doc):
    info = BY_KIND.get(doc["kind"])
    if (info is not None and not info.namespaced) or doc["kind"] == "Namespace":
        return None
    return doc.get("metadata", {}).get("namespace") or "default"  # as `kubectl apply` places it


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("source", "doc"), DOCUMENTS)
def test_real_and_seed_manifests_in_every_mode(apiservers, source, doc, mode):
    namespace = _namespace(doc)
    result = apiservers[mode].admit(doc, namespace=namespace)  # the client checks every rule of section 8
    enforced = apiservers["enforce"].admit(doc, namespace=namespace)
    kind = doc["kind"]
    if source.parent == SEED:
        assert enforced.allowed, f"the seed's own {kind} must pass the default policy: {enforced.validate.message}"
    if kind != "Pod":
        assert result.mutate.patch is None, "only Pods are mutated; templates are validated"
    denials = enforced.validate.message.split("\n") if not enforced.validate.allowed else []
    for line in denials:
        assert line.count(" [") >= 1 and "/docs/rules/" in line, f"section 10 message shape: {line}"
    if mode == "enforce":
        return
    assert result.allowed, f"{mode} never denies"
    if mode == "warn":
        for line in denials:
            assert line in result.validate.warnings
        assert result.mutate.patch == enforced.mutate.patch  # mutations still apply
    else:  # audit / dry-run: report, change nothing
        assert result.mutate.patch is None
        for line in denials:
            assert f"dry-run, would deny: {line}" in result.validate.warnings or any(
                w.startswith("gpu-admission: ") and "more warning" in w for w in result.validate.warnings)
        if denials:
            assert result.validate.annotations["mode"] == "dry-run"
        if enforced.mutate.patch:
            assert any(w.startswith("dry-run: ") for w in result.mutate.warnings), "what would have been patched"


def test_some_real_manifests_are_denied_and_some_patched(apiservers):
    """The table above is not vacuous: under enforce, real manifests do get denials and patches."""
    verdicts = [apiservers["enforce"].admit(doc, namespace=_namespace(doc)) for _, doc in
                (p.values for p in DOCUMENTS)]
    assert any(not v.allowed for v in verdicts)
    assert any(v.mutate.patch for v in verdicts)
    assert any(v.allowed and v.validate.warnings for v in verdicts)


# ---- kubernetes/api serialization fixtures -----------------------------------------------------

API_OBJECTS = [pytest.param(p, id=p.stem) for p in sorted(API_TESTDATA.glob("*.json"))
               if not p.name.startswith("admission.")]


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
@pytest.mark.parametrize("fixture", API_OBJECTS)
def test_every_field_set_objects_get_well_formed_answers(apiserver, caplog, fixture, path, operation):
    obj = json.loads(fixture.read_text())
    old = None
    if operation == "UPDATE":
        old = json.loads(fixture.read_text())
        old.setdefault("spec", {})["__changed"] = True  # a spec change: evaluated, not waved through
    answer = apiserver.send(path, apiserver.review(obj, operation=operation, old=old))
    assert answer.response["uid"]
    internal = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "internal-error"]
    assert internal == [], "the engine raised on a valid-typed object"


def test_the_api_fixtures_are_all_there():
    assert len(API_OBJECTS) >= 12


def test_the_admission_review_fixture_itself(client):
    """kubernetes/api's AdmissionReview: every field set, with placeholder values (operationValue)."""
    raw = json.loads((API_TESTDATA / "admission.k8s.io.v1.AdmissionReview.json").read_text())
    response = client.post("/validate?timeout=10s", json=raw)
    assert response.status_code == 400
    assert "request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT, not 'operationValue'" in \
        response.get_json()["message"]
    raw["request"]["operation"] = "CREATE"  # the one placeholder no apiserver could send
    for path in ("/validate", "/mutate"):
        response = client.post(f"{path}?timeout=10s", json=raw)
        answer = judge(path, raw["request"], response.status_code, dict(response.headers), response.get_data())
        assert answer.allowed  # example.com/v1 CustomType is no kind of ours


def test_a_non_200_answer_is_what_the_apiserver_counts_as_a_failed_call():
    with pytest.raises(Rejected, match="HTTP 500"):
        judge("/validate", {"uid": "u"}, 500, {}, b"{}")
