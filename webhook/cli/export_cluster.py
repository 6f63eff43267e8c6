"""What `gpu-admission export --check` reads from a live cluster: its version and the admission API it
serves (discovery, as `kubectl api-resources` reads it), the feature gate in its /metrics, and the
in-tree admission objects it holds. The reading of the answers is webhook.intree.served (pure)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from webhook.intree.export import RULE_LABEL
from webhook.intree.served import GROUP, VERSIONS, feature_enabled, group_versions, served
from webhook.lookups.apiserver import ApiError, send

TIMEOUT = 30.0
KINDS = {"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
         "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
         "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
         "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings"}


@dataclass(frozen=True)
class Discovery:
    git_version: str               # "v1.34.4"
    kubernetes: tuple[int, int]    # (1, 34)
    mutating: tuple[str, ...]      # the group versions serving MutatingAdmissionPolicy, newest first


def _get(client: ApiClient, path: str) -> Any:
    return send(client, "GET", path, timeout=TIMEOUT)


def _minor(version: dict) -> tuple[int, int]:
    """/version's major and minor ("1", "34", or "34+" on some distributions)."""
    major, minor = (str(version.get(k) or "").rstrip("+") for k in ("major", "minor"))
    if not (major.isdigit() and minor.isdigit()):
        raise ApiError(200, f"the cluster's /version has no numeric major and minor: {version.get('gitVersion')!r}")
    return int(major), int(minor)


def read_discovery(client: ApiClient) -> Discovery:
    version = _get(client, "/version")
    try:
        group = _get(client, f"/apis/{GROUP}")
    except ApiError as exc:
        if exc.status != 404:
            raise
        group = None
    lists = {gv: _get(client, f"/apis/{gv}") for gv in group_versions(group)
             if gv.removeprefix(GROUP + "/") in VERSIONS}
    return Discovery(str(version.get("gitVersion") or ""), _minor(version), served(lists))


def read_feature_gate(client: ApiClient) -> bool | None:
    """The MutatingAdmissionPolicy gate as the apiserver reports it in /metrics; None where not reported.
    Raises ApiError where /metrics cannot be read (it needs `get` on the non-resource URL)."""
    response = send(client, "GET", "/metrics", timeout=TIMEOUT, stream=True)
    try:
        text = response.data.decode("utf-8", "replace")
    finally:
        response.release_conn()
    return feature_enabled(text)


def list_objects(client: ApiClient, *, validating: bool, mutating: str | None) -> list[dict]:
    """The labelled in-tree objects: the validating ones (v1), and the mutating ones in that group version."""
    kinds = ([("ValidatingAdmissionPolicy", f"{GROUP}/v1"), ("ValidatingAdmissionPolicyBinding", f"{GROUP}/v1")]
             if validating else [])
    if mutating is not None:
        kinds += [("MutatingAdmissionPolicy", mutating), ("MutatingAdmissionPolicyBinding", mutating)]
    live = []
    for kind, group_version in kinds:
        # every exported object has the label, whether applied by hand or installed by Helm
        answer = send(client, "GET", f"/apis/{group_version}/{KINDS[kind]}", query={"labelSelector": RULE_LABEL},
                      timeout=TIMEOUT)
        live += [{**item, "kind": kind} for item in answer.get("items") or []]
    return live
