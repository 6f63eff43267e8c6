"""The message catalogues (webhook/locale): every msgid the code marks is in the template and translated,
each translation formats with the same named arguments as its English, and the shipped .mo is the
compilation of the .po (so a fresh clone runs the committed catalogue, and `make messages` keeps them one)."""
from __future__ import annotations

import io
import string
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po

from webhook.locale import DOMAIN, LANGUAGES, gettext_for
from webhook.policy.messages import T, Text, names, render

REPO = Path(__file__).resolve().parents[2]
LOCALE = REPO / "webhook" / "locale"
TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]
KEYWORDS = {"T": None, "N_": None, "Definition": (2,)}  # as `make messages` extracts (-k T -k N_ -k Definition:2)


def _source_msgids() -> set[str]:
    found = extract_from_dir(str(REPO / "webhook"), method_map=[("**.py", "python")], keywords=KEYWORDS,
                             comment_tags=(), strip_comment_tags=True)
    return {message for _file, _line, message, _comments, _context in found if message}


SOURCE = _source_msgids()


def _catalogue(language: str):
    with open(LOCALE / language / "LC_MESSAGES" / f"{DOMAIN}.po", "rb") as fp:
        return read_po(fp, locale=language)


def _fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def test_the_template_holds_every_marked_msgid():
    with open(LOCALE / f"{DOMAIN}.pot", "rb") as fp:
        pot = {m.id for m in read_po(fp) if m.id}
    assert SOURCE - pot == set(), "msgids missing from the .pot: run `make messages`"
    assert pot - SOURCE == set(), "msgids no code marks any more: run `make messages`"


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_msgid_is_translated(language):
    catalogue = _catalogue(language)
    untranslated = sorted(m for m in SOURCE if not (e := catalogue.get(m)) or not e.string or e.fuzzy)
    assert untranslated == [], f"untranslated in {language} (run `make messages`, then translate):\n" + \
        "\n".join(untranslated)


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_translation_takes_the_same_arguments(language):
    wrong = [f"{m.id!r}: {sorted(_fields(m.id))} != {sorted(_fields(m.string))}"
             for m in _catalogue(language) if m.id and m.string and _fields(m.id) != _fields(m.string)]
    assert wrong == []


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("msgid", sorted(SOURCE))
def test_every_message_formats_with_its_arguments(language, msgid):
    args = {field: f"<{field}>" for field in _fields(msgid)}
    text = render(T(msgid, **args), language)
    for value in args.values():
        assert value in text, f"{language}: {msgid!r} drops {value}"
    if language != "en" and msgid not in UNCHANGED:
        assert text != msgid.format(**args), f"{language}: {msgid!r} reads as the English"


# Identical in Japanese: a format of names only, or words the glossary keeps in English.
UNCHANGED = {'{word} "{name}"', 'claim "{name}"', 'template "{name}"', "MPS", "container", "init container",
             "sidecar container", "ephemeral container", 'claim "{claim}" (DRA, {ref})', "NAMESPACE", "audit",
             "dry-run", "off", "{mark} {subject} ({where}): {state}", "dry-run: {message}",
             "MIG: {capable}", "NVIDIA Container Toolkit {version}", "compute mode (GPU {gpus})",
             "migStrategy {strategy}",
             "{mib} MiB ({gib} GiB)", "{text}: {why}"}


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_shipped_mo_is_the_compiled_po(language):
    """Byte for byte: `make messages` compiles with the same Babel, from a .po whose date it fixes."""
    compiled = io.BytesIO()
    write_mo(compiled, _catalogue(language))
    shipped = (LOCALE / language / "LC_MESSAGES" / f"{DOMAIN}.mo").read_bytes()
    assert shipped == compiled.getvalue(), "the .mo is stale: run `make messages`"
    mo = read_mo(io.BytesIO(shipped))
    assert {m.id: m.string for m in mo if m.id} == {m.id: m.string for m in _catalogue(language) if m.id}


@pytest.mark.parametrize(("language", "values", "want"), [
    pytest.param("en", ["a"], "a", id="en-one"),
    pytest.param("en", ["a", "b"], "a and b", id="en-two"),
    pytest.param("en", ["a", "b", "c"], "a, b and c", id="en-three"),
    pytest.param("ja", ["a"], "a", id="ja-one"),
    pytest.param("ja", ["a", "b"], "a、b", id="ja-two"),
    pytest.param("ja", ["a", "b", "c"], "a、b、c", id="ja-three"),
])
def test_lists_read_in_the_language(language, values, want):
    assert render(names(values), language) == want


def test_an_unknown_language_is_english():
    assert gettext_for("fr")("not found") == "not found"
    assert gettext_for("ja")("not found") == "見つかりません"


def test_arguments_are_never_translated():
    """A name that happens to be a msgid stays the name: only templates go through the catalogue."""
    assert render(T('claim "{name}" ({reason})', name="not found", reason=Text("not found")), "ja") == \
        'claim "not found" (見つかりません)'
