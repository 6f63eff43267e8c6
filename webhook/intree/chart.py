"""What the chart's `inTree` installs and compares, from a policy document: the export's objects and the
policy they were exported from. `make intree` writes the shipped default's into the chart's files/intree
(tools/intree_policy.py); `gpu-admission export --chart-values` prints a release's own as a values file
(`inTree.exported`). templates/intree.yaml refuses `inTree` for a release whose policy, less the same keys,
differs from the one carried, so the webhook never skips rules that the apiserver decides by another
policy."""
from __future__ import annotations

from typing import Any

from webhook.config.model import Policy
from webhook.intree.export import export
from webhook.intree.mutations import export_mutations

# What the export does not read, or reads from the release rather than from the policy: the service's own
# namespace (the chart puts the release's in the bindings), the lookups and the webhook's inTree setting.
# templates/intree.yaml drops the same keys before comparing, and `language` where it is the default (en).
NOT_EXPORTED = ("serviceNamespace", "lookups", "inTree")


def exported_from(document: dict[str, Any]) -> dict[str, Any]:
    """The part of a policy document the export reads, as the chart compares it."""
    return {k: v for k, v in document.items() if k not in NOT_EXPORTED and not (k == "language" and v == "en")}


def chart_values(document: dict[str, Any], policy: Policy, kubernetes: tuple[int, int]) -> dict[str, Any]:
    """The values file the chart installs `policy`'s export from (`inTree.exported`); `document` is the
    policy document `policy` was built from. Both halves are written: the chart picks by inTree.validation
    and inTree.mutation, and refuses one whose half is absent."""
    return {"inTree": {"exported": {
        "policy": exported_from(document),
        "serviceNamespace": policy.service_namespace,
        "kubernetesVersion": f"{kubernetes[0]}.{kubernetes[1]}",
        "validation": export(policy),
        "mutation": export_mutations(policy, kubernetes),
    }}}
