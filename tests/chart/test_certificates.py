"""The serving certificate, however it is made, is valid for the name the apiserver verifies
(<service>.<namespace>.svc), is the one the pods mount, and is signed by the CA in the webhooks' caBundle."""
from __future__ import annotations

import base64

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from .conftest import NAMESPACE, RELEASE, set_params

pytestmark = pytest.mark.slow
HOST = f"{RELEASE}.{NAMESPACE}.svc"


def _tls_volume(rendered) -> dict:
    spec = rendered.one("Deployment")["spec"]["template"]["spec"]
    return next(v for v in spec["volumes"] if "secret" in v)


def _verify_signed_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    key = ca.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    else:
        assert isinstance(key, ec.EllipticCurvePublicKey)
        key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))


@pytest.mark.parametrize("value_set", set_params("default", "audit-mode", "custom-policy"))
def test_generated_certificate_is_valid_for_the_service_and_signed_by_the_ca_bundle(rendered, value_set):
    secret = rendered.one("Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["name"] == _tls_volume(rendered)["secret"]["secretName"]
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert set(data) == {"tls.crt", "tls.key", "ca.crt"}
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert HOST in names and f"{HOST}.cluster.local" in names
    assert cert.issuer == ca.subject
    _verify_signed_by(cert, ca)
    assert b"PRIVATE KEY" in data["tls.key"]
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime.days >= 3649  # certificates.generate.validityDays: rotation by deleting the Secret
    # One CA for the Secret and every webhook of both configurations (generated once per render).
    for _, hook in rendered.webhooks():
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == data["ca.crt"]


def test_each_install_gets_its_own_ca(render):
    first, second = render({}), render({})
    assert first.one("Secret")["data"]["ca.crt"] != second.one("Secret")["data"]["ca.crt"]


@pytest.mark.parametrize("value_set", set_params("cert-manager", "cert-manager-issuer"))
def test_cert_manager_issues_the_mounted_secret_and_injects_the_ca(rendered, value_set):
    serving = rendered.one("Certificate", f"{RELEASE}-serving")
    assert serving["spec"]["secretName"] == _tls_volume(rendered)["secret"]["secretName"]
    assert HOST in serving["spec"]["dnsNames"]
    assert serving["spec"]["commonName"] == HOST
    assert "server auth" in serving["spec"]["usages"]
    annotation = f"{NAMESPACE}/{serving['metadata']['name']}"
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        config = rendered.one(kind)
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == annotation
        assert all("caBundle" not in hook["clientConfig"] for hook in config["webhooks"])
    assert rendered.all("Secret") == []
    issuer = serving["spec"]["issuerRef"]
    if value_set == "cert-manager":
        # A private CA: serving-certificate renewals keep the CA that cainjector put in caBundle.
        assert issuer == {"name": f"{RELEASE}-ca", "kind": "Issuer", "group": "cert-manager.io"}
        ca = rendered.one("Certificate", f"{RELEASE}-ca")
        assert ca["spec"]["isCA"] is True
        assert ca["spec"]["issuerRef"]["name"] == f"{RELEASE}-selfsigned"
        assert rendered.one("Issuer", f"{RELEASE}-ca")["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
        assert rendered.one("Issuer", f"{RELEASE}-selfsigned")["spec"] == {"selfSigned": {}}
    else:
        assert issuer == {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
        assert rendered.all("Issuer") == []


@pytest.mark.parametrize("value_set", set_params("existing-secret"))
def test_existing_secret_is_mounted_and_its_ca_used(rendered, value_set):
    assert rendered.all("Secret") == [] and rendered.all("Certificate") == []
    assert _tls_volume(rendered)["secret"]["secretName"] == "webhook-tls"
    for _, hook in rendered.webhooks():
        assert hook["clientConfig"]["caBundle"] == rendered.values["certificates"]["caBundle"]
