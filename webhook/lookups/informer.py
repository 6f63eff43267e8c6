"""One resource kept in memory by list+watch, in a background thread, as client-go's reflector does:
a chunked list gives the state and a resourceVersion; a watch from there applies ADDED/MODIFIED/DELETED;
BOOKMARKs advance the resourceVersion (so a reconnect after quiet periods does not need a re-list);
410 Gone means the version was compacted away and only a fresh list restores a consistent cache; any
other failure is retried after an exponential backoff with jitter."""
from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient

from webhook.lookups.apiserver import ApiError, WatchStream, list_pages
from webhook.lookups.backoff import Backoff
from webhook.lookups.resources import ApiResource

Key = tuple[str, str]  # (namespace or "" when cluster-scoped, name)


_UNSERVED_RELIST = 300.0  # seconds between lists of an optional kind the cluster does not serve


@dataclass(frozen=True, slots=True)
class InformerSettings:
    page_size: int = 500
    list_timeout: float = 30.0
    connect_timeout: float = 5.0
    # Watches ask the server to end after a random time in [watch_seconds, 2 * watch_seconds), as
    # client-go does, so that replicas do not reconnect in step.
    watch_seconds: int = 300
    backoff: Backoff = field(default_factory=Backoff)


@dataclass(frozen=True, slots=True)
class InformerStats:
    synced: bool
    objects: int
    resource_version: str
    lists: int
    watches: int
    errors: int
    last_error: str | None
    list_errors: int = 0
    watch_errors: int = 0


def object_key(obj: dict) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class Informer:
    def __init__(self, api_client: ApiClient, resource: ApiResource, *, transform: Callable[[dict], Any],
                 settings: InformerSettings = InformerSettings(), rng: random.Random | None = None,
                 optional: bool = False):
        self.resource = resource
        # a kind the cluster may not serve (an alpha API, a CRD of a tool not installed): not served is an
        # empty, synced cache, listed again now and then in case it comes
        self._optional = optional
        self._api = api_client
        self._transform = transform  # what is kept per object; runs before anything is stored
        self._settings = settings
        self._rng = rng or random.Random()
        self._store: dict[Key, Any] = {}
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self.synced = threading.Event()  # set by the first complete list, and stays set
        self.resource_version = ""
        self.generation = 0  # bumped by every change, so derived views know when to rebuild
        self.lists = 0
        self.watches = 0
        self.errors = 0
        self.list_errors = 0  # errors of a list, and of a watch (together: errors)
        self.watch_errors = 0
        self.last_error: ApiError | None = None

    def get(self, key: Key) -> Any:
        """The kept value, or None when the object is not in the cache."""
        return self._store.get(key)

    def values(self) -> list:
        return list(self._store.values())

    def stats(self) -> InformerStats:
        err = self.last_error
        return InformerStats(self.synced.is_set(), len(self._store), self.resource_version, self.lists,
                             self.watches, self.errors, err.describe() if err else None, self.list_errors,
                             self.watch_errors)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to end and wait up to `timeout` for it (0: do not wait)."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        attempt = 0
        must_list = True
        while not self._stop.is_set():
            try:
                if must_list:
                    self._list()
                    must_list = False
                    attempt = 0
                self._watch()
                attempt = 0  # the server ended the watch on its timeout: resume at once
            except Exception as exc:  # the thread must outlive anything: a dead informer is a stale cache
                if self._stop.is_set():
                    return
                err = exc if isinstance(exc, ApiError) else ApiError(None, f"informer error: {exc!r}")
                if self._optional and must_list and err.status == 404:
                    self._store = {}
                    self.synced.set()
                    self._stop.wait(_UNSERVED_RELIST)
                    continue
                if err.gone and attempt == 0:
                    must_list = True  # compacted: re-list at once; a second 410 in a row backs off
                    attempt = 1
                    continue
                self.errors += 1
                if must_list:  # still set: the list failed, not the watch after it
                    self.list_errors += 1
                else:
                    self.watch_errors += 1
                self.last_error = err
                must_list = must_list or err.gone or not isinstance(exc, ApiError)
                self._stop.wait(self._settings.backoff.delay(attempt, self._rng))
                attempt += 1

    def _list(self) -> None:
        store: dict[Key, Any] = {}
        version = ""
        for page in list_pages(self._api, self.resource, limit=self._settings.page_size,
                               timeout=self._settings.list_timeout):
            for item in page.get("items") or ():
                if isinstance(item, dict):
                    store[object_key(item)] = self._transform(item)
            version = (page.get("metadata") or {}).get("resourceVersion") or version
            if self._stop.is_set():
                return
        self._store = store  # swapped whole: readers see the old state or the new one, never a mix
        self.resource_version = version
        self.generation += 1
        self.lists += 1
        self.last_error = None
        self.synced.set()

    def _watch(self) -> None:
        seconds = self._settings.watch_seconds
        stream = WatchStream(self._api, self.resource, self.resource_version,
                             timeout_seconds=seconds + self._rng.randrange(seconds),
                             connect_timeout=self._settings.connect_timeout)
        self._stream = stream
        self.watches += 1
        self.last_error = None
        try:
            if self._stop.is_set():
                stream.close()  # stop() came before the stream was published: end it here
            for event in stream:
                self._apply(event)
                if self._stop.is_set():
                    return
        finally:
            self._stream = None

    def _apply(self, event: dict) -> None:
        obj = event.get("object")
        if not isinstance(obj, dict):
            return
        kind = event.get("type")
        changed = False
        if kind in ("ADDED", "MODIFIED"):
            key, kept = object_key(obj), self._transform(obj)
            # A Node's status is written every few minutes (conditions, images) while the parts kept of it
            # stay the same: only a change of what is kept makes derived views rebuild.
            changed = self._store.get(key) != kept
            self._store[key] = kept
        elif kind == "DELETED":
            changed = self._store.pop(object_key(obj), None) is not None
        elif kind != "BOOKMARK":
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.resource_version = version
        if changed:
            self.generation += 1
