"""The chart's pre-delete hook: `python -m webhook.uninstall NAME` deletes the ValidatingWebhookConfiguration
and the MutatingWebhookConfiguration named NAME, before Helm deletes the webhook's pods, so that no request
calls a webhook that is gone (charts/gpu-admission/templates/cleanup.yaml says why Helm 3 needs it).

In the cluster it reads its ServiceAccount's token; elsewhere the kubeconfig, as kubectl. One line per
configuration; exit 0 when both are gone (already gone counts), 1 when the API refused, 2 for usage."""
from __future__ import annotations

import sys

KINDS = (("validatingwebhookconfiguration", "delete_validating_webhook_configuration"),
         ("mutatingwebhookconfiguration", "delete_mutating_webhook_configuration"))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m webhook.uninstall NAME", file=sys.stderr)
        return 2
    (name,) = argv
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    api = client.AdmissionregistrationV1Api()
    failed = False
    for kind, delete in KINDS:
        try:
            getattr(api, delete)(name)
            print(f"{kind} {name}: deleted")
        except ApiException as exc:
            if exc.status == 404:
                print(f"{kind} {name}: already gone")
            else:
                print(f"{kind} {name}: not deleted ({exc.status} {exc.reason})", file=sys.stderr)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
