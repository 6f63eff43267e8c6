"""A local HTTPS server that speaks the Kubernetes API as a kube-apiserver does, for the resources
gpu-admission lists, watches, gets and writes. The real `kubernetes` client talks to it.

What it reproduces, because the code under test depends on it:
- one global resourceVersion (etcd's revision) stamped on every write; lists report it;
- chunked lists: `limit` + `continue`, the token pinned to the first page's snapshot, 410 Expired once
  that snapshot is compacted; items of built-in kinds come without `kind`/`apiVersion`;
- watches (`?watch=1`): chunked JSON lines, ADDED/MODIFIED/DELETED from a resourceVersion, BOOKMARK
  when allowed, an ERROR event with a 410 Expired Status when the version is compacted, the stream
  ended after `timeoutSeconds`;
- Status bodies for 401, 403, 404, 409, 410, 422, 5xx; a plain-text 404 for resources it does not serve;
- apiserver shaping of Pods (quantities as strings, defaults filled in);
- validation of custom resources against their CRD's openAPIV3Schema (the report kinds, with the
  official CRDs of the report APIs, tests/data/fixtures/schemas): a body the schema refuses, or with a field the real
  apiserver would prune, is answered 422 Invalid.

Faults are injected per resource and verb: `fail()` answers a status, `delay()` answers slowly,
`unserve()` removes a resource, `drop_watches()` cuts open watches, `compact()` expires old versions,
`hold_watches()` keeps new watches waiting. Every request is logged in `calls`.

It stands in for the kube-apiserver's list/watch side (and etcd's compaction) where a real one cannot be
made to answer so on demand: a 403 on one kind, a slow or stalled answer, a dropped or held watch, a
compaction at a chosen version, a malformed body. The real one is tests/e2e (tests/e2e/cluster.py): the
lookups there watch a real kube-apiserver with the chart's ServiceAccount token.
"""
from __future__ import annotations

import base64
import bisect
import collections
import contextlib
import copy
import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.schemas import CRDS, crd_errors

USER = "system:serviceaccount:gpu-admission:gpu-admission"


@dataclass(frozen=True)
class Res:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    builtin: bool = True  # built-in kinds list their items without kind/apiVersion

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES = (
    Res("", "v1", "namespaces", "Namespace", namespaced=False),
    Res("", "v1", "pods", "Pod"),
    Res("", "v1", "configmaps", "ConfigMap"),
    Res("", "v1", "secrets", "Secret"),
    Res("", "v1", "podtemplates", "PodTemplate"),
    Res("", "v1", "replicationcontrollers", "ReplicationController"),
    Res("apps", "v1", "deployments", "Deployment"),
    Res("apps", "v1", "statefulsets", "StatefulSet"),
    Res("apps", "v1", "daemonsets", "DaemonSet"),
    Res("apps", "v1", "replicasets", "ReplicaSet"),
    Res("batch", "v1", "jobs", "Job"),
    Res("batch", "v1", "cronjobs", "CronJob"),
    Res("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim"),
    Res("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate"),
    Res("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", namespaced=False),
    Res("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False),
    Res("", "v1", "nodes", "Node", namespaced=False),
    Res("wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport", builtin=False),
    Res("wgpolicyk8s.io", "v1alpha2", "clusterpolicyreports", "ClusterPolicyReport", namespaced=False, builtin=False),
    Res("openreports.io", "v1alpha1", "reports", "Report", builtin=False),
    Res("openreports.io", "v1alpha1", "clusterreports", "ClusterReport", namespaced=False, builtin=False),
    Res("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
        namespaced=False),
)
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}


def status(code: int, reason: str, message: str, **details) -> dict:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


@dataclass(frozen=True)
class Call:
    method: str
    verb: str  # list | watch | get | create | update | delete
    plural: str
    namespace: str | None
    name: str | None
    query: dict
    at: float


@dataclass
class _Rule:
    plural: str | None
    verb: str | None
    namespace: str | None
    times: int | None
    status: int | None = None
    message: str | None = None
    delay: float = 0.0
    when: Callable[[Call], bool] | None = None

    def matches(self, call: Call) -> bool:
        return ((self.plural is None or self.plural == call.plural)
                and (self.verb is None or self.verb == call.verb)
                and (self.namespace is None or self.namespace == call.namespace)
                and (self.when is None or self.when(call))
                and (self.times is None or self.times > 0))


@dataclass(frozen=True)
class _Event:
    rv: int
    type: str
    res: Res
    key: tuple[str, str]
    obj: dict


def _quantities_as_strings(spec: dict) -> None:
    for group in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(group) or ():
            resources = container.get("resources") or {}
            for section in ("limits", "requests"):
                if isinstance(resources.get(section), dict):
                    resources[section] = {k: str(v) for k, v in resources[section].items()}


def _shape_pod(pod: dict) -> None:
    """What the apiserver's defaulting and in-tree admission leave on a created Pod."""
    spec = pod.setdefault("spec", {})
    _quantities_as_strings(spec)
    spec.setdefault("securityContext", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("priority", 0)
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    for container in spec.get("containers") or ():
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("imagePullPolicy", "IfNotPresent")
        resources = container.setdefault("resources", {})
        if resources.get("limits") and not resources.get("requests"):
            resources["requests"] = dict(resources["limits"])
    pod.setdefault("status", {"phase": "Running", "qosClass": "BestEffort"})


def _pod_spec(obj: dict) -> dict | None:
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "PodTemplate":
        return (obj.get("template") or {}).get("spec")
    if kind == "CronJob":
        return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job"):
        return (spec.get("template") or {}).get("spec")
    return None


class FakeApiServer:
    def __init__(self, ssl_context: ssl.SSLContext, *, token: str = "test-token"):
        self.token = token
        self.calls: list[Call] = []
        self._rules: list[_Rule] = []
        self._unserved: set[str] = set()
        self._objects: dict[Res, dict[tuple[str, str], dict]] = {r: {} for r in RESOURCES}
        self._history: list[_Event] = []
        self._history_rvs: list[int] = []
        self._rv = 1000
        self._compacted = 0
        self._cond = threading.Condition()
        self._drop_generation = 0
        self._bookmark_generation = 0
        self._watch_gate = threading.Event()
        self._watch_gate.set()
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._open_watches: collections.Counter = collections.Counter()
        self._httpd = _HttpServer(("127.0.0.1", 0), _Handler, self, ssl_context)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def close(self) -> None:
        self._closing.set()
        self._watch_gate.set()
        with self._cond:
            self._cond.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        for conn in list(self._connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    # -- state -----------------------------------------------------------------------------------

    def apply(self, obj: dict) -> dict:
        """Create or replace an object as the apiserver would store it; returns the stored copy."""
        res = BY_KIND[(obj["apiVersion"], obj["kind"])]
        with self._cond:
            return copy.deepcopy(self._write(res, copy.deepcopy(obj), create=None))

    def load(self, text: str, namespace: str | None = None) -> list[dict]:
        """Apply every document of a YAML stream (kubectl apply's placement of namespace-less objects)."""
        out = []
        for doc in yaml.safe_load_all(text):
            if not isinstance(doc, dict):
                continue
            if BY_KIND[(doc["apiVersion"], doc["kind"])].namespaced and namespace:
                doc.setdefault("metadata", {}).setdefault("namespace", namespace)
            out.append(self.apply(doc))
        return out

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        res = BY_KIND[(api_version, kind)]
        with self._cond:
            self._remove(res, (namespace or "" if res.namespaced else "", name))

    def objects(self, plural: str) -> list[dict]:
        res = self._res(plural)
        with self._cond:
            return [copy.deepcopy(o) for _, o in sorted(self._objects[res].items())]

    def compact(self) -> None:
        """Expire every resourceVersion up to now, as etcd compaction does."""
        with self._cond:
            self._compacted = self._rv

    # -- faults ----------------------------------------------------------------------------------

    def fail(self, code: int, *, resource: str | None = None, verb: str | None = None,
             namespace: str | None = None, times: int | None = None, message: str | None = None,
             when: Callable[[Call], bool] | None = None) -> None:
        """Answer matching requests with `code` and its Status body (`times`: only that many)."""
        self._rules.append(_Rule(resource, verb, namespace, times, status=code, message=message, when=when))

    def delay(self, seconds: float, *, resource: str | None = None, verb: str | None = None,
              namespace: str | None = None, times: int | None = None) -> None:
        """Answer matching requests only after `seconds`."""
        self._rules.append(_Rule(resource, verb, namespace, times, delay=seconds))

    def clear_faults(self) -> None:
        self._rules.clear()

    def unserve(self, plural: str) -> None:
        self._unserved.add(plural)

    def drop_watches(self) -> None:
        """Cut every open watch connection, as a network failure or an apiserver restart does."""
        with self._cond:
            self._drop_generation += 1
            self._cond.notify_all()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion on every watch that allows them."""
        with self._cond:
            self._bookmark_generation += 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold_watches(self):
        """New watch requests wait until the block ends (to change state while no watch is open)."""
        self._watch_gate.clear()
        try:
            yield
        finally:
            self._watch_gate.set()

    def calls_to(self, plural: str | None = None, verb: str | None = None) -> list[Call]:
        return [c for c in list(self.calls)
                if (plural is None or c.plural == plural) and (verb is None or c.verb == verb)]

    def watching(self, plural: str) -> int:
        """How many watch requests for `plural` were made so far."""
        return len(self.calls_to(plural, "watch"))

    def open_watches(self, plural: str) -> int:
        """Watches of `plural` established now: they will see every later change, bookmark and drop."""
        with self._cond:
            return self._open_watches[plural]

    # -- internals (self._cond held) -------------------------------------------------------------

    def _res(self, plural: str) -> Res:
        return next(r for r in RESOURCES if r.plural == plural)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _record(self, kind: str, res: Res, key: tuple[str, str], obj: dict) -> None:
        self._history.append(_Event(self._rv, kind, res, key, copy.deepcopy(obj)))
        self._history_rvs.append(self._rv)
        self._cond.notify_all()

    def _write(self, res: Res, obj: dict, *, create: bool | None, expect_rv: str | None = None) -> dict:
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        namespace = meta.get("namespace") or "default" if res.namespaced else ""
        if res.namespaced:
            meta["namespace"] = namespace
        key = (namespace, name)
        old = self._objects[res].get(key)
        if create is True and old is not None:
            raise _Failure(status(409, "AlreadyExists", f'{res.qualified} "{name}" already exists',
                                  name=name, group=res.group, kind=res.plural))
        if create is False:
            if old is None:
                raise _Failure(status(404, "NotFound", f'{res.qualified} "{name}" not found',
                                      name=name, group=res.group, kind=res.plural))
            if not expect_rv and not res.builtin:
                raise _Failure(status(422, "Invalid", f'{res.kind}.{res.group} "{name}" is invalid: '
                                      "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                                      name=name, group=res.group, kind=res.kind))
            if expect_rv and expect_rv != old["metadata"]["resourceVersion"]:
                raise _Failure(status(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": '
                                      "the object has been modified; please apply your changes to the latest "
                                      "version and try again", name=name, group=res.group, kind=res.plural))
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind
        if old is None:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["generation"] = 1
            if res.kind == "Pod":
                _shape_pod(obj)
            elif (spec := _pod_spec(obj)) is not None:
                _quantities_as_strings(spec)
        else:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        meta["resourceVersion"] = str(self._next_rv())
        self._objects[res][key] = obj
        self._record("ADDED" if old is None else "MODIFIED", res, key, obj)
        return obj

    def _remove(self, res: Res, key: tuple[str, str]) -> dict:
        obj = self._objects[res].pop(key, None)
        if obj is None:
            raise _Failure(status(404, "NotFound", f'{res.qualified} "{key[1]}" not found',
                                  name=key[1], group=res.group, kind=res.plural))
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._record("DELETED", res, key, obj)
        return obj

    def _state_at(self, res: Res, rv: int) -> dict[tuple[str, str], dict]:
        state: dict[tuple[str, str], dict] = {}
        for event in self._history[:bisect.bisect_right(self._history_rvs, rv)]:
            if event.res is res:
                if event.type == "DELETED":
                    state.pop(event.key, None)
                else:
                    state[event.key] = event.obj
        return state

    def _fault(self, call: Call) -> _Rule | None:
        for rule in self._rules:
            if rule.matches(call):
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return None


class _Failure(Exception):
    def __init__(self, body: dict):
        self.body = body


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    return base64.b64encode(json.dumps({"rv": rv, "start": list(key)}).encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    data = json.loads(base64.b64decode(token))
    return int(data["rv"]), tuple(data["start"])


def _selected(obj: dict, selector: str | None) -> bool:
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, fake: FakeApiServer, context: ssl.SSLContext):
        super().__init__(address, handler)
        self.fake = fake
        # The TLS handshake runs in the request's thread, not in the accept loop.
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def finish_request(self, request, client_address):
        self.fake._connections.add(request)
        try:
            # Headers and body go out as separate writes: without this, Nagle's algorithm and the
            # client's delayed ACK add 40 ms to every response.
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request.do_handshake()
            super().finish_request(request, client_address)
        except (OSError, ssl.SSLError):
            pass
        finally:
            self.fake._connections.discard(request)

    def handle_error(self, request, client_address):  # client went away: not the test's concern
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def log_message(self, *args) -> None:
        pass

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_PUT(self):
        self._serve("PUT")

    def do_DELETE(self):
        self._serve("DELETE")

    # -- request parsing -------------------------------------------------------------------------

    def _route(self):
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        segs = [unquote(s) for s in parts.path.strip("/").split("/")]
        if segs[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segs[2:]
        elif segs[0] == "apis" and len(segs) >= 3:
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return None
        namespace = name = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, plural, name = rest[1], rest[2], (rest[3] if len(rest) > 3 else None)
            if len(rest) > 4:
                return None
        elif 1 <= len(rest) <= 2:
            plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        else:
            return None
        res = BY_PATH.get((group, version, plural))
        if res is None or plural in self.server.fake._unserved or (namespace and not res.namespaced):
            return None
        return res, namespace, name, query

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        route = self._route()
        if route is None:
            self._send_text(404, "404 page not found\n")
            return
        res, namespace, name, query = route
        watch = query.get("watch") in ("true", "1")
        verb = {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(
            method, "get" if name else ("watch" if watch else "list"))
        call = Call(method, verb, res.plural, namespace, name, query, time.monotonic())
        fake.calls.append(call)
        if self.headers.get("Authorization") != f"Bearer {fake.token}":
            self._send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        rule = fake._fault(call)
        if rule is not None and rule.delay:
            if fake._closing.wait(rule.delay):
                return
            rule = None
        if rule is not None and rule.status:
            self._send_json(rule.status, self._fault_status(rule, res, verb, namespace))
            return
        try:
            if verb == "list":
                self._list(res, namespace, query)
            elif verb == "watch":
                self._watch(res, namespace, query)
            elif verb == "get":
                self._get(res, namespace, name)
            else:
                self._write(verb, res, namespace, name, body)
        except _Failure as failure:
            self._send_json(failure.body["code"], failure.body)

    def _fault_status(self, rule: _Rule, res: Res, verb: str, namespace: str | None) -> dict:
        code = rule.status
        if code == 403:
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            message = rule.message or (f'{res.qualified} is forbidden: User "{USER}" cannot {verb} resource '
                                       f'"{res.plural}" in API group "{res.group}" {scope}')
            return status(403, "Forbidden", message, group=res.group, kind=res.plural)
        reasons = {404: "NotFound", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
                   503: "ServiceUnavailable", 504: "Timeout"}
        return status(code, reasons.get(code, "Unknown"), rule.message or f"injected failure {code}")

    # -- verbs -----------------------------------------------------------------------------------

    def _get(self, res: Res, namespace: str | None, name: str) -> None:
        fake = self.server.fake
        with fake._cond:
            obj = fake._objects[res].get((namespace or "", name))
            obj = copy.deepcopy(obj) if obj is not None else None
        if obj is None:
            raise _Failure(status(404, "NotFound", f'{res.qualified} "{name}" not found',
                                  name=name, group=res.group, kind=res.plural))
        self._send_json(200, obj)

    def _list(self, res: Res, namespace: str | None, query: dict) -> None:
        fake = self.server.fake
        limit = int(query.get("limit") or 0)
        token = query.get("continue")
        with fake._cond:
            if token:
                snapshot, start = _decode_continue(token)
                if snapshot < fake._compacted:
                    raise _Failure(status(
                        410, "Expired", "The provided continue parameter is too old to display a consistent list "
                        "result. You can start a new list without the continue parameter."))
                state = fake._state_at(res, snapshot)
            else:
                snapshot, start = fake._rv, None
                state = fake._objects[res]
            keys = sorted(k for k in state if (namespace is None or k[0] == namespace)
                          and (start is None or k > start) and _selected(state[k], query.get("labelSelector")))
            page = keys[:limit] if limit else keys
            items = []
            for key in page:
                item = copy.deepcopy(state[key])
                if res.builtin:
                    item.pop("apiVersion", None)
                    item.pop("kind", None)
                items.append(item)
        meta: dict = {"resourceVersion": str(snapshot)}
        if len(page) < len(keys):
            meta["continue"] = _encode_continue(snapshot, page[-1])
            meta["remainingItemCount"] = len(keys) - len(page)
        self._send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                              "items": items})

    def _write(self, verb: str, res: Res, namespace: str | None, name: str | None, body: bytes) -> None:
        fake = self.server.fake
        with fake._cond:
            if verb == "delete":
                obj = fake._remove(res, (namespace or "", name))
                self._send_json(200, obj)
                return
            obj = json.loads(body)
            invalid = crd_errors(obj) if (obj.get("apiVersion"), obj.get("kind")) in CRDS else []
            if invalid:
                raise _Failure(status(422, "Invalid",
                                      f'{res.kind}.{res.group} "{name or (obj.get("metadata") or {}).get("name", "")}" '
                                      'is invalid: '
                                      + "; ".join(invalid), group=res.group, kind=res.kind))
            meta = obj.setdefault("metadata", {})
            if res.namespaced:
                meta["namespace"] = namespace
            if verb == "update":
                if meta.get("name") != name:
                    raise _Failure(status(400, "BadRequest", "the name of the object does not match the URL"))
                stored = fake._write(res, obj, create=False, expect_rv=meta.get("resourceVersion"))
                code = 200
            else:
                stored = fake._write(res, obj, create=True)
                code = 201
            stored = copy.deepcopy(stored)
        self._send_json(code, stored)

    def _watch(self, res: Res, namespace: str | None, query: dict) -> None:
        fake = self.server.fake
        fake._watch_gate.wait()
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        deadline = time.monotonic() + int(query.get("timeoutSeconds") or 1800)
        requested = query.get("resourceVersion") or ""
        with fake._cond:
            drop_generation = fake._drop_generation
            bookmark_generation = fake._bookmark_generation
            initial: list[tuple[str, dict]] = []
            if requested in ("", "0"):
                sent = fake._rv
                initial = [("ADDED", o) for k, o in sorted(fake._objects[res].items())
                           if namespace is None or k[0] == namespace]
                index = len(fake._history)
            else:
                sent = int(requested)
                index = bisect.bisect_right(fake._history_rvs, sent)
            expired = requested not in ("", "0") and sent < fake._compacted
            compacted = fake._compacted
            fake._open_watches[res.plural] += 1
        try:
            self._stream_events(res, namespace, bookmarks, deadline, drop_generation, bookmark_generation,
                                initial, sent, index, expired, compacted)
        finally:
            with fake._cond:
                fake._open_watches[res.plural] -= 1

    def _stream_events(self, res, namespace, bookmarks, deadline, drop_generation, bookmark_generation, initial,
                       sent, index, expired, compacted) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if expired:
                self._chunk({"type": "ERROR", "object": status(
                    410, "Expired", f"too old resource version: {sent} ({compacted})")})
                self._end_chunks()
                return
            for kind, obj in initial:
                self._chunk({"type": kind, "object": obj})
            while True:
                with fake._cond:
                    while True:
                        if fake._closing.is_set() or fake._drop_generation != drop_generation:
                            self._abort()
                            return
                        events = [e for e in fake._history[index:]
                                  if e.res is res and (namespace is None or e.key[0] == namespace)]
                        index = len(fake._history)
                        mark = bookmarks and fake._bookmark_generation != bookmark_generation
                        remaining = deadline - time.monotonic()
                        if events or mark or remaining <= 0:
                            break
                        fake._cond.wait(remaining)
                    bookmark_generation = fake._bookmark_generation
                    current = fake._rv
                for event in events:
                    self._chunk({"type": event.type, "object": event.obj})
                if mark:
                    self._chunk({"type": "BOOKMARK", "object": {
                        "kind": res.kind, "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(current), "creationTimestamp": None}}})
                if remaining <= 0:
                    self._end_chunks()
                    return
        except (OSError, ssl.SSLError):
            self.close_connection = True

    # -- responses -------------------------------------------------------------------------------

    def _send_json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, code: int, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, payload: dict) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _abort(self) -> None:
        """Cut the connection mid-stream, without the terminating chunk."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@dataclass(frozen=True)
class Certificates:
    ca_file: str
    cert_file: str
    key_file: str

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def make_certificates(directory) -> Certificates:
    """A CA and a serving certificate for 127.0.0.1 (EC keys: fast to generate)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-apiserver-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = Certificates(str(directory / "ca.crt"), str(directory / "tls.crt"), str(directory / "tls.key"))
    with open(paths.ca_file, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths.cert_file, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths.key_file, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths
