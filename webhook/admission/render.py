"""Every text an admission answer carries to its user, rendered here in the policy's language: the findings
(denial lines, warnings, audit annotations), bounded by count and by the apiserver's limits on each text, the
sentences that say what was left out (`more`), and the webhook's own failures.

An answer carries at most MAX_CARRIED findings in each of its texts, the first ones in the engine's order; a
Pod of 10,000 containers that each break a rule is answered in a few kilobytes, not megabytes (`check` lists
them all). Every text is one line (webhook.text.one_line), cut at a character boundary with "..."."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from types import MappingProxyType

from webhook.policy.messages import N_, T, render
from webhook.policy.results import Evaluation
from webhook.rules import Action, Rule
from webhook.text import one_line

MAX_CARRIED = 20
MAX_ANNOTATED_PER_RULE = 8  # an audit annotation's value holds 4 KiB: its count line must fit

# The apiserver (k8s.io/apiserver pkg/endpoints/filters/warning.go, the same in 1.34 and 1.37) adds the
# warnings as `Warning: 299 - "<text>"` headers while their texts add up to 4096 runes (code points, not
# bytes: utf8.RuneCountInString); past that it cuts every warning, the earlier ones too, to 256 runes. It
# drops any warning with a control character or invalid UTF-8 (apimachinery's NewWarningHeader). Python's
# len() of a str counts code points, so a Japanese character counts once here too.
WARNINGS_BUDGET = 4096
WARNING_MAX_BYTES = 1024  # "one line each, short": a longer warning is cut, at a character boundary
DENIAL_MAX_BYTES = 12 * 1024  # kubectl prints the whole message; beyond this it is a wall of text
# Audit annotations go into every audit event of the request: each value, and all of them together, short.
ANNOTATION_VALUE_MAX_BYTES = 4 * 1024
ANNOTATIONS_MAX_BYTES = 16 * 1024
ANNOTATION_KEY_MAX = 63
_NOT_IN_KEY = re.compile(r"[^-A-Za-z0-9_.]+")


class Left(Enum):
    """What an answer leaves out, with the sentence (singular, plural) that counts it. The four sentences
    differ on purpose: a rule's findings name the rule, the warnings' note says why the apiserver made room
    for no more, a denial's last line follows lines that already name theirs, an annotation has a key."""

    FINDINGS = (N_("... and {count} more {rule} finding not shown; run `gpu-admission check` on the manifest to see "
                   "them all [{rule}]"),
                N_("... and {count} more {rule} findings not shown; run `gpu-admission check` on the manifest to "
                   "see them all [{rule}]"))
    WARNINGS = (N_("gpu-admission: {count} more warning not shown (the apiserver keeps 4096 characters of warnings); "
                   "run `gpu-admission check` on the manifest to see them all"),
                N_("gpu-admission: {count} more warnings not shown (the apiserver keeps 4096 characters of "
                   "warnings); run `gpu-admission check` on the manifest to see them all"))
    DENIAL_LINES = (N_("... and {count} more; run `gpu-admission check` on the manifest to see them all"),) * 2
    ANNOTATIONS = (N_("{count} more annotation; run `gpu-admission check` on the manifest"),
                   N_("{count} more annotations; run `gpu-admission check` on the manifest"))


def more(left: Left, count: int, language: str = "en", rule: Rule | None = None) -> str:
    """The one sentence saying that `count` more of `left` are not shown (of `rule`'s findings, for FINDINGS)."""
    one, many = left.value
    args: dict = {"count": count} if rule is None else {"count": count, "rule": rule.value}
    return render(T(one if count == 1 else many, **args), language)


# --- the findings of one evaluation ----------------------------------------------------------------------


def denial_lines(ev: Evaluation) -> list[str]:
    """The denial's lines: the enforced findings, then a line for each rule that failed with onError deny."""
    lines = _bounded(((v.rule, v.message) for v in ev.denials), ev.language)
    # The exception's text could quote the object: only its type goes to the user (the log has the rule).
    lines += [render(T("gpu-admission: rule {rule} failed internally ({error}) and its onError is deny, so the "
                       "request was refused; see the gpu-admission log", rule=e.rule.value,
                       error=e.error.split(":", 1)[0]), ev.language)
              for e in ev.errors if e.denied and not ev.dry_run]
    return lines


def warning_lines(ev: Evaluation) -> tuple[str, ...]:
    """The warnings: warned findings, in a dry run what enforce would deny and mutations would do, then a line
    for each rule that failed and let the request through."""
    lines = _bounded(_warned(ev), ev.language)
    lines += [render(T("gpu-admission could not evaluate rule {rule} (internal error); the request was allowed",
                       rule=e.rule.value), ev.language)
              for e in ev.errors if not e.denied or ev.dry_run]
    return tuple(lines)


def annotation_lines(ev: Evaluation) -> Mapping[str, str]:
    """Audit annotations: one key per rule (the apiserver prefixes the webhook's name), its findings joined
    by " | ": the first MAX_CARRIED findings of the answer, then, in each rule's value, how many more."""
    by_rule: dict[str, list[str]] = {}
    left: dict[Rule, int] = {}
    carried = 0
    for v in ev.violations:
        if v.action is Action.AUDIT or ev.dry_run:
            lines = by_rule.setdefault(v.rule.value, [])
            if carried < MAX_CARRIED and len(lines) < MAX_ANNOTATED_PER_RULE:
                lines.append(v.message)
                carried += 1
            else:
                left[v.rule] = left.get(v.rule, 0) + 1
    if not by_rule:
        return MappingProxyType({})
    for rule, n in left.items():
        by_rule[rule.value].append(more(Left.FINDINGS, n, ev.language, rule))
    out: dict[str, str] = {"mode": "dry-run"} if ev.dry_run else {}  # first: the total's cap must not drop it
    out.update((rule, " | ".join(lines)) for rule, lines in by_rule.items())
    return MappingProxyType(out)


def _bounded(findings: Iterable[tuple[Rule, str]], language: str) -> list[str]:
    """The first MAX_CARRIED texts, then for each rule with more, one line saying how many."""
    kept: list[str] = []
    left: dict[Rule, int] = {}
    for rule, text in findings:
        if len(kept) < MAX_CARRIED:
            kept.append(text)
        else:
            left[rule] = left.get(rule, 0) + 1
    kept.extend(more(Left.FINDINGS, n, language, rule) for rule, n in left.items())
    return kept


def _warned(ev: Evaluation) -> Iterator[tuple[Rule, str]]:
    for v in ev.violations:
        if ev.dry_run and v.action is Action.ENFORCE and not v.rule.is_mutation:
            yield v.rule, render(T("dry-run, would deny: {message}", message=v.message), ev.language)
        elif ev.dry_run and v.rule.is_mutation:
            yield v.rule, render(T("dry-run: {message}", message=v.message), ev.language)
        elif v.action is Action.WARN or (ev.dry_run and v.action is Action.ENFORCE):
            yield v.rule, v.message


# --- the webhook's own texts -----------------------------------------------------------------------------


def evaluation_failed(refused: bool, language: str = "en") -> str:
    """What a request the webhook could not evaluate is told, refused (failure mode deny) or allowed."""
    if refused:
        return render(T("gpu-admission could not evaluate this request (internal error); it was refused. Retry, or "
                        "ask the cluster admins to check the gpu-admission log"), language)
    return render(T("gpu-admission could not evaluate this request (internal error); it was allowed without checks"),
                  language)


def patch_too_large(size: int, limit: int, language: str = "en") -> str:
    return render(T("gpu-admission: the defaults this object needs make a JSON patch of {size} bytes, more than the "
                    "{limit} an answer may carry; set them in the manifest (`gpu-admission mutate` prints it with "
                    "them)", size=size, limit=limit), language)


# --- each text within the apiserver's limits -------------------------------------------------------------


def denial_message(message: str, language: str = "en") -> str:
    # "\n" only: the lines are the handler's; str.splitlines would also split at separators a value carried.
    lines = [one_line(line) for line in str(message).split("\n")]
    lines = [line for line in lines if line] or [render(T("denied by the gpu-admission policy"), language)]
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line.encode()) + 1 > DENIAL_MAX_BYTES and kept:
            kept.append(more(Left.DENIAL_LINES, len(lines) - len(kept), language))
            break
        kept.append(_cut(line, DENIAL_MAX_BYTES))
        used += len(kept[-1].encode()) + 1
    return "\n".join(kept)


def sanitize_warnings(warnings: Iterable[str], budget: int = WARNINGS_BUDGET, *, language: str = "en") -> list[str]:
    """One line each, deduplicated, within the apiserver's budget. When they do not all fit, the
    last one says how many were left out, so nothing is dropped silently."""
    lines = list(dict.fromkeys(line for w in warnings if (line := _cut(one_line(w), WARNING_MAX_BYTES))))
    if sum(map(_runes, lines)) <= budget:
        return lines
    kept: list[str] = []
    used = _runes(more(Left.WARNINGS, len(lines), language))  # room for the note, at its longest
    for line in lines:
        if used + _runes(line) > budget:
            break
        kept.append(line)
        used += _runes(line)
    return kept + [more(Left.WARNINGS, len(lines) - len(kept), language)]


def audit_annotations(annotations: Mapping[str, str], language: str = "en") -> dict[str, str]:
    """Qualified keys; values on one line, each at most ANNOTATION_VALUE_MAX_BYTES and all together at most
    ANNOTATIONS_MAX_BYTES (a value cut ends in "..."; one that no longer fits is dropped, and the last
    kept says how many were)."""
    out: dict[str, str] = {}
    used = 0
    dropped = 0
    for key, value in annotations.items():
        name = annotation_key(key)
        if not name:
            continue
        room = min(ANNOTATION_VALUE_MAX_BYTES, ANNOTATIONS_MAX_BYTES - used - len(name))
        if room < 128:
            dropped += 1
            continue
        text = _cut(one_line(value), room)
        n = 2
        base = name
        while name in out:  # two keys that sanitise alike keep both values
            suffix = f"-{n}"
            name = base[: ANNOTATION_KEY_MAX - len(suffix)].rstrip("-_.") + suffix
            n += 1
        out[name] = text
        used += len(text.encode()) + len(name)
    if dropped:
        out["not-shown"] = more(Left.ANNOTATIONS, dropped, language)
    return out


def annotation_key(key: str) -> str:
    """A qualified name (`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters, no `/`):
    the apiserver prefixes the webhook's name and refuses any other key. "" when nothing is left."""
    return _NOT_IN_KEY.sub("-", str(key))[:ANNOTATION_KEY_MAX].strip("-_.")


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` UTF-8 bytes, ending in "..." when cut; never inside a character (the
    apiserver drops a warning that is not valid UTF-8)."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode("utf-8", "ignore").rstrip() + "..."


def _runes(text: str) -> int:
    """What warning.go counts of a warning against its 4096: the text's runes."""
    return len(text)
