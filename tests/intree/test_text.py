"""webhook/policy/cel/text.py: a catalogue text written as a CEL string expression says, once the apiserver
evaluates it, what the engine renders (webhook/policy/messages.py), in every language: for every message of
the catalogue with each argument computed by CEL, and for the pieces the exported rules use (choices,
nested texts, braces in a text without arguments)."""
from __future__ import annotations

import dataclasses
import string

import pytest
from babel.messages.pofile import read_po

from tests.intree.vap import value
from tests.support import REPO
from webhook.config import default_policy
from webhook.config.model import NamespaceOverride
from webhook.locale import LANGUAGES
from webhook.policy.cel import lit
from webhook.policy.cel.text import Cel, If, expression, line, msg
from webhook.policy.messages import LINE, T, names, render
from webhook.rules import Rule

with (REPO / "webhook" / "locale" / "gpu_admission.pot").open("rb") as fp:
    MSGIDS = sorted(m.id for m in read_po(fp) if m.id and isinstance(m.id, str))
PLACEHOLDERS = {m: sorted({f for _, f, _, _ in string.Formatter().parse(m) if f}) for m in MSGIDS}


def test_the_catalogue_has_texts_with_and_without_arguments():
    assert sum(1 for f in PLACEHOLDERS.values() if f) >= 100 and sum(1 for f in PLACEHOLDERS.values() if not f) >= 50


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_catalogue_text_with_computed_arguments_reads_as_the_engine_renders_it(language):
    """Each argument is an object's value (a CEL field read), with characters CEL and JSON escape."""
    data = {f"a{i}": f'"{name}" \\ ü{i}' for i, name in enumerate(sorted({f for fs in PLACEHOLDERS.values()
                                                                          for f in fs}))}
    keys = {v.split('"')[1]: k for k, v in data.items()}
    for msgid, fields in PLACEHOLDERS.items():
        args = {f: data[keys[f]] for f in fields}
        cel = expression(msg(msgid, **{f: Cel(f"object.{keys[f]}") for f in fields}), language)
        assert value(cel, {"object": data}) == render(T(msgid, **args), language), msgid


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("piece, obj, text", [
    pytest.param(msg("{who} sets {setting} ({path})", who=T("the pod"), setting="runAsUser: 0",
                     path=Cel("object.path")), {"path": "spec.x"},
                 T("{who} sets {setting} ({path})", who=T("the pod"), setting="runAsUser: 0", path="spec.x"),
                 id="texts-and-values-known-now"),
    pytest.param(msg('{word} "{name}"', word=If("object.sidecar", T("sidecar container"), T("init container")),
                     name=Cel("object.name")), {"sidecar": True, "name": "proxy"},
                 T('{word} "{name}"', word=T("sidecar container"), name="proxy"), id="a-choice-taken"),
    pytest.param(msg('{word} "{name}"', word=If("object.sidecar", T("sidecar container"), T("init container")),
                     name=Cel("object.name")), {"sidecar": False, "name": "setup"},
                 T('{word} "{name}"', word=T("init container"), name="setup"), id="a-choice-not-taken"),
    pytest.param(msg("the pod requests {amount} {resource} in all ({path}, init containers and sidecars counted "
                     "as the scheduler counts them) on cohort \"{cohort}\"", amount=3, resource="nvidia.com/gpu",
                     path=Cel("object.path"), cohort=Cel("object.cohort")), {"path": "spec", "cohort": "dp"},
                 T("the pod requests {amount} {resource} in all ({path}, init containers and sidecars counted "
                   "as the scheduler counts them) on cohort \"{cohort}\"", amount=3, resource="nvidia.com/gpu",
                   path="spec", cohort="dp"), id="a-number"),
    pytest.param(msg("remove {variables} from the {kind}, or stop importing it with envFrom",
                     variables=names(["A", "B", "C"]), kind=Cel("object.kind")), {"kind": "Secret"},
                 T("remove {variables} from the {kind}, or stop importing it with envFrom",
                   variables=names(["A", "B", "C"]), kind="Secret"), id="a-list-in-the-language"),
    pytest.param(msg("{who} sets {setting} ({path})", who=msg('{word} "{name}"', word=T("container"),
                                                               name=Cel("object.name")),
                     setting=If("object.name == 'a'", "x", ""), path="p"), {"name": "b"},
                 T("{who} sets {setting} ({path})", who=T('{word} "{name}"', word=T("container"), name="b"),
                   setting="", path="p"), id="nested-and-an-empty-choice"),
    pytest.param(T("{not} an argument"), {}, T("{not} an argument"), id="braces-of-a-text-without-arguments"),
])
def test_pieces_read_as_the_engine_renders_them(piece, obj, text, language):
    assert value(expression(piece, language), {"object": obj}) == render(text, language)


def test_a_placeholder_without_its_argument_is_refused():
    with pytest.raises(ValueError, match="placeholder"):
        expression(msg("{who} sets {setting} ({path})", who="x", setting="y"), "en")
    with pytest.raises(ValueError, match="placeholder"):
        expression(msg("{value!r} and {width:>4}", value="x", width="y"), "en")


def _line(policy, namespace: str) -> str:
    return value(line(policy, Rule.RUN_AS_ROOT, msg("{who} sets {setting} ({path})", who=T("the pod"),
                                                     setting="runAsUser: 0", path=Cel("object.path")),
                      T("remove runAsNonRoot: false"), T("set it to false")),
                 {"object": {"path": "spec.securityContext.runAsUser"}, "request": {"namespace": namespace},
                  "variables": {"subject": 'pod "x/y"'}})


def _engine(policy, language: str) -> str:
    what = T("{who} sets {setting} ({path})", who=T("the pod"), setting="runAsUser: 0",
             path="spec.securityContext.runAsUser")
    return render(T(LINE, subject='pod "x/y"', what=what, why=T("remove runAsNonRoot: false"),
                    fix=T("set it to false"), rule="run-as-root", docs=policy.docs_url(Rule.RUN_AS_ROOT, language)),
                  language)


def test_the_line_is_in_the_namespaces_language_and_one_language_costs_one_line():
    english = default_policy()
    assert "request.namespace" not in line(english, Rule.RUN_AS_ROOT, "w", "y", "f")
    assert _line(english, "ml") == _engine(english, "en")
    japanese = dataclasses.replace(english, language="ja")
    assert "request.namespace" not in line(japanese, Rule.RUN_AS_ROOT, "w", "y", "f")
    assert _line(japanese, "ml") == _engine(japanese, "ja") != _engine(english, "en")
    mixed = dataclasses.replace(english, namespace_overrides=(
        NamespaceOverride(namespaces=("ml-ja", "ai-ja"), language="ja"), NamespaceOverride(namespaces=("ml",))))
    assert line(mixed, Rule.RUN_AS_ROOT, "w", "y", "f").startswith('request.namespace in ["ai-ja", "ml-ja"] ? ')
    assert _line(mixed, "ml-ja") == _line(mixed, "ai-ja") == _engine(mixed, "ja")
    assert _line(mixed, "ml") == _line(mixed, "default") == _engine(mixed, "en")
    # an override back to the policy's language, after one that set another, holds
    back = dataclasses.replace(japanese, namespace_overrides=(NamespaceOverride(namespaces=("ml",), language="en"),))
    assert _line(back, "ml") == _engine(back, "en") and _line(back, "ai") == _engine(back, "ja")


def test_literals_are_merged_and_escaped():
    out = expression(msg('{a} "b" {c}', a="x\\", c=Cel("object.c")), "en")
    assert out == lit('x\\ "b" ') + " + object.c"
