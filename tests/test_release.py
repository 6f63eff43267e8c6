"""Release basics: the Apache-2.0 LICENSE that pyproject names, a CHANGELOG entry for the version, one version
string for the package, the chart and the image, a hash-pinned lock of the runtime dependencies that is current
with pyproject.toml, and `make chart`'s versioned archive that Helm loads, renders and lints."""
from __future__ import annotations

import itertools
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import helm_python
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
LOCK = REPO / "requirements.lock"


def test_license_is_the_full_apache_2_0_text_pyproject_names():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert PROJECT["license"] == "Apache-2.0"
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    for section in ("1. Definitions.", "4. Redistribution.", "9. Accepting Warranty or Additional Liability.",
                    "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."):
        assert section in text
    assert len(text.split()) > 1500  # the whole text, not a pointer to it


def test_changelog_has_an_entry_for_this_version():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(VERSION)}\]", text, re.M), f"no '## [{VERSION}]' section in CHANGELOG.md"


def test_one_version_for_package_chart_and_image():
    chart = yaml.safe_load((REPO / "charts/gpu-admission/Chart.yaml").read_text(encoding="utf-8"))
    label = re.search(r'org\.opencontainers\.image\.version="([^"]+)"', (REPO / "Dockerfile").read_text())
    assert label, "the image carries no org.opencontainers.image.version label"
    assert {"pyproject": VERSION, "chart": chart["version"], "appVersion": chart["appVersion"],
            "image label": label.group(1)} == dict.fromkeys(("pyproject", "chart", "appVersion", "image label"),
                                                            VERSION)


def _lock() -> dict[str, tuple[str, list[str], list[str]]]:
    """name -> (pinned version, hashes, what it is there for: the '# via' lines)."""
    out: dict[str, tuple[str, list[str], list[str]]] = {}
    current = None
    via_block = False
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        pin = re.match(r"^([A-Za-z0-9_.\-]+)==([^ \\]+)", line)
        if pin:
            current = canonicalize_name(pin.group(1))
            out[current] = (pin.group(2), [], [])
            via_block = False
        elif current and (h := re.search(r"--hash=(sha256:[0-9a-f]{64})", line)):
            out[current][1].append(h.group(1))
        elif current and line.strip().startswith("# via"):
            via_block = True
            rest = line.strip()[len("# via"):].strip()
            if rest:
                out[current][2].append(rest)
        elif current and via_block and line.strip().startswith("#"):
            out[current][2].append(line.strip("# ").strip())
    return out


def test_the_lock_pins_every_file_by_hash_and_names_no_local_paths():
    lock = _lock()
    assert lock, "requirements.lock pins nothing"
    assert all(hashes for _, hashes, _ in lock.values()), "a pin without a hash: pip --require-hashes refuses it"
    text = LOCK.read_text(encoding="utf-8")
    assert not re.search(r"^\s*(--find-links|--index-url|--extra-index-url|-f |-e )", text, re.M)
    assert "pip-compile --allow-unsafe --extra=server --generate-hashes" in text  # as `make lock` writes it


def _image_requirements() -> list[Requirement]:
    """What the image runs: the light CLI's dependencies and the server extra (the Dockerfile's lock)."""
    return [Requirement(r) for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["server"]]


def test_the_lock_is_current_with_pyprojects_runtime_dependencies():
    """Offline: the lock's top-level packages are exactly pyproject's `dependencies` and its `server` extra, each
    pinned within its bounds. A dependency added, dropped or re-bounded in pyproject.toml without `make lock`
    fails here."""
    lock = _lock()
    top = {name for name, (_, _, via) in lock.items() if any(v.startswith("gpu-admission") for v in via)}
    wanted = {canonicalize_name(r.name): r for r in _image_requirements()}
    assert top == set(wanted), "run `make lock`: requirements.lock was compiled from other dependencies"
    for name, requirement in wanted.items():
        assert requirement.specifier.contains(lock[name][0], prereleases=True), (
            f"{name}=={lock[name][0]} is outside pyproject's {requirement.specifier}: run `make lock`")


def test_the_lock_holds_everything_its_packages_require_with_the_extras_asked():
    """The lock is installed with `--no-deps`, so nothing is resolved at install time: every requirement of every
    locked package, under the extras pyproject asks for (gunicorn's `gevent` extra brings `packaging`, which
    its gevent worker imports), is itself locked. Read from the installed packages' metadata, offline."""
    from importlib.metadata import requires

    lock = _lock()
    missing: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    queue = [(canonicalize_name(r.name), frozenset(r.extras)) for r in _image_requirements()]
    while queue:
        name, extras = queue.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        if name not in lock:
            missing.add(name)
            continue
        for text in requires(name) or []:
            requirement = Requirement(text)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                queue.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    assert missing == set(), "required by a locked package but not locked: run `make lock`"


def test_the_lock_is_what_the_image_and_the_tests_run(tmp_path):
    """The versions locked are the ones installed here, so the suite tests what the image ships."""
    from importlib.metadata import version

    lock = _lock()
    drift = {name: (pinned, version(name)) for name, (pinned, _, _) in lock.items()
             if name in {canonicalize_name(r.name) for r in _image_requirements()}
             and version(name) != pinned}
    assert drift == {}, "installed runtime dependencies differ from requirements.lock (pinned, installed)"


@pytest.mark.slow
def test_make_chart_packages_a_versioned_archive_helm_loads(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tools.package_chart", str(tmp_path)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    archive = tmp_path / f"gpu-admission-{VERSION}.tgz"
    assert result.stdout.strip() == str(archive) and archive.is_file()
    with tarfile.open(archive) as tar:
        chart_yaml = yaml.safe_load(tar.extractfile("gpu-admission/Chart.yaml").read())
        names = tar.getnames()
    assert (chart_yaml["version"], chart_yaml["appVersion"]) == (VERSION, VERSION)
    for needed in ("values.yaml", "values.schema.json", "templates/deployment.yaml", "templates/webhooks.yaml",
                   "README.md"):
        assert f"gpu-admission/{needed}" in names
    assert not [n for n in names if "/tests/" in n or n.endswith((".pyc", ".orig"))]
    chart = helm_python.Chart.load_archive(archive.read_bytes())  # as `helm install` reads the archive
    assert chart.metadata["version"] == VERSION
    rendered = chart.render({}, name="gpu-admission", namespace="gpu-policy")
    kinds = {doc["kind"] for path, text in rendered.items() if not path.endswith("NOTES.txt")
             for doc in yaml.safe_load_all(text)
             if isinstance(doc, dict) and "kind" in doc}
    assert {"Deployment", "Service", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} <= kinds
    report = helm_python.lint(str(archive), {}, strict=True, namespace="gpu-policy", kube_version="v1.34.0")
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []


# ------------------------------------------------------------------------------------- the CHANGELOG and README

CHANGELOG = REPO / "CHANGELOG.md"
PROJECT_URL = "https://github.com/gpu-admission/gpu-admission"
SUBSECTIONS = ("Breaking", "Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def _changelog() -> list[tuple[str, str | None, list[str]]]:
    """(version or Unreleased, date, its ### headings in order)."""
    out: list[tuple[str, str | None, list[str]]] = []
    for line in CHANGELOG.read_text(encoding="utf-8").splitlines():
        if heading := re.match(r"^## \[([^\]]+)\](?: - (\S+))?\s*$", line):
            out.append((heading.group(1), heading.group(2), []))
        elif line.startswith("## "):
            raise AssertionError(f"a version heading not as '## [x.y.z] - YYYY-MM-DD': {line}")
        elif line.startswith("### ") and out:
            out[-1][2].append(line[4:].strip())
    return out


def test_changelog_versions_are_dated_newest_first_with_breaking_changes_first():
    sections = _changelog()
    assert sections[0][0] == "Unreleased" and sections[0][1] is None
    released = sections[1:]
    assert released, "no released version in CHANGELOG.md"
    for version, date, _ in released:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
        assert date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), f"[{version}] is not dated"
    dates = [date for _, date, _ in released]
    assert dates == sorted(dates, reverse=True)
    for version, _, headings in sections:
        assert len(headings) == len(set(headings)), f"[{version}] repeats a heading: {headings}"
        assert set(headings) <= set(SUBSECTIONS), f"[{version}]: {headings}"
        assert headings == sorted(headings, key=SUBSECTIONS.index), f"[{version}]: Breaking first, then in order"


def test_changelog_links_compare_each_version_with_the_one_before():
    text = CHANGELOG.read_text(encoding="utf-8")
    links = dict(re.findall(r"^\[([^\]]+)\]: (\S+)$", text, re.M))
    versions = [v for v, _, _ in _changelog()]
    assert set(links) == set(versions)
    newest_first = versions[1:]
    assert links["Unreleased"] == f"{PROJECT_URL}/compare/v{newest_first[0]}...HEAD"
    for newer, older in itertools.pairwise(newest_first):
        assert links[newer] == f"{PROJECT_URL}/compare/v{older}...v{newer}"
    assert links[newest_first[-1]] == f"{PROJECT_URL}/releases/tag/v{newest_first[-1]}"


def test_the_readme_names_released_versions_only():
    """pre-commit's `rev`, `pip install gpu-admission==`, `helm install ... --version`: a version the CHANGELOG
    dates, so each names a tag and packages that a release publishes."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    released = {v for v, date, _ in _changelog() if date}
    named = (re.findall(r"^\s+rev: v(\S+)", text, re.M) + re.findall(r"gpu-admission==(\S+)", text)
             + re.findall(r"charts/gpu-admission --version (\S+)", text))
    assert len(named) >= 4
    assert set(named) <= released
    # the install section for users comes before the contributors' sections, after the newcomer's commands
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Install" and headings.index("Development") > headings.index("Deploy to a cluster")
    assert text.splitlines()[2].strip().startswith("make run")


def test_the_chart_names_its_image_and_readme_for_artifact_hub():
    chart = yaml.safe_load((REPO / "charts/gpu-admission/Chart.yaml").read_text(encoding="utf-8"))
    annotations = chart["annotations"]
    (image,) = yaml.safe_load(annotations["artifacthub.io/images"])
    values = yaml.safe_load((REPO / "charts/gpu-admission/values.yaml").read_text(encoding="utf-8"))
    assert image["image"] == f"{values['image']['repository']}:{chart['appVersion']}"
    assert image["platforms"] == ["linux/amd64", "linux/arm64"]
    for link in yaml.safe_load(annotations["artifacthub.io/links"]):
        assert link["url"].startswith(PROJECT_URL + "/")
    readme = (REPO / "charts/gpu-admission/README.md").read_text(encoding="utf-8")
    assert f"oci://ghcr.io/gpu-admission/charts/gpu-admission --version {VERSION}" in readme
    # Artifact Hub shows the README outside the repository: its links are absolute
    assert not [link for link in re.findall(r"\]\(([^)]+)\)", readme) if not link.startswith("https://")]
