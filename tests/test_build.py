"""The two builds `make test` runs the suite against: the sources, and the package as the container image
builds it, whose request path setup.py compiles with mypyc (the modules [tool.gpu-admission] lists)."""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from tests.support import BUILD, REPO


def _setup_script():
    spec = importlib.util.spec_from_file_location("gpu_admission_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCES = _setup_script().compiled_sources()


def _module(source: str) -> str:
    return source.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_the_request_path_is_listed():
    # What every admission request runs: the WSGI layer, parsing, dispatch, handlers, the engine and every rule.
    for source in ("webhook/admission.py", "webhook/review.py", "webhook/dispatch.py", "webhook/handlers/__init__.py",
                   "webhook/policy/engine.py", "webhook/policy/checks/run_as_root.py", "webhook/objects/podspec.py"):
        assert source in SOURCES
    assert all((REPO / s).is_file() for s in SOURCES)


@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_the_suite_imports_the_build_it_was_given(source):
    origin = Path(importlib.import_module(_module(source)).__file__)
    if BUILD is None:
        assert origin == REPO / source
    else:  # compiled: an extension module of the build, not the source beside it
        assert origin.is_relative_to(BUILD) and origin.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
