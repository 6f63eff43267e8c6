"""The generate mode's rotation on upgrade: `helm upgrade` looks the Secret up and keeps the pair until the
serving certificate nears its expiry, then makes a new CA and certificate and trusts both CAs meanwhile.

An offline render's `lookup` finds nothing, so the decision (gpu-admission.tlsFor) is rendered here by real
Helm with the existing Secret given as it would come from the API: a probe chart that carries this chart as
its subchart and calls the helper with that Secret and a chosen `now`."""
from __future__ import annotations

import base64
import datetime as dt
import json
import shutil

import helm_python
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from .conftest import CHART, NAMESPACE, RELEASE, render_values

pytestmark = pytest.mark.slow
NOW = dt.datetime(2030, 6, 1, 12, 0, tzinfo=dt.UTC)
PROBE = """{{- $out := include "gpu-admission.tlsFor" (dict "existing" .Values.existing
  "now" (toDate "2006-01-02T15:04:05Z07:00" .Values.now) "days" (int .Values.days)
  "renewBeforeDays" (int .Values.renewBeforeDays) "service" "gpu-admission" "namespace" "gpu-policy") }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  tls: {{ $out | quote }}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe")
    (root / "templates").mkdir()
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.0.1\n")
    (root / "templates" / "probe.yaml").write_text(PROBE)
    shutil.copytree(CHART, root / "charts" / "gpu-admission")
    chart = helm_python.Chart.load(str(root))

    def decide(existing: dict | None, *, renew_before: int = 90, days: int = 3650) -> dict:
        values = {"existing": existing or {}, "now": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"), "days": days,
                  "renewBeforeDays": renew_before}
        out = chart.render(values, name=RELEASE, namespace=NAMESPACE)
        return json.loads(yaml.safe_load(out["probe/templates/probe.yaml"])["data"]["tls"])
    return decide


def _secret(tls: dict, not_after: dt.datetime | None) -> dict:
    """The Secret as `lookup` returns it after an earlier install."""
    meta: dict = {"name": f"{RELEASE}-tls", "namespace": NAMESPACE}
    if not_after is not None:
        meta["annotations"] = {"gpu-admission.io/not-after": not_after.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta,
            "data": {"tls.crt": tls["crt"], "tls.key": tls["key"], "ca.crt": tls["ca"]}}


def _certs(b64: str) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(base64.b64decode(b64))


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
        return True
    except (ValueError, TypeError, x509.InvalidSignature):
        return False


@pytest.fixture(scope="module")
def first(probe) -> dict:
    return probe(None)


def test_first_install_generates_one_ca_and_records_the_expiry(first):
    assert first["rotated"] is True
    (ca,) = _certs(first["ca"])
    (served,) = _certs(first["crt"])
    assert _signed_by(served, ca)
    assert first["notAfter"] == (NOW + dt.timedelta(days=3650)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("expires_in, renew_before, rotated", [
    pytest.param(dt.timedelta(days=400), 90, False, id="far-from-expiry-kept"),
    pytest.param(dt.timedelta(days=91), 90, False, id="just-outside-the-window-kept"),
    pytest.param(dt.timedelta(days=89), 90, True, id="inside-the-window-rotated"),
    pytest.param(-dt.timedelta(days=3), 90, True, id="expired-rotated"),
    pytest.param(dt.timedelta(days=1), 0, False, id="rotation-off-kept"),
    pytest.param(None, 90, True, id="expiry-unknown-rotated"),
])
def test_an_upgrade_keeps_or_rotates_by_the_expiry(probe, first, expires_in, renew_before, rotated):
    existing = _secret(first, None if expires_in is None else NOW + expires_in)
    got = probe(existing, renew_before=renew_before)
    assert got["rotated"] is rotated
    if not rotated:
        assert (got["crt"], got["key"], got["ca"]) == (first["crt"], first["key"], first["ca"])
        return
    (old_ca,) = _certs(first["ca"])
    new_ca, kept_ca = _certs(got["ca"])  # the new CA first, the previous one still trusted
    assert kept_ca == old_ca and new_ca != old_ca
    (served,) = _certs(got["crt"])
    assert _signed_by(served, new_ca) and got["crt"] != first["crt"]
    (previous,) = _certs(first["crt"])
    assert _signed_by(previous, kept_ca)  # a pod still serving the old pair is trusted by the new bundle
    assert isinstance(served.public_key(), ec.EllipticCurvePublicKey)


def test_a_second_rotation_drops_the_oldest_ca(probe, first):
    rotated = probe(_secret(first, NOW + dt.timedelta(days=10)))
    again = probe(_secret(rotated, NOW + dt.timedelta(days=10)))
    middle = _certs(rotated["ca"])[0]
    newest, kept = _certs(again["ca"])
    assert kept == middle and _certs(first["ca"])[0] not in (newest, kept)


def test_an_incomplete_secret_is_replaced(probe, first):
    broken = _secret(first, NOW + dt.timedelta(days=400))
    del broken["data"]["tls.key"]
    assert probe(broken)["rotated"] is True


def test_the_rendered_secret_carries_the_expiry_of_its_certificate():
    secret = yaml.safe_load(render_values({})["gpu-admission/templates/certificates.yaml"])
    (served,) = _certs(secret["data"]["tls.crt"])
    recorded = dt.datetime.strptime(secret["metadata"]["annotations"]["gpu-admission.io/not-after"],
                                    "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert abs((served.not_valid_after_utc - recorded).total_seconds()) < 120
