"""The top conftest: which build of the package the suite imports, and the suites' command-line options
(pytest reads `pytest_addoption` from here)."""
import os
import sys

from tests.support import BUILD, BUILD_VARIABLE, python_env

if BUILD is not None:
    # Before anything imports `webhook`: the build first on sys.path, and in every subprocess's.
    sys.path.insert(0, str(BUILD))
    os.environ.update(python_env({"PYTHONPATH": os.environ.get("PYTHONPATH", "")}))
    import webhook.policy.engine

    if not webhook.policy.engine.__file__.endswith(".so"):
        raise SystemExit(f"{BUILD_VARIABLE}={BUILD} holds no compiled package: run `make compiled` first")


def pytest_report_header(config):
    return f"gpu-admission: {'the compiled build in ' + str(BUILD) if BUILD else 'the sources'}"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden message files under tests/golden/ from the current output")
