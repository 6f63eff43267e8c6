"""The top conftest: the suites' command-line options (pytest reads `pytest_addoption` from here), and a
locale-free environment for every test."""
import pytest

LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden message files under tests/golden/ from the current output")


@pytest.fixture(autouse=True)
def _no_locale(monkeypatch):
    """The CLI reads the language from the locale (as gettext programs do): a developer's LANG=ja_JP.UTF-8
    must not turn the English expectations into Japanese ones. A test that wants a locale sets it."""
    for variable in LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(autouse=True)
def _no_ci(monkeypatch):
    """`check`'s text output lists only failures where CI is set, and `-o github` writes the step summary where
    GITHUB_STEP_SUMMARY is: the suite run in a pipeline must expect what it expects on a terminal. A test that
    wants a pipeline sets them."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
