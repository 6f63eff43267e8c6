"""`gpu-admission host inventory|check` in Japanese on the H200 capture (tests/data/fixtures/host-h200): the
locale (LANG=ja_JP.UTF-8, in a process of its own as an operator's terminal runs it), `--lang`, and the policy's
`language`; the verdict, exit code, finding ids and the JSON's `result` are the same in every language."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.host.conftest import HOST_H200
from tests.support import REPO
from webhook.cli.main import main
from webhook.version import REPOSITORY, docs_ref


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _process(argv: list[str], lang: str) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    env["LANG"] = lang
    done = subprocess.run([sys.executable, "-m", "webhook.cli.main", *argv], cwd=REPO, env=env,
                          capture_output=True, timeout=60)
    assert not done.stderr, done.stderr.decode()
    return done.returncode, done.stdout.decode("utf-8").splitlines()


def test_host_check_under_a_japanese_locale(configured):
    argv = ["host", "check", "--cohort", "device-plugin", "--from", str(configured)]
    (configured / "etc/containerd/conf.d/99-nvidia.toml").unlink()  # not fit: a failing finding to read
    code, ja = _process(argv, "ja_JP.UTF-8")
    english_code, en = _process(argv, "C.UTF-8")
    assert code == english_code == 1
    assert ja[0] == (f'host check: コホート "device-plugin" (メカニズム device-plugin、manager standalone)、対象: '
                     f"{configured} に取得した出力")
    assert ja[-1] == "不適合: 不合格 1、不明 0、合格 7"
    assert en[-1] == "not fit: 1 failed, 0 unknown, 7 passed"  # the benign twin: a C locale stays English
    failed = [line for line in ja if line.lstrip().startswith("不合格 ")]
    assert len(failed) == 1 and "containerd に runtime handler \"nvidia\" がありません" in failed[0]
    assert failed[0].endswith(
        f"[host-runtime-handler] {REPOSITORY}/blob/{docs_ref()}/docs/host.md#host-runtime-handler")
    assert len(ja) == len(en)


def test_host_inventory_under_a_japanese_locale():
    code, ja = _process(["host", "inventory", "--from", str(HOST_H200)], "ja_JP.UTF-8")
    assert code == 0
    assert ja[0] == f"ホスト: {HOST_H200} に取得した出力"
    assert ja[1].startswith("ドライバー 580.") and "から読み取り" in ja[1]
    assert "GPU 0: NVIDIA H200, 143771 MiB (140.4 GiB)" in ja
    assert any(line.startswith("NVIDIA H200 (GPU 0) の MIG profile の表") for line in ja)
    assert "        7g.141gb: 1" in ja  # the cohort's table is YAML: the same in every language


@pytest.mark.parametrize(("argv", "environ", "japanese"), [
    pytest.param(["--lang", "ja"], {}, True, id="flag"),
    pytest.param(["--lang", "en"], {"LANG": "ja_JP.UTF-8"}, False, id="flag-over-locale"),
    pytest.param([], {"LC_ALL": "ja_JP.UTF-8"}, True, id="lc-all"),
    pytest.param([], {}, False, id="default-english"),
    pytest.param(["--set", "language=ja"], {}, True, id="policy-language"),
])
def test_who_chooses_the_language_of_host_check(capsys, monkeypatch, configured, argv, environ, japanese):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    code, out, _ = _run(capsys, "host", "check", "--cohort", "dra", "--from", str(configured), *argv)
    assert code == 0
    summary = "適合: 不合格 0、不明 0、合格 9" if japanese else "fit: 0 failed, 0 unknown, 9 passed"
    assert out.splitlines()[-1] == summary


def test_host_check_json_is_the_same_shape_in_japanese(capsys, configured):
    _, en, _ = _run(capsys, "host", "check", "--cohort", "dra", "--from", str(configured), "-o", "json")
    _, ja, _ = _run(capsys, "host", "check", "--cohort", "dra", "--from", str(configured), "-o", "json", "--lang", "ja")
    en, ja = json.loads(en), json.loads(ja)
    assert ja["result"] == en["result"] == "fit"  # a contract: scripts read it
    assert [(f["id"], f["status"], f["subject"], f["docs"]) for f in ja["findings"]] == \
        [(f["id"], f["status"], f["subject"], f["docs"]) for f in en["findings"]]
    assert all(f["message"] != e["message"] for f, e in zip(ja["findings"], en["findings"]) if e["why"])


@pytest.mark.parametrize("lang, first", [("ja", "ホスト: "), ("en", "Host: ")])
def test_host_inventory_lang_flag(capsys, lang, first):
    code, out, _ = _run(capsys, "host", "inventory", "--from", str(HOST_H200), "--lang", lang)
    assert code == 0 and out.startswith(first)
