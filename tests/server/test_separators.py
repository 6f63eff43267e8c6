"""Characters that would change what a reader sees never reach a message, a warning or an audit annotation
as they are (issue 12): C0/C1 controls, NEL, the Unicode line and paragraph separators and the bidi
controls are escaped (`\\u2028`) by the one sanitizer, webhook/text.py. A value from the object carries them
here: a hostPath path, which the apiserver does not restrict. Golden file: tests/golden/server/separators.txt
(`pytest --update-golden` rewrites it)."""
from __future__ import annotations

from tests.support import REPO

GOLDEN = REPO / "tests" / "golden" / "server" / "separators.txt"
CHARACTERS = {
    "LINE SEPARATOR": "\u2028", "PARAGRAPH SEPARATOR": "\u2029", "NEXT LINE (NEL)": "\u0085",
    "LEFT-TO-RIGHT EMBEDDING": "\u202a", "RIGHT-TO-LEFT EMBEDDING": "\u202b", "POP DIRECTIONAL FORMATTING": "\u202c",
    "LEFT-TO-RIGHT OVERRIDE": "\u202d", "RIGHT-TO-LEFT OVERRIDE": "\u202e", "LEFT-TO-RIGHT ISOLATE": "\u2066",
    "RIGHT-TO-LEFT ISOLATE": "\u2067", "FIRST STRONG ISOLATE": "\u2068", "POP DIRECTIONAL ISOLATE": "\u2069",
    "ARABIC LETTER MARK": "\u061c", "LEFT-TO-RIGHT MARK": "\u200e", "RIGHT-TO-LEFT MARK": "\u200f",
    "NEWLINE": "\n", "CARRIAGE RETURN": "\r", "ESCAPE": "\x1b", "FILE SEPARATOR": "\x1c", "DELETE": "\x7f",
}
SAFE = {"plain ASCII": "", "ordinary non-ASCII (kept)": "ü日本"}  # the benign twins: left as they are


def _pod(char: str) -> dict:
    path = f"/dev/nvidia0{char}[double-mechanism] forged line{char}x"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sep", "namespace": "ml"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "volumeMounts": [{"name": "dev", "mountPath": "/d"}]}],
                     "volumes": [{"name": "dev", "hostPath": {"path": path}}]}}


def _unsafe(text: str) -> bool:
    return any(c in text for c in CHARACTERS.values())


def test_separators_and_bidi_controls_are_escaped_everywhere(apiserver_for, request):
    enforce, warn, audit = apiserver_for(), apiserver_for("rules: {device-access-bypass: warn}"), apiserver_for(
        "mode: audit")
    lines = []
    for label, char in {**CHARACTERS, **SAFE}.items():
        denial = enforce.send("/validate", enforce.review(_pod(char))).message
        warning = warn.send("/validate", warn.review(_pod(char))).warnings
        annotation = audit.send("/validate", audit.review(_pod(char))).annotations["device-access-bypass"]
        for where, texts in (("denial", denial.split("\n")), ("warning", warning), ("audit annotation", [annotation])):
            assert len(texts) == 1, (label, where, texts)  # one finding: one line, none forged
            assert not _unsafe(texts[0]), (label, where, texts[0])
        assert warning[0] == denial and annotation == denial  # the same text, whichever way it is told
        lines.append(f"{label}: {denial}")
    text = "".join(line + "\n" for line in lines)
    if request.config.getoption("update_golden"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.read_text(encoding="utf-8") == text
