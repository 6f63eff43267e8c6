"""List every kind the engine handles from a live cluster, in chunks, across all namespaces or chosen
ones. A kind that cannot be listed (403, not served, timeout) is recorded and the others go on."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubernetes.client import ApiClient

from webhook.lookups.apiserver import ApiError, list_pages
from webhook.lookups.resources import ApiResource
from webhook.objects.kinds import HANDLED

AUDITED = tuple(ApiResource.of(info) for info in HANDLED)


@dataclass(frozen=True, slots=True)
class ListFailure:
    resource: ApiResource
    namespace: str | None  # None: the list across all namespaces (or a cluster-scoped kind)
    reason: str
    status: int | None

    @property
    def where(self) -> str:
        scope = f'in namespace "{self.namespace}"' if self.namespace else (
            "across all namespaces" if self.resource.namespaced else "(cluster-scoped)")
        return f"{self.resource.qualified} {scope}"


@dataclass(frozen=True, slots=True)
class Listing:
    objects: tuple[tuple[ApiResource, dict], ...]
    failures: tuple[ListFailure, ...]
    attempts: int  # list operations started: one per kind, or per kind and chosen namespace
    resources: tuple[ApiResource, ...] = ()  # the kinds asked for (listed, or failed)

    @property
    def nothing_listed(self) -> bool:
        return len(self.failures) == self.attempts


def list_cluster(api_client: ApiClient, namespaces: tuple[str, ...] = (), *, chunk_size: int = 500,
                 timeout: float = 30.0, resources: tuple[ApiResource, ...] = AUDITED,
                 on_page: Callable[[ApiResource, int], None] | None = None) -> Listing:
    """Every object of `resources`: namespaced kinds in each of `namespaces` (all when empty),
    cluster-scoped kinds once (DeviceClasses are needed to resolve claims whatever the namespaces)."""
    objects: list[tuple[ApiResource, dict]] = []
    failures: list[ListFailure] = []
    attempts = 0
    for resource in resources:
        scopes: tuple[str | None, ...] = namespaces if resource.namespaced and namespaces else (None,)
        for namespace in scopes:
            attempts += 1
            try:
                items = _list_all(api_client, resource, namespace, chunk_size, timeout, on_page)
            except ApiError as err:
                failures.append(ListFailure(resource, namespace, err.describe(), err.status))
                continue
            objects.extend((resource, item) for item in items)
    return Listing(tuple(objects), tuple(failures), attempts, resources)


def _list_all(api_client, resource, namespace, chunk_size, timeout, on_page) -> list[dict]:
    try:
        return _pages(api_client, resource, namespace, chunk_size, timeout, on_page)
    except ApiError as err:
        # A continue token expires (410) when a chunked list outlives etcd compaction: start over
        # once, as client-go's pager does, rather than stitch two snapshots together.
        if not err.gone:
            raise
        return _pages(api_client, resource, namespace, chunk_size, timeout, on_page)


def _pages(api_client, resource, namespace, chunk_size, timeout, on_page) -> list[dict]:
    items: list[dict] = []
    for page in list_pages(api_client, resource, namespace, limit=chunk_size, timeout=timeout):
        batch = [i for i in page.get("items") or () if isinstance(i, dict)]
        items.extend(batch)
        if on_page is not None:
            on_page(resource, len(batch))
    return items
