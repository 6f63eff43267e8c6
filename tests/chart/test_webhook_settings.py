"""This project's own settings of the webhook configurations, beyond what the apiserver requires: v1 reviews
only, sideEffects None, matchPolicy Equivalent, timeouts of at most 5 s, reinvocation on the mutating webhook,
and a caBundle that is a CA certificate (or injected by cert-manager).

That the apiserver accepts every rendered configuration is shown by the real one: tests/e2e/test_chart.py
creates every value set's objects as a server-side dry-run."""
from __future__ import annotations

import base64

import pytest
from cryptography import x509

from .conftest import set_params

pytestmark = pytest.mark.slow


def _configurations(rendered) -> list[dict]:
    return rendered.all("ValidatingWebhookConfiguration") + rendered.all("MutatingWebhookConfiguration")


@pytest.mark.parametrize("value_set", set_params())
def test_webhook_settings_are_this_project_s(rendered, value_set):
    webhooks = rendered.values.get("webhooks", {})
    for kind, hook in rendered.webhooks():
        which = "mutating" if kind.startswith("Mutating") else "validating"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "None"
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["failurePolicy"] == webhooks.get(which, {}).get("failurePolicy", "Fail")
        assert 1 <= hook["timeoutSeconds"] <= 5
        assert hook["timeoutSeconds"] == webhooks.get(which, {}).get("timeoutSeconds", 3 if which == "mutating" else 5)
        # Exceptions are config-owned: no label on a workload skips the webhooks unless the user asks for it.
        assert hook.get("objectSelector") == webhooks.get("objectSelector")
        if which == "mutating":
            assert hook["reinvocationPolicy"] == "IfNeeded"
        else:
            assert "reinvocationPolicy" not in hook


@pytest.mark.parametrize("value_set", set_params())
def test_ca_bundle_is_a_pem_certificate_or_injected(rendered, value_set):
    mode = rendered.values.get("certificates", {}).get("mode", "generate")
    for config in _configurations(rendered):
        annotations = config["metadata"].get("annotations", {})
        for hook in config["webhooks"]:
            bundle = hook["clientConfig"].get("caBundle")
            if mode == "certManager":
                assert bundle is None and "cert-manager.io/inject-ca-from" in annotations
                continue
            assert "cert-manager.io/inject-ca-from" not in annotations
            certificate = x509.load_pem_x509_certificate(base64.b64decode(bundle, validate=True))
            assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            if mode == "existingSecret":
                assert bundle == rendered.values["certificates"]["caBundle"]
