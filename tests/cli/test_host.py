"""`gpu-admission host inventory|check|capture` as an operator runs them: output forms and exit codes."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.host.conftest import HOST_H200, configured_host
from webhook.cli.main import main
from webhook.host import sources


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_inventory_json(capsys):
    code, out, _ = run(capsys, "host", "inventory", "--from", str(HOST_H200), "-o", "json")
    assert code == 0
    inv = json.loads(out)
    assert inv["models"][0]["mig"]["profiles"]["7g.141gb"] == 1 and "uuid" not in inv["gpus"][0]


def test_inventory_show_ids(capsys):
    code, out, _ = run(capsys, "host", "inventory", "--from", str(HOST_H200), "--show-ids")
    assert code == 0 and "uuid GPU-REDACTED, serial REDACTED" in out


@pytest.mark.parametrize("cohort, edit, code, result", [
    pytest.param("dra", None, 0, "fit", id="dra-fit"),
    pytest.param("device-plugin", None, 0, "fit", id="device-plugin-fit"),
    pytest.param("dra", "nvidia-ctk-version.txt", 2, "cannot tell", id="dra-no-toolkit"),
    pytest.param("dra", "etc/cdi/nvidia.yaml", 1, "not fit", id="dra-no-cdi-spec"),
    pytest.param("device-plugin", "etc/containerd/conf.d/99-nvidia.toml", 1, "not fit", id="device-plugin-no-handler"),
])
def test_check_exit_codes(capsys, configured, cohort, edit, code, result):
    if edit:
        (configured / edit).unlink()
    got, out, _ = run(capsys, "host", "check", "--cohort", cohort, "--from", str(configured))
    assert got == code, out
    assert out.splitlines()[-1].startswith(f"{result}:")
    got, out, _ = run(capsys, "host", "check", "--cohort", cohort, "--from", str(configured), "-o", "json")
    report = json.loads(out)
    assert (got, report["result"], report["exitCode"], report["cohort"]) == (code, result, code, cohort)
    assert all(set(f) == {"id", "status", "subject", "what", "why", "fix", "docs",
                          "message"} for f in report["findings"])


@pytest.mark.parametrize("cohort", ["device-plugin", "dra"])
def test_check_the_lent_host_as_captured(capsys, cohort):
    code, out, _ = run(capsys, "host", "check", "--cohort", cohort, "--from", str(HOST_H200))
    assert code in (1, 2) and "cannot read the NVIDIA Container Toolkit version" in out


def test_check_with_a_policy_file(capsys, configured, tmp_path):
    from webhook.config.load import DEFAULT_PATH
    policy = tmp_path / "policy.yaml"
    policy.write_text(DEFAULT_PATH.read_text().replace(
        "    deviceTypes: [gpu]\n", "    deviceTypes: [gpu]\n    manager: gpu-operator-gpucluster\n"))
    code, out, _ = run(capsys, "host", "check", "--cohort", "dra", "--config", str(policy), "--from", str(configured))
    assert code == 0 and "meets 580+" in out


@pytest.mark.parametrize("argv, message", [
    pytest.param(["--cohort", "gpu"], "unknown cohort 'gpu'; the policy's cohorts are device-plugin, dra", id="cohort"),
    pytest.param(["--cohort", "dra", "--config", "/nonexistent/policy.yaml"], "cannot read", id="config"),
    pytest.param(["--cohort", "dra", "--from", "/nonexistent/dir"], "not a directory", id="from"),
])
def test_check_usage_errors(capsys, argv, message):
    code, _, err = run(capsys, "host", "check", *argv)
    assert code == 2 and message in err


FAKE_SMI = """#!/bin/sh
# Stands in for nvidia-smi on a GPU host: prints what the lent H200 host printed for the same arguments.
case "$*" in
  "-q -x") cat "$CAPTURED/nvidia-smi-q.xml" ;;
  "-q") cat "$CAPTURED/nvidia-smi-q.txt" ;;
  "mig -lgip") cat "$CAPTURED/mig-lgip.txt" ;;
  "-L") cat "$CAPTURED/list.txt" ;;
  --query-gpu=*) cat "$CAPTURED/query.csv" ;;
  *) echo "unexpected arguments: $*" >&2; exit 9 ;;
esac
"""


@pytest.fixture
def gpu_host(tmp_path, monkeypatch):
    """A host root with containerd as nvidia-ctk configures it and a CDI spec (stand-ins from tests/data/host), a
    process table, and a PATH of its own: an nvidia-smi that prints the lent host's outputs and the one tool that
    script runs, nothing else (no nvidia-ctk or containerd on it, whatever this machine has installed)."""
    root = tmp_path / "root"
    (root / "etc/cdi").mkdir(parents=True)
    configured_host(root)  # lays etc/ and writes version files that a live host does not read
    for stray in ("nvidia-ctk-version.txt", "containerd-version.txt"):
        (root / stray).unlink()
    (root / "proc/1").mkdir(parents=True)
    (root / "proc/1/comm").write_text("systemd\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    cat = shutil.which("cat")
    assert cat is not None
    (bin_dir / "cat").symlink_to(cat)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("CAPTURED", str(HOST_H200))
    monkeypatch.setattr(sources.LiveHost, "__init__", lambda self, root=root: setattr(self, "root", root))
    return root


def test_capture_writes_what_from_reads(capsys, tmp_path, gpu_host):
    code, out, err = run(capsys, "host", "capture", str(tmp_path / "cap"))
    assert code == 0, err
    assert "nvidia-ctk-version.txt: nvidia-ctk is not on PATH" in err and "containerd-version.txt" in err
    for name in ("nvidia-smi-q.xml", "nvidia-smi-q.txt", "mig-lgip.txt", "query.csv", "list.txt", "id-u.txt",
                 "processes.txt", "etc/containerd/config.toml", "etc/containerd/conf.d/99-nvidia.toml",
                 "etc/cdi/nvidia.yaml"):
        assert (tmp_path / "cap" / name).exists(), name
    assert (tmp_path / "cap/var/run/cdi").is_dir()
    assert (tmp_path / "cap/processes.txt").read_text() == "systemd\n"
    code, out, _ = run(capsys, "host", "inventory", "--from", str(tmp_path / "cap"), "-o", "json")
    assert code == 0 and json.loads(out)["gpus"][0]["productName"] == "NVIDIA H200"


def test_live_check_reads_the_same_as_its_capture(capsys, tmp_path, gpu_host):
    live_code, live, _ = run(capsys, "host", "check", "--cohort", "device-plugin", "-o", "json")
    run(capsys, "host", "capture", str(tmp_path / "cap"))
    cap_code, captured, _ = run(capsys, "host", "check", "--cohort", "device-plugin", "--from", str(tmp_path / "cap"),
                                "-o", "json")
    strip = lambda report: [(f["id"], f["status"], f["what"]) for f in json.loads(report)["findings"]]
    assert strip(live) == strip(captured)
    # no nvidia-ctk: the toolkit is unknown, so the host cannot be told fit
    assert live_code == cap_code == 2
    assert ("host-container-toolkit", "unknown") in [(i, s) for i, s, _ in strip(live)]
    assert ("host-runtime-handler", "pass") in [(i, s) for i, s, _ in strip(live)]


def test_live_without_nvidia_smi(capsys, gpu_host, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, out, _ = run(capsys, "host", "inventory")
    assert code == 2 and "nvidia-smi is not on PATH" in out


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "hybrid-gpu-1", "labels": {
    "eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}},
    "status": {"capacity": {"cpu": "16", "nvidia.com/gpu": "1"}}}


def test_check_reads_node_json_from_the_capture(capsys, configured):
    (configured / "node.json").write_text(json.dumps(NODE))
    code, out, _ = run(capsys, "host", "check", "--cohort", "device-plugin", "--from", str(configured), "-o", "json")
    ids = {f["id"]: f["status"] for f in json.loads(out)["findings"]}
    assert code == 0 and ids["host-node-labels"] == "pass" and ids["host-sharing-config"] == "pass"


@pytest.mark.parametrize("body, message", [
    pytest.param("{", "is not JSON", id="not-json"),
    pytest.param(json.dumps({"kind": "Pod"}), "is not one Node", id="not-a-node"),
])
def test_check_refuses_a_bad_node_file(capsys, configured, tmp_path, body, message):
    (tmp_path / "node.json").write_text(body)
    code, _, err = run(capsys, "host", "check", "--cohort", "dra", "--from", str(configured), "--node",
                       str(tmp_path / "node.json"))
    assert code == 2 and message in err
