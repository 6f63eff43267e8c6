"""Fixtures of the webhook server's tests: apps under any policy, a pytest-flask client, and the
apiserver-faithful client on top of it."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from webhook.app import create_app
from webhook.config.load import DEFAULT_PATH
from webhook.rules import DEFAULT_ACTIONS, VALIDATIONS, Action
from webhook.settings import Settings

from .apiserver import ApiServer

# Policies by name: the shipped default with a few keys replaced. Every mode of docs/rules/README.md, Modes.
# Every rule that denies by default, set to warn (derived from the rule table: a new rule is in it).
ALL_RULES_WARN = "rules: {" + ", ".join(f"{r.value}: warn" for r in VALIDATIONS
                                        if DEFAULT_ACTIONS[r] is Action.ENFORCE) + "}"
MODES = {
    "enforce": "",
    "warn": ALL_RULES_WARN,
    "audit": "mode: audit",
    "dry-run": "mode: dry-run",
}


def policy_text(overrides: str = "") -> str:
    """The shipped default policy with top-level keys replaced by `overrides` (YAML)."""
    policy = yaml.safe_load(DEFAULT_PATH.read_text())
    policy.update(yaml.safe_load(textwrap.dedent(overrides)) or {})
    return yaml.safe_dump(policy, sort_keys=False)


class Volume:
    """A directory laid out as the kubelet lays a ConfigMap or Secret volume, and updated as it updates
    one: the files are links through `..data`, which is swapped to a new directory in one rename."""

    def __init__(self, root: Path, files: dict[str, str | bytes]):
        self.root = root
        self.root.mkdir()
        self.version = 0
        self.update(files)
        for name in files:
            (root / name).symlink_to(f"..data/{name}")

    def update(self, files: dict[str, str | bytes]) -> None:
        self.version += 1
        version = self.root / f"..2026_11_30_{self.version:02d}"
        version.mkdir()
        for name, data in files.items():
            (version / name).write_bytes(data.encode() if isinstance(data, str) else data)
        link = self.root / "..data_tmp"
        link.symlink_to(version.name)
        os.replace(link, self.root / "..data")  # readers see the old files or the new, never a mix


def flask_transport(client):
    def post(path: str, body: bytes, headers: dict):
        response = client.post(path, data=body, headers=headers)
        return response.status_code, dict(response.headers), response.get_data()

    return post


@pytest.fixture(autouse=True)
def _decision_logs(caplog):
    """Decision lines are INFO: capture them, the tests read their fields."""
    caplog.set_level("INFO", logger="gpu_admission")


@pytest.fixture
def make_app(tmp_path):
    """make_app(overrides="", **settings) -> a Flask app serving the default policy with `overrides`."""
    counter = iter(range(1000))

    def make(overrides: str = "", **settings):
        path = tmp_path / f"policy-{next(counter)}.yaml"
        path.write_text(policy_text(overrides))
        return create_app(Settings(policy_path=path, **settings))

    return make


@pytest.fixture
def app(make_app):
    """The app under the shipped default policy (pytest-flask builds `client` from it)."""
    return make_app()


@pytest.fixture
def apiserver(client):
    return ApiServer(flask_transport(client))


@pytest.fixture
def apiserver_for(make_app):
    """apiserver_for(overrides) -> an ApiServer calling a fresh app with that policy."""

    def make(overrides: str = "", **settings):
        return ApiServer(flask_transport(make_app(overrides, **settings).test_client()))

    return make
