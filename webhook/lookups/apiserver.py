"""Raw JSON requests to the kube-apiserver through the official client's connection pool, TLS settings
and credentials (token refresh included), without its typed models: those drop or reject fields the
engine reads, and cost a deserialisation per object.

Requests go out with urllib3 retries off: a lookup must make at most one bounded request, and the
informers retry with their own backoff."""
from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.watch.watch import iter_resp_lines

from webhook.lookups.resources import ApiResource

GONE = 410


class ApiError(Exception):
    """A failed API call. `status` is the HTTP code, None when no answer came (timeout, connection)."""

    def __init__(self, status: int | None, reason: str, message: str = "", *, timed_out: bool = False,
                 served: bool = True):
        self.status = status
        self.reason = reason  # the Status `reason` (NotFound, Forbidden, Expired) or the transport error
        self.message = message
        self.timed_out = timed_out
        self.served = served  # False: the apiserver does not serve this resource at all (404 without a Status)
        super().__init__(self.describe())

    @property
    def gone(self) -> bool:
        return self.status == GONE

    @property
    def not_found(self) -> bool:
        return self.status == 404 and self.served

    def describe(self) -> str:
        """One short clause for `Lookup.miss` and audit reports."""
        if self.status is None:
            return self.reason
        if self.status == 404 and self.served:
            return "not found"
        if self.status == 404:
            return "the API server does not serve this resource"
        if self.status == 403:
            return f"forbidden: {self.message}" if self.message else "forbidden"
        detail = self.message or self.reason
        return f"API error {self.status}: {detail}" if detail else f"API error {self.status}"


def _timeout(timeout: float | tuple[float, float]) -> urllib3.Timeout:
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


def _seconds(timeout: float | tuple[float, float]) -> str:
    value = timeout[1] if isinstance(timeout, tuple) else timeout
    return f"{value:g}s"


def transport_error(exc: Exception, timeout: float | tuple[float, float]) -> ApiError:
    """Map a urllib3 failure to an ApiError; NewConnectionError derives from ConnectTimeoutError in
    urllib3 2, so it is tested first."""
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        cause = exc.__context__ or exc
        return ApiError(None, f"API unreachable: {getattr(cause, 'strerror', None) or cause}")
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return ApiError(None, f"API timeout after {_seconds(timeout)}", timed_out=True)
    if isinstance(exc, urllib3.exceptions.SSLError):
        return ApiError(None, f"API TLS error: {exc.__context__ or exc}")
    return ApiError(None, f"API unreachable: {exc}")


def _status_error(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return ApiError(status, str(body.get("reason") or ""), str(body.get("message") or ""))
    # A path the apiserver does not route (group/version not served) answers a plain-text 404.
    return ApiError(status, raw.decode("utf-8", "replace").strip()[:200], served=status != 404)


def send(api_client: ApiClient, method: str, path: str, *, query: dict | None = None, body: Any = None,
         timeout: float | tuple[float, float], stream: bool = False) -> Any:
    """One request. Returns the decoded JSON body, or with `stream` the open response (caller closes).
    Raises ApiError for any non-2xx answer or transport failure."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    _, url, headers, _, _ = api_client.param_serialize(
        method, path, query_params=list(query.items()) if query else None, header_params=headers,
        auth_settings=["BearerToken"],
    )
    try:
        resp = api_client.rest_client.pool_manager.request(
            method, url, headers=headers, body=None if body is None else json.dumps(body).encode(),
            timeout=_timeout(timeout), retries=False, preload_content=False,
        )
        if stream and 200 <= resp.status < 300:
            return resp
        try:
            raw = resp.data
        finally:
            resp.release_conn()
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise transport_error(exc, timeout) from None
    if not 200 <= resp.status < 300:
        raise _status_error(resp.status, raw)
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(resp.status, "the API server answered with something other than JSON") from None


def get(api_client: ApiClient, resource: ApiResource, namespace: str | None, name: str, *,
        timeout: float) -> dict:
    return send(api_client, "GET", resource.path(namespace, name), timeout=timeout)


def list_pages(api_client: ApiClient, resource: ApiResource, namespace: str | None = None, *, limit: int,
               timeout: float, label_selector: str | None = None,
               field_selector: str | None = None) -> Iterator[dict]:
    """Each page of a chunked list (`limit` + `continue`), as the API returns it. Items of built-in
    kinds come without `kind`/`apiVersion`; they are filled in here so every object stands alone."""
    token = None
    while True:
        query: dict = {"limit": limit}
        if token:
            query["continue"] = token
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        page = send(api_client, "GET", resource.path(namespace), query=query, timeout=timeout)
        for item in page.get("items") or ():
            if isinstance(item, dict):
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


class WatchStream:
    """One watch connection: iterate for events (dicts with `type` and `object`); `close()` from another
    thread unblocks the reader. An ERROR event raises ApiError (410 Gone: the caller must re-list)."""

    def __init__(self, api_client: ApiClient, resource: ApiResource, resource_version: str, *,
                 timeout_seconds: int, connect_timeout: float):
        self._timeout = (connect_timeout, timeout_seconds + 30.0)  # a silent stream is legal until the server timeout
        self._resp = send(
            api_client, "GET", resource.path(),
            query={"watch": True, "resourceVersion": resource_version, "allowWatchBookmarks": True,
                   "timeoutSeconds": timeout_seconds},
            timeout=self._timeout, stream=True,
        )

    def __iter__(self) -> Iterator[dict]:
        try:
            for line in iter_resp_lines(self._resp):
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise ApiError(int(status.get("code") or 500), str(status.get("reason") or ""),
                                   str(status.get("message") or ""))
                yield event
        except urllib3.exceptions.HTTPError as exc:
            raise transport_error(exc, self._timeout) from None
        except (OSError, ValueError) as exc:  # socket shut down by close(), or a torn JSON line
            raise ApiError(None, f"watch stream broken: {exc}") from None
        finally:
            self._resp.close()
            self._resp.release_conn()

    def close(self) -> None:
        """Unblock a reader in another thread; the reader closes the connection. Harmless when the
        reader has closed it already."""
        # urllib3 raises ValueError/RuntimeError once the response is closed or released.
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            self._resp.shutdown()
