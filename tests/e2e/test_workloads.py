"""Workloads through the real apiserver and kube-controller-manager: templates that break a rule are denied
at `kubectl apply`; ones that pass create Pods (the Job, ReplicaSet and CronJob controllers) that carry our
patch; a Job whose Pods are denied only when the controller creates them shows the denial in its events, as
`kubectl describe` prints it."""
from __future__ import annotations

import copy

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.test_kubectl import GPU_POD, write

pytestmark = pytest.mark.e2e

VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def pod_spec(env: list | None = None, restart: str = "Never") -> dict:
    spec = copy.deepcopy(GPU_POD["spec"])
    spec["restartPolicy"] = restart
    if env:
        spec["containers"][0]["env"] = env
    return spec


def job(namespace: str, name: str, env: list | None = None) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"backoffLimit": 0, "template": {"spec": pod_spec(env)}}}


def deployment(namespace: str, name: str, env: list | None = None) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec(env, restart="Always")}}}


def cronjob(namespace: str, name: str, env: list | None = None) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": "0 0 1 1 *",
                     "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"spec": pod_spec(env)}}}}}


WORKLOADS = [
    pytest.param(job, "job.batch", "workloads", id="job"),
    pytest.param(deployment, "deployment.apps", "workloads", id="deployment"),
    pytest.param(cronjob, "cronjob.batch", "cronjobs", id="cronjob"),
]


@pytest.mark.parametrize("make, kind, hook", WORKLOADS)
def test_a_template_breaking_a_rule_is_denied_at_apply(kubectl, namespace, tmp_path, webhook, make, kind, hook):
    result = kubectl.apply_file(write(tmp_path, "workload.yaml", make(namespace, "train", VISIBLE_ALL)))
    assert result.returncode == 1
    assert f'admission webhook "{hook}.validate.gpu-admission.io" denied the request' in result.stderr
    assert "[visible-devices-override]" in result.stderr


def owned_pods(kubectl, namespace: str, count: int) -> list[dict]:
    return wait_for(lambda: (items := kubectl.json("get", "pods", "-n", namespace)["items"]) and
                    len(items) >= count and items, f"{count} pods in {namespace}", timeout=90)


def assert_patched(pod: dict) -> None:
    spec = pod["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"]["workload.example.com/gpu-allocation"] == "device-plugin"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False


@pytest.mark.parametrize("make, kind, count", [
    pytest.param(job, "job.batch", 1, id="job"),
    pytest.param(deployment, "deployment.apps", 2, id="deployment"),
])
def test_passing_workloads_create_pods_that_carry_the_patch(kubectl, namespace, tmp_path, webhook, make, kind,
                                                            count):
    result = kubectl.apply_file(write(tmp_path, "workload.yaml", make(namespace, "train")), check=True)
    assert result.stdout == f"{kind}/train created\n"
    pods = owned_pods(kubectl, namespace, count)
    for pod in pods:
        assert pod["metadata"]["ownerReferences"][0]["controller"] is True
        assert_patched(pod)


def test_a_cronjob_run_creates_patched_pods(kubectl, namespace, tmp_path, webhook):
    kubectl.apply_file(write(tmp_path, "cronjob.yaml", cronjob(namespace, "nightly")), check=True)
    kubectl.run("create", "job", "nightly-now", "--from=cronjob/nightly", "-n", namespace)
    (pod,) = owned_pods(kubectl, namespace, 1)
    assert pod["metadata"]["labels"]["job-name"] == "nightly-now"
    assert_patched(pod)


@pytest.fixture
def audited_namespace(cluster, release):
    """A namespace in audit mode (a per-namespace override), switched to enforce by `enforce()`."""
    name = cluster.namespace()

    def enforce():
        release.upgrade()

    release.upgrade({"policy": {"namespaceOverrides": [{"namespaces": [name], "mode": "audit"}]}})
    yield name, enforce
    release.upgrade()
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def test_pods_denied_at_creation_show_in_the_jobs_events(kubectl, audited_namespace, tmp_path, webhook):
    """The Job was admitted in audit mode; once the namespace is enforced, the Job controller's Pod creates
    are denied, and the user reads why in `kubectl describe job`."""
    namespace, enforce = audited_namespace
    manifest = job(namespace, "train", VISIBLE_ALL)
    manifest["spec"]["suspend"] = True
    path = write(tmp_path, "job.yaml", manifest)
    wait_for(lambda: kubectl.apply_file(path).returncode == 0, "audit mode in the namespace")
    enforce()
    kubectl.run("patch", "job", "train", "-n", namespace, "--type=merge", "-p", '{"spec": {"suspend": false}}')
    described = wait_for(lambda: "FailedCreate" in (d := kubectl.run("describe", "job", "train", "-n",
                                                                      namespace).stdout) and d,
                         "the Job's FailedCreate event")
    line = next(li for li in described.splitlines() if "FailedCreate" in li)
    assert 'Error creating: admission webhook "pods.validate.gpu-admission.io" denied the request' in line
    assert "[visible-devices-override]" in line
    assert kubectl.json("get", "pods", "-n", namespace)["items"] == []
