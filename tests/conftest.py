"""The top conftest: the suites' command-line options (pytest reads `pytest_addoption` from here)."""


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden message files under tests/golden/ from the current output")
