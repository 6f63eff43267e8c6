"""Record what a real kube-apiserver says about MutatingAdmissionPolicy, for tests/intree/test_served.py:

    E2E_KUBERNETES=1.34 python tests/e2e/record_discovery.py tests/intree/discovery on,api-only,off
    E2E_KUBERNETES=1.37 python tests/e2e/record_discovery.py tests/intree/discovery on

Starts the e2e control plane (tests/e2e/cluster.py) with each `mutating_policy` in turn (restarting the
apiserver between them) and writes, per variant, <1.MINOR>-<variant>.json (GET /version, GET
/apis/admissionregistration.k8s.io and GET /apis/<group version> for each version it lists) and
<1.MINOR>-<variant>.features.txt (the kubernetes_feature_enabled lines of GET /metrics).
tests/e2e/test_intree_served.py checks the session cluster's live answers against these files."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path, as pytest has it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e import cluster as clusterlib

GROUP = "admissionregistration.k8s.io"


def raw(running: clusterlib.Cluster, path: str) -> str:
    return subprocess.run([str(running.kubectl), "--kubeconfig", str(running.kubeconfig), "get", "--raw", path],
                          capture_output=True, text=True, check=True).stdout


def discovery(running: clusterlib.Cluster) -> dict:
    group = json.loads(raw(running, f"/apis/{GROUP}"))
    return {"version": json.loads(raw(running, "/version")), "group": group,
            "resources": {v["groupVersion"]: json.loads(raw(running, f"/apis/{v['groupVersion']}"))
                          for v in group.get("versions") or []}}


def features(running: clusterlib.Cluster) -> str:
    return "".join(line + "\n" for line in raw(running, "/metrics").splitlines()
                   if line.startswith("kubernetes_feature_enabled"))


def main(argv: list[str]) -> int:
    out, variants = Path(argv[0]), argv[1].split(",")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, clusterlib.Cluster(Path(tmp), mutating_policy=variants[0]) as running:
        minor = ".".join(running.chain.version.removeprefix("v").split(".")[:2])
        for i, variant in enumerate(variants):
            if i:
                running.mutating_policy = variant
                running.restart_apiserver()
            (out / f"{minor}-{variant}.json").write_text(json.dumps(discovery(running), indent=1) + "\n")
            (out / f"{minor}-{variant}.features.txt").write_text(features(running))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
