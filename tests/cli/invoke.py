"""The CLI called in-process as a shell would call it: argv, optional standard input, exit code and both streams."""
from __future__ import annotations

import io

from webhook.cli.main import main


def run(capsys, monkeypatch, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
