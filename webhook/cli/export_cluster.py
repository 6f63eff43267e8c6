"""What `gpu-admission export --check` reads from a live cluster: its version and the admission API it
serves (discovery, as `kubectl api-resources` reads it), the feature gate in its /metrics, and the
in-tree admission objects it holds. The reading of the answers is webhook.intree.served (pure)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import (
    AdmissionregistrationApi,
    AdmissionregistrationV1Api,
    AdmissionregistrationV1beta1Api,
    ApiClient,
    VersionApi,
)
from kubernetes.client.exceptions import ApiException

from webhook.intree.export import RULE_LABEL
from webhook.intree.served import GROUP, VERSIONS, feature_enabled, group_versions, served


@dataclass(frozen=True)
class Discovery:
    git_version: str               # "v1.34.4"
    kubernetes: tuple[int, int]    # (1, 34)
    mutating: tuple[str, ...]      # the group versions serving MutatingAdmissionPolicy, newest first


def _get(client: ApiClient, path: str) -> Any:
    return client.call_api(path, "GET", response_type="object", auth_settings=["BearerToken"],
                           _return_http_data_only=True)


def _minor(version: Any) -> tuple[int, int]:
    """/version's major and minor ("1", "34" or "34+" on some distributions)."""
    major, minor = (str(getattr(version, k) or "").rstrip("+") for k in ("major", "minor"))
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(f"the cluster's /version has no numeric major and minor: {version.git_version!r}")
    return int(major), int(minor)


def read_discovery(client: ApiClient) -> Discovery:
    version = VersionApi(client).get_code()
    try:
        group = client.sanitize_for_serialization(AdmissionregistrationApi(client).get_api_group())
    except ApiException as exc:
        if exc.status != 404:
            raise
        group = None
    lists = {gv: _get(client, f"/apis/{gv}") for gv in group_versions(group)
             if gv.removeprefix(GROUP + "/") in VERSIONS}
    return Discovery(version.git_version, _minor(version), served(lists))


def read_feature_gate(client: ApiClient) -> bool | None:
    """The MutatingAdmissionPolicy gate as the apiserver reports it in /metrics; None where not reported."""
    response = client.call_api("/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False,
                               _return_http_data_only=True)
    return feature_enabled(response.data.decode("utf-8", "replace"))


def list_objects(client: ApiClient, *, validating: bool, mutating: str | None) -> list[dict]:
    """The labelled in-tree objects: the validating ones, and the mutating ones in that group version."""
    api = AdmissionregistrationV1Api(client)
    listers = [] if not validating else [
        ("ValidatingAdmissionPolicy", api.list_validating_admission_policy),
        ("ValidatingAdmissionPolicyBinding", api.list_validating_admission_policy_binding)]
    if mutating is not None:
        m = api if mutating.endswith("/v1") else AdmissionregistrationV1beta1Api(client)
        listers += [("MutatingAdmissionPolicy", m.list_mutating_admission_policy),
                    ("MutatingAdmissionPolicyBinding", m.list_mutating_admission_policy_binding)]
    live = []
    for kind, lister in listers:
        # every exported object has the label, whether applied by hand or installed by Helm
        items = client.sanitize_for_serialization(lister(label_selector=RULE_LABEL)).get("items") or []
        live += [{**item, "kind": kind} for item in items]
    return live
