"""The image's entry point, run as the rendered Deployment runs it: gunicorn with the production config,
the environment of the pod, the chart's policy ConfigMap and generated TLS Secret as files. Probes,
metrics and an admission call answer over HTTPS, verified as the apiserver verifies the webhook: against
the caBundle, for the server name <service>.<namespace>.svc."""
from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import free_port, stop_group, wait_serving

from .conftest import rendered_set
from .test_dockerfile import ENTRYPOINT

pytestmark = pytest.mark.slow
ROOT = "/etc/gpu-admission"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    rendered = rendered_set("default")
    base = tmp_path_factory.mktemp("pod")
    deployment = rendered.one("Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    # The pod's files, where its volumes would put them.
    configmap = rendered.one("ConfigMap")
    secret = rendered.one("Secret")
    for mount in container["volumeMounts"]:
        target = base / mount["mountPath"].lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        if mount["name"] == "policy":
            for key, text in configmap["data"].items():
                (target / key).write_text(text)
        elif mount["name"] == "tls":
            for key, data in secret["data"].items():
                (target / key).write_bytes(base64.b64decode(data))
    port = free_port()
    env = {k: v.replace(ROOT, str(base / ROOT.lstrip("/"))) for k, v in env.items()}
    env["GPU_ADMISSION_BIND"] = f"127.0.0.1:{port}"
    health_port = free_port()
    env["GPU_ADMISSION_HEALTH_BIND"] = f"127.0.0.1:{health_port}"
    env["GPU_ADMISSION_WORKERS"] = "1"
    process_env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(base / "tmp"),
                   **env}
    (base / "tmp").mkdir(exist_ok=True)  # the emptyDir at /tmp
    gunicorn = Path(sys.executable).with_name(ENTRYPOINT[0])
    log = (base / "server.log").open("wb")
    # cwd: the image's WORKDIR holds no sources (gunicorn puts its cwd first on sys.path)
    process = subprocess.Popen([str(gunicorn), *ENTRYPOINT[1:]], env=process_env, cwd=base, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    service = rendered.one("Service")["metadata"]["name"]
    host = f"{service}.{deployment['metadata']['namespace']}.svc"
    context = ssl.create_default_context(cadata=base64.b64decode(
        rendered.one("ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"]).decode())

    def probe(path: str):
        """As the kubelet probes: plain HTTP to the probes' own port."""
        connection = http.client.HTTPConnection("127.0.0.1", health_port, timeout=5)
        connection.request("GET", path)
        response = connection.getresponse()
        out = response.status, response.read()
        connection.close()
        return out

    def request(method: str, path: str, body: dict | None = None):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection = http.client.HTTPSConnection(host, port, context=context, timeout=5)
        connection.sock = context.wrap_socket(sock, server_hostname=host)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        out = response.status, response.read()
        connection.close()
        return out

    try:
        wait_serving(lambda: request("GET", "/healthz")[0] == 200, process, base / "server.log", timeout=30)
        yield {"request": request, "container": container, "rendered": rendered, "pgid": process.pid,
               "probe": probe}
    finally:
        stop_group(process, grace=20)
        log.close()


@pytest.mark.parametrize("probe", [pytest.param(p, id=p) for p in ("startupProbe", "livenessProbe", "readinessProbe")])
def test_probes_answer_on_their_own_port_and_over_https(server, probe):
    assert server["container"][probe]["httpGet"]["scheme"] == "HTTP"
    status, body = server["probe"](server["container"][probe]["httpGet"]["path"])
    assert status == 200, body
    status, body = server["request"]("GET", server["container"][probe]["httpGet"]["path"])  # both listeners serve it
    assert status == 200, body


def test_readiness_reports_the_mounted_policy_and_certificate(server):
    status, body = server["probe"](server["container"]["readinessProbe"]["httpGet"]["path"])
    ready = json.loads(body)
    assert status == 200 and ready["ready"] is True
    assert ready["certificates"]["loaded"] is True
    assert ready["policy"]["source"].endswith("/etc/gpu-admission/policy/policy.yaml")
    assert ready["policy"]["inForce"] == "current file"


def test_metrics_are_served_on_the_webhook_port(server):
    status, body = server["request"]("GET", "/metrics")
    assert status == 200 and b"gpu_admission_" in body


@pytest.mark.parametrize("path", [pytest.param("/validate", id="validate"), pytest.param("/mutate", id="mutate")])
def test_admission_call_is_answered(server, path):
    (hook,) = [h for k, h in server["rendered"].webhooks() if h["clientConfig"]["service"]["path"] == path][:1]
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "b5a2f7de-0001", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": "ml", "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                   "spec": {"containers": [{"name": "c", "image": "cuda:12",
                                            "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}}}
    status, body = server["request"]("POST", f"{path}?timeout={hook['timeoutSeconds']}s", review)
    answer = json.loads(body)
    assert status == 200 and answer["response"]["uid"] == "b5a2f7de-0001"
    if path == "/validate":
        assert answer["response"]["allowed"] is False
        assert "[visible-devices-override]" in answer["response"]["status"]["message"]
