"""The CLI in Japanese: `--lang`, then the locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG) as gettext
programs read it, then the policy's `language`; the same verdicts, rule ids and paths in every language."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_check import BAD_POD, run
from tests.support import REPO
from webhook.cli.policy_arg import cli_language
from webhook.locale import from_environment
from webhook.version import docs_base_url

DENIAL_JA = ('pod "ai/override": container "trainer" が CUDA_VISIBLE_DEVICES を設定しています '
             '(spec.containers[0].env[0]、リテラル値で)。対処: CUDA_VISIBLE_DEVICES を削除し、'
             'GPU は resources.limits か ResourceClaim で要求してください。理由: 上書きは割り当てた GPU を隠したり'
             '誤って伝えたりし、Pod が要求していない GPU まで見せてしまいます [visible-devices-override] '
             f'{docs_base_url()}/ja/visible-devices-override.md')


@pytest.fixture
def bad_pod(tmp_path) -> Path:
    path = tmp_path / "pod.yaml"
    path.write_text(BAD_POD)
    return path


def test_check_under_a_japanese_locale(bad_pod, tmp_path):
    """What a developer whose terminal runs LANG=ja_JP.UTF-8 sees: the real command, in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    env["LANG"] = "ja_JP.UTF-8"
    done = subprocess.run([sys.executable, "-m", "webhook.cli.main", "check", str(bad_pod)], cwd=REPO, env=env,
                          capture_output=True, timeout=60)
    out = done.stdout.decode("utf-8")
    assert done.returncode == 1, done.stderr.decode()
    lines = out.splitlines()
    assert lines[0] == f'✗ pod "ai/override" ({bad_pod}, document 1): 拒否 [コホート device-plugin、パッチ操作 5 件]'
    assert lines[1] == f"    拒否       {DENIAL_JA}"
    assert lines[-1] == "1 件を確認、拒否 1 件、許可 0 件 (うち指摘あり 0 件)"


@pytest.mark.parametrize(("argv", "environ", "want"), [
    pytest.param(["--lang", "ja"], {}, "ja", id="lang-flag"),
    pytest.param(["--lang", "en"], {"LANG": "ja_JP.UTF-8"}, "en", id="lang-flag-over-locale"),
    pytest.param([], {"LANG": "ja_JP.UTF-8"}, "ja", id="lang"),
    pytest.param([], {"LC_MESSAGES": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"}, "ja", id="lc-messages-over-lang"),
    pytest.param([], {"LC_ALL": "en_US.UTF-8", "LC_MESSAGES": "ja_JP.UTF-8"}, "en", id="lc-all-over-lc-messages"),
    pytest.param([], {"LANGUAGE": "fr:ja", "LANG": "en_US.UTF-8"}, "ja", id="language-list"),
    pytest.param([], {"LANG": "C.UTF-8"}, None, id="c-locale-leaves-it-to-the-policy"),
    pytest.param([], {"LANG": "POSIX"}, None, id="posix"),
    pytest.param([], {"LANG": "fr_FR.UTF-8"}, None, id="a-language-we-do-not-speak"),
    pytest.param([], {"LC_ALL": "", "LANG": "ja_JP.eucJP"}, "ja", id="empty-is-unset"),
    pytest.param([], {}, None, id="nothing-set"),
])
def test_who_chooses_the_language(argv, environ, want):
    from webhook.cli.main import build_parser
    args = build_parser(["check"]).parse_args(["check", *argv, "x.yaml"])
    assert cli_language(args, environ) == want


def test_the_locale_is_read_only_through_the_environment_it_is_given():
    assert from_environment({"LANG": "ja_JP.UTF-8"}) == "ja"
    assert from_environment({}) is None


def test_json_output_has_the_same_shape_in_japanese(capsys, bad_pod):
    _, out_en, _ = run(capsys, "check", "-o", "json", str(bad_pod))
    _, out_ja, _ = run(capsys, "check", "--lang", "ja", "-o", "json", str(bad_pod))
    en, ja = json.loads(out_en), json.loads(out_ja)
    strip = lambda rs: [{**r, "violations": [{k: v for k, v in x.items() if k != "message"} for x in r["violations"]]}
                        for r in rs]
    assert strip(en) == strip(ja)
    assert ja[0]["violations"][0]["message"] == DENIAL_JA


def test_the_policy_language_holds_without_a_flag_or_locale(capsys, bad_pod):
    code, out, _ = run(capsys, "check", "--set", "language=ja", str(bad_pod))
    assert code == 1 and DENIAL_JA in out


def test_a_namespace_override_speaks_its_language(capsys, bad_pod):
    code, out, _ = run(capsys, "check", "--set", "namespaceOverrides=[{namespaces: [ai], language: ja}]", str(bad_pod))
    assert code == 1 and DENIAL_JA in out
    code, out, _ = run(capsys, "check", "--set", "namespaceOverrides=[{namespaces: [other], language: ja}]",
                       str(bad_pod))
    assert code == 1 and DENIAL_JA not in out and "[visible-devices-override]" in out


def test_the_flag_wins_over_a_namespace_override(capsys, bad_pod):
    code, out, _ = run(capsys, "check", "--lang", "en",
                       "--set", "namespaceOverrides=[{namespaces: [ai], language: ja}]", str(bad_pod))
    assert code == 1 and DENIAL_JA not in out and "sets CUDA_VISIBLE_DEVICES" in out


@pytest.mark.parametrize("value", ["fr", "JA", "ja_JP"])
def test_an_unknown_policy_language_is_a_clear_error(capsys, bad_pod, value):
    code, _, err = run(capsys, "check", "--set", f"language={value}", str(bad_pod))
    assert code == 2
    assert "language" in err and "Traceback" not in err


def test_sarif_in_japanese(capsys, bad_pod):
    _, out, _ = run(capsys, "check", "--lang", "ja", "-o", "sarif", str(bad_pod))
    run_ = json.loads(out)["runs"][0]
    rules = {r["id"]: r for r in run_["tool"]["driver"]["rules"]}
    rule = rules["visible-devices-override"]
    assert rule["shortDescription"]["text"] == ("CUDA_VISIBLE_DEVICES、NVIDIA_VISIBLE_DEVICES などの変数を設定する "
                                                "container")
    assert rule["helpUri"].endswith("/docs/rules/ja/visible-devices-override.md")
    assert rule["help"]["text"].endswith("詳しくは " + rule["helpUri"] + " を参照してください")
    assert [r["message"]["text"] for r in run_["results"]] == [DENIAL_JA]


def test_junit_in_japanese(capsys, bad_pod):
    import xml.etree.ElementTree as ET
    _, out, _ = run(capsys, "check", "--lang", "ja", "-o", "junit", str(bad_pod))
    failure = ET.fromstring(out.split("\n", 1)[1]).find(".//failure")
    assert failure.get("message") == DENIAL_JA and failure.get("type") == "visible-devices-override"
