"""The image as `make image` builds it from the Dockerfile (dist/gpu-admission-<version>.oci.tar), read and run as a
node runs it: the reference containerd and the kubelet name it by, its config (user 65532, the entry point, the
labels the chart's version matches), a filesystem with no pip and no compiler, and its entry point serving /readyz
under runc with the chart's pod settings (read-only root filesystem, the chart's /tmp emptyDir, its policy and
certificate volumes, all capabilities dropped, UID/GID 65532), on the host's network bound to loopback."""
from __future__ import annotations

import base64
import http.client
import json
import os
import re
import socket
import ssl
import stat
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

from tests import dockerfile
from tests.chart.conftest import CHART, rendered_set
from tests.support import REPO, free_port
from tests.test_release import VERSION
from tools import sbom

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # `make e2e`, after `make image`

REFERENCE = f"docker.io/library/gpu-admission:{VERSION}"
ARCHIVE = REPO / "dist" / f"gpu-admission-{VERSION}.oci.tar"
# how long the entry point may take to answer /readyz (tests/release raises it for the arm64 image under emulation)
READY_TIMEOUT = 90.0
COMPILERS = re.compile(r"^(?:[\w-]+-linux-gnu-)?(?:gcc|cc|c\+\+|g\+\+|clang|tcc)(?:-[\d.]+)?$")


@pytest.fixture(scope="session")
def archive() -> Path:
    """`make image`: nothing to do when the archive is newer than everything it is built from."""
    done = subprocess.run(["make", "--no-print-directory", "image"], cwd=REPO, capture_output=True, text=True,
                          timeout=3000, check=False)
    assert done.returncode == 0, f"make image failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip().splitlines()[-1] == str(ARCHIVE.relative_to(REPO))  # make image prints its path
    return ARCHIVE


@pytest.fixture(scope="module")
def layout(archive, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("oci")
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="tar")
    return out


def _blob(layout: Path, digest: str) -> dict:
    return json.loads((layout / "blobs" / digest.replace(":", "/")).read_text())


@pytest.fixture(scope="module")
def image(layout) -> dict:
    (manifest,) = json.loads((layout / "index.json").read_text())["manifests"]
    return {"reference": manifest.get("annotations", {}).get("org.opencontainers.image.ref.name"),
            "manifest": (body := _blob(layout, manifest["digest"])), "config": _blob(layout, body["config"]["digest"])}


@pytest.fixture(scope="module")
def bundle(layout, tmp_path_factory) -> Path:
    """The image unpacked into an OCI runtime bundle (umoci: its layers in order, its config as config.json)."""
    out = tmp_path_factory.mktemp("bundle") / "bundle"
    done = subprocess.run(["umoci", "unpack", "--image", f"{layout}:{REFERENCE}", str(out)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return out


def test_the_archive_holds_one_image_under_the_name_the_kubelet_asks_for(image):
    # `ctr -n k8s.io images import` keeps this name; a pod's `image: gpu-admission:<version>` normalises to it
    assert image["reference"] == REFERENCE
    assert (image["config"]["os"], image["config"]["architecture"]) == ("linux", "amd64")


def test_runs_the_dockerfile_s_entry_point_as_the_chart_s_user(image):
    config = image["config"]["config"]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert config["User"] == f"{values['securityContext']['runAsUser']}:{values['securityContext']['runAsGroup']}"
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == dockerfile.entrypoint() and not config.get("Cmd")
    assert config["ExposedPorts"] == {"8443/tcp": {}}
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"] and config["WorkingDir"] == "/"


def test_labels_carry_the_version_of_the_package_and_the_chart(image):
    labels = image["config"]["config"]["Labels"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert labels["org.opencontainers.image.version"] == VERSION == chart["version"] == chart["appVersion"]
    expected = {k: dockerfile.label(k) for k in labels}
    assert labels == expected  # the Dockerfile's labels, and no builder's own
    assert {"org.opencontainers.image.title", "org.opencontainers.image.source",
            "org.opencontainers.image.licenses"} <= set(labels)


def _tree(rootfs: Path):
    for directory, dirs, files in os.walk(rootfs):
        for name in dirs + files:
            yield Path(directory, name)


def test_no_pip_no_compiler_no_build_leftovers(bundle):
    rootfs = bundle / "rootfs"
    paths = [p.relative_to(rootfs) for p in _tree(rootfs)]
    pip = [p for p in paths if p.name in ("pip", "pip3", "pip3.11") or (p.name.startswith("pip-")
                                                                        and p.suffix in (".whl", ".dist-info"))]
    assert pip == []
    # nor setuptools, which `python3 -m venv` would seed (66.1.1 on 3.11: CVE-2024-6345); the virtualenv's
    # distributions are exactly the lock's and the project
    site = rootfs / "opt/gpu-admission/lib/python3.11/site-packages"
    # (a package's top level only: cffi, for one, ships a setuptools_ext module of its own)
    assert [p for p in paths if p.parent.name in ("site-packages", "dist-packages")
            and p.name.startswith(("setuptools", "pkg_resources", "_distutils_hack", "distutils-precedence"))] == []
    installed = {canonicalize_name(d.name.removesuffix(".dist-info").rsplit("-", 1)[0])
                 for d in site.glob("*.dist-info")}
    assert installed == set(sbom.lock_pins(REPO / "requirements.lock")) | {"gpu-admission"}
    # a compiler driver or its passes, as a program (directories such as usr/share/gcc hold runtime-library data)
    assert [p for p in paths if (COMPILERS.match(p.name) or p.name in ("cc1", "cc1plus", "collect2"))
            and not stat.S_ISDIR((rootfs / p).lstat().st_mode)] == []
    assert [p for p in paths if p.suffix in (".whl", ".deb")] == []
    lists = rootfs / "var/lib/apt/lists"
    assert not [p for p in lists.iterdir() if p.is_file() and p.name != "lock"] if lists.exists() else True
    for leftover in ("etc/pip.conf", "wheels", "src", "root/.cache/pip"):
        assert not (rootfs / leftover).exists(), leftover
    assert list((rootfs / "mnt").iterdir()) == []  # where the build mounted the wheelhouse
    # what is there: the virtualenv on Debian's interpreter, byte-compiled for a read-only root
    python = rootfs / "opt/gpu-admission/bin/python3"
    assert os.readlink(python) == "/usr/bin/python3" and (rootfs / "usr/bin/python3.11").is_file()
    assert list((rootfs / "opt/gpu-admission/lib/python3.11/site-packages/webhook/__pycache__").glob("app.*.pyc"))
    # every .pyc records its source's hash, unchecked (flags 0b01), none the time of the build (flags 0): two builds
    # of the same tree write the same bytes
    flags = {}
    for pyc in (rootfs / "opt/gpu-admission").rglob("*.pyc"):
        with open(pyc, "rb") as handle:
            flags.setdefault(int.from_bytes(handle.read(8)[4:8], "little"), []).append(pyc.relative_to(rootfs))
    assert set(flags) == {1}, {k: v[:3] for k, v in flags.items() if k != 1}


def _pod_files(rendered, base: Path) -> dict[str, Path]:
    """The Deployment's volumes as a kubelet fills them: the ConfigMap's and the Secret's keys as files (the Secret's
    with its defaultMode, group-owned by the pod's fsGroup); the emptyDir comes as a tmpfs."""
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    group = pod["securityContext"]["fsGroup"]
    out = {}
    for volume in pod["volumes"]:
        if "configMap" in volume:
            data = {k: v.encode() for k, v in rendered.one("ConfigMap")["data"].items()}
            mode = 0o644
        elif "secret" in volume:
            data = {k: base64.b64decode(v) for k, v in rendered.one("Secret")["data"].items()}
            mode = volume["secret"]["defaultMode"]
        else:
            continue
        directory = base / volume["name"]
        directory.mkdir()
        for key, content in data.items():
            (directory / key).write_bytes(content)
            os.chown(directory / key, 0, group)
            (directory / key).chmod(mode)
        out[volume["name"]] = directory
    return out


def _https(port: int, host: str, ca: str, path: str) -> tuple[int, bytes]:
    """GET over TLS to loopback, the certificate verified for the Service's name as the apiserver verifies it."""
    context = ssl.create_default_context(cadata=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        connection = http.client.HTTPSConnection(host, port, context=context, timeout=5)
        connection.sock = context.wrap_socket(sock, server_hostname=host)
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()


def _runc(state: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["runc", "--root", str(state), *args], capture_output=True, text=True, timeout=60,
                          check=False)
    assert not check or done.returncode == 0, f"runc {args[0]}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def container(bundle, tmp_path_factory):
    """The image's entry point under runc, configured as the chart's Deployment runs it."""
    base = tmp_path_factory.mktemp("pod")
    rendered = rendered_set("default")
    deployment = rendered.one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (spec,) = pod["containers"]
    files = _pod_files(rendered, base)
    config = json.loads((bundle / "config.json").read_text())
    port, health = free_port(), free_port()
    env = {e["name"]: e["value"] for e in spec["env"]}
    # the host's network (no pod network here): the pod's two listeners on free loopback ports
    env.update({"GPU_ADMISSION_BIND": f"127.0.0.1:{port}", "GPU_ADMISSION_HEALTH_BIND": f"127.0.0.1:{health}",
                "GPU_ADMISSION_WORKERS": "1"})
    process = config["process"]
    process["env"] = [*process["env"], *(f"{k}={v}" for k, v in env.items())]
    process["terminal"] = False
    process.pop("rlimits", None)  # the runtime's own, as a kubelet leaves them
    security = spec["securityContext"]
    assert security["capabilities"]["drop"] == ["ALL"]
    process["capabilities"] = {}
    process["noNewPrivileges"] = not security["allowPrivilegeEscalation"]
    process["user"] = {"uid": pod["securityContext"]["runAsUser"], "gid": pod["securityContext"]["runAsGroup"],
                       "additionalGids": [pod["securityContext"]["fsGroup"]]}
    config["root"]["readonly"] = security["readOnlyRootFilesystem"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in spec["volumeMounts"]:
        if "emptyDir" in volumes[mount["name"]]:
            size = volumes[mount["name"]]["emptyDir"]["sizeLimit"]
            config["mounts"].append({"destination": mount["mountPath"], "type": "tmpfs", "source": "tmpfs",
                                     "options": ["nosuid", "nodev", "mode=1777", f"size={size[:-2]}m"]})
        else:
            config["mounts"].append({"destination": mount["mountPath"], "type": "bind",
                                     "source": str(files[mount["name"]]),
                                     "options": ["rbind", "ro" if mount.get("readOnly") else "rw"]})
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"] if n["type"] != "network"]
    (bundle / "config.json").write_text(json.dumps(config))
    state = base / "runc"
    name = f"gpu-admission-test-{os.getpid()}"
    log = base / "container.log"
    with log.open("wb") as out:
        runner = subprocess.Popen(["runc", "--root", str(state), "run", "--bundle", str(bundle), name],
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    host = f"{rendered.one('Service')['metadata']['name']}.{deployment['metadata']['namespace']}.svc"
    ca = base64.b64decode(rendered.one("ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"])
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                if _https(port, host, ca.decode(), "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            assert runner.poll() is None, f"the container exited ({runner.returncode}): {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"/readyz did not answer: {log.read_text()[-3000:]}"
            time.sleep(0.3)
        yield {"https": lambda path: _https(port, host, ca.decode(), path), "health": health, "state": state,
               "name": name, "spec": spec}
    finally:
        _runc(state, "kill", name, "TERM", check=False)
        try:
            runner.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _runc(state, "kill", name, "KILL", check=False)
            runner.wait(timeout=30)
        _runc(state, "delete", "--force", name, check=False)


def test_the_entry_point_serves_readyz_over_https_and_on_the_probe_port(container):
    status, body = container["https"]("/readyz")
    ready = json.loads(body)
    assert status == 200 and ready["ready"] is True and ready["certificates"]["loaded"] is True
    assert ready["policy"]["source"] == "/etc/gpu-admission/policy/policy.yaml"
    connection = http.client.HTTPConnection("127.0.0.1", container["health"], timeout=5)
    connection.request("GET", container["spec"]["readinessProbe"]["httpGet"]["path"])
    assert connection.getresponse().status == 200


def test_every_process_runs_as_65532_without_capabilities(container):
    state = json.loads(_runc(container["state"], "state", container["name"]).stdout)
    status = Path(f"/proc/{state['pid']}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines())
    assert fields["Uid"].split() == ["65532"] * 4 and fields["Gid"].split() == ["65532"] * 4
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0


@pytest.mark.parametrize(("path", "writable"), [pytest.param("/probe", False, id="root"),
                                                 pytest.param("/opt/gpu-admission/probe", False, id="virtualenv"),
                                                 pytest.param("/tmp/probe", True, id="tmp-emptydir")])
def test_only_tmp_is_writable(container, path, writable):
    done = _runc(container["state"], "exec", container["name"], "sh", "-c", f"echo x > {path}", check=False)
    assert (done.returncode == 0) is writable, done.stderr
    if not writable:
        assert "Read-only file system" in done.stderr


def _megabytes(text: str, what: str) -> float:
    found = re.search(rf"([\d.]+) MB {what}", text)
    assert found, f"docs/deployment.md states no '<n> MB {what}'"
    return float(found.group(1))


def test_the_docs_report_the_image_s_size(archive, bundle):
    """docs/deployment.md states the sizes measured here, within 10% (Debian's updates move them a little)."""
    text = (REPO / "docs" / "deployment.md").read_text()
    compressed = archive.stat().st_size / 1e6
    files = {(st.st_dev, st.st_ino): st.st_size for st in map(os.lstat, _tree(bundle / "rootfs"))
             if stat.S_ISREG(st.st_mode)}  # a hard-linked file once, as du counts it
    unpacked = sum(files.values()) / 1e6
    documented = _megabytes(text, "as an OCI archive"), _megabytes(text, "unpacked")
    assert abs(documented[0] - compressed) <= 0.1 * compressed, (documented, round(compressed), round(unpacked))
    assert abs(documented[1] - unpacked) <= 0.1 * unpacked, (documented, round(compressed), round(unpacked))
