"""The message catalogues (gettext `.mo`, compiled by Babel from `ja/LC_MESSAGES/gpu_admission.po` by
`make messages`) and the choice of a language from the environment, as gettext programs make it.

English is the catalogue's source language: its msgids are the English messages, so English needs no
catalogue. The others are read once, when this module is imported, so that no decision reads a file."""
from __future__ import annotations

import gettext
from collections.abc import Callable, Mapping
from importlib import resources

DOMAIN = "gpu_admission"
DEFAULT = "en"
LANGUAGES = ("en", "ja")


def _load(language: str) -> gettext.GNUTranslations:
    path = resources.files(__name__).joinpath(language, "LC_MESSAGES", f"{DOMAIN}.mo")
    with path.open("rb") as fp:
        return gettext.GNUTranslations(fp)


_CATALOGUES: Mapping[str, gettext.NullTranslations] = {"en": gettext.NullTranslations(),
                                                       **{lang: _load(lang) for lang in LANGUAGES if lang != "en"}}


def gettext_for(language: str) -> Callable[[str], str]:
    """The `gettext` of a language this project speaks (an unknown one gets English)."""
    return (_CATALOGUES.get(language) or _CATALOGUES[DEFAULT]).gettext


def language_of(locale: str) -> str | None:
    """The project's language of a POSIX locale name (`ja_JP.UTF-8` -> "ja"); None for C, POSIX and
    languages it does not speak."""
    name = locale.split(".")[0].split("@")[0]
    language = name.split("_")[0].split("-")[0].lower()
    return language if language in LANGUAGES else None


def from_environment(environ: Mapping[str, str]) -> str | None:
    """The language the environment asks for, read as Python's gettext (and GNU gettext) does: the first of
    LANGUAGE, LC_ALL, LC_MESSAGES, LANG that is set and not empty decides; LANGUAGE may list several
    (`ja:en`), the first this project speaks wins. None when that variable names no language of ours (C,
    POSIX, C.UTF-8): then the policy's `language` holds."""
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(variable)
        if value:
            for locale in value.split(":"):
                if (language := language_of(locale)) is not None:
                    return language
            return None
    return None
