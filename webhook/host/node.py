"""The Kubernetes Node of the host, as `kubectl get node NAME -o json` prints it: what the node offers (its
capacity) and the labels that place it in a cohort."""
from __future__ import annotations

import json
from dataclasses import dataclass

from webhook.host.nvsmi import ParseError


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: dict[str, str]
    capacity: dict[str, str]

    def count(self, resource: str) -> int | None:
        """The node's capacity of an extended resource ("4"), None when it offers none or not as a count."""
        value = self.capacity.get(resource)
        return int(value) if value is not None and value.isdigit() else None


def parse_node(text: str, path: str) -> Node:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{path} is not JSON (`kubectl get node NAME -o json`): {exc}") from None
    if isinstance(data, dict) and data.get("kind") == "List" and len(data.get("items") or []) == 1:
        data = data["items"][0]
    if not isinstance(data, dict) or data.get("kind") != "Node":
        raise ParseError(f"{path} is not one Node (`kubectl get node NAME -o json`)")
    meta = data.get("metadata") or {}
    status = data.get("status") or {}
    return Node(name=str(meta.get("name", "")), labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
                capacity={str(k): str(v) for k, v in (status.get("capacity") or {}).items()})
