"""The pre-commit hook: its manifest is one pre-commit itself accepts, its entry is the installed CLI,
and the command it runs over changed files fails the commit exactly when `check` would deny."""
from __future__ import annotations

import shlex
import tomllib

import pytest
import yaml
from pre_commit.clientlib import load_manifest

from tests.cli.test_ci_formats import ALLOWED_POD, DENIED_POD
from tests.support import REPO, SEED
from webhook.cli.main import build_parser, main


def _hook() -> dict:
    (hook,) = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))  # pre-commit's own validation
    return hook


def test_the_hook_runs_the_installed_cli_on_the_changed_manifests():
    hook = _hook()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    program, *args = shlex.split(hook["entry"])
    assert scripts[program] == "webhook.cli.main:main" and args == ["check"]
    assert hook["language"] == "python" and hook["pass_filenames"] and hook["require_serial"]
    assert set(hook["types_or"]) == {"yaml", "json"}


@pytest.mark.parametrize("files, expected", [
    pytest.param({"pod.yaml": DENIED_POD}, 1, id="denied-pod-fails-the-commit"),
    pytest.param({"pod.yaml": ALLOWED_POD}, 0, id="allowed-pod-passes"),
    # The seed's DRA manifests: claim templates and the pods naming them, resolved in one run.
    pytest.param({"dra-manifests.yaml": (SEED / "dra-manifests.yaml").read_text()}, 0, id="seed-dra-manifests"),
])
def test_the_hook_command_over_files(tmp_path, capsys, files, expected):
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    _, *args = shlex.split(_hook()["entry"])
    assert main([*args, *_hook()["args"], *paths]) == expected
    capsys.readouterr()


def _readme_blocks() -> list[dict]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## In CI\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("\n", 1)[1] for b in section.split("```yaml")[1:]]
    return [yaml.safe_load(b.split("```", 1)[0]) for b in blocks]


def test_the_readme_github_actions_example_runs_the_cli_and_uploads_its_sarif():
    workflow, gitlab, pre_commit_config = _readme_blocks()
    # the GitLab job's command parses, and writes the files its artifacts name
    (command,) = [c for c in gitlab["gpu-policy"]["script"] if c.startswith("gpu-admission ")]
    args = build_parser().parse_args(shlex.split(command)[1:])
    written = {fmt: file for fmt, file in args.output}
    reports = gitlab["gpu-policy"]["artifacts"]["reports"]
    assert written == {"codeclimate": reports["codequality"], "junit": reports["junit"]}
    steps = workflow["jobs"]["check"]["steps"]
    commands = [s["run"] for s in steps if "run" in s and s["run"].startswith("gpu-admission ")]
    assert len(commands) == 2
    parser = build_parser()
    for command in commands:
        argv = shlex.split(command.split(">", 1)[0])[1:]
        args = parser.parse_args(argv)
        assert args.command == "check" and [fmt for fmt, _ in args.output] in (["github"], ["sarif"])
    sarif = next(c for c in commands if "-o sarif" in c)
    written = shlex.split(sarif.split(">", 1)[1])[0]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif")]
    assert upload["with"]["sarif_file"] == written
    assert workflow["permissions"]["security-events"] == "write"
    (hook,) = pre_commit_config["repos"][0]["hooks"]
    assert hook["id"] == _hook()["id"]
    build_parser().parse_args(["check", *hook["args"], "x.yaml"])
