"""Only the command-line options of the test suites (pytest reads `pytest_addoption` from the top conftest)."""


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden message files under tests/golden/ from the current output")
