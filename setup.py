"""setuptools' build script, for one thing pyproject.toml cannot say: with GPU_ADMISSION_COMPILE=1 the
modules listed under [tool.gpu-admission] `compiled` are compiled to C extensions with mypyc (the
container image is built this way; `make compiled` builds the same into build/compiled). Without the
variable the package is plain Python, as `pip install -e .` and `make run` use it.

Those modules are what every admission request runs (the WSGI layer, parsing, dispatch, the policy engine);
compiled, a request's decision costs about half the instructions. They type-check clean under
mypy, which mypyc requires, and the test suite runs against both builds (`make test`)."""
import os
import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def compiled_sources() -> list[str]:
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["gpu-admission"]["compiled"]
    return sorted(str(p.relative_to(ROOT)) for entry in listed
                  for p in ((ROOT / entry).rglob("*.py") if (ROOT / entry).is_dir() else [ROOT / entry]))


def extensions() -> list:
    if os.environ.get("GPU_ADMISSION_COMPILE") != "1":
        return []
    from mypyc.build import mypycify

    # annotation-unchecked: notes about unannotated helpers, not errors; untyped third-party imports
    # (yaml, jsonpatch) are left to Python.
    return mypycify(["--disable-error-code", "annotation-unchecked", "--ignore-missing-imports",
                     *compiled_sources()], opt_level="3")


if __name__ == "__main__":  # setuptools runs this file as __main__; the tests import it for the list
    setup(ext_modules=extensions())
