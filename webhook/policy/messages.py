"""Messages are made here, in the one-line shape of docs/architecture.md (Messages):
`<object>: <what, with field path>. Fix: <fix>. Why: <why> [<rule>] <docs link>`; checks give what, why and
fix. What to do comes before why, and the why is one clause: the reader of a denial wants the change to
make, and the rule's page (the link), `check --explain` and SARIF's rule help hold the long reason.

Checks stay language-free: they give `Text` values, an English template (the catalogue's msgid, marked
`T(...)` for `make messages` to extract) with named arguments. The engine renders them here, in the
policy's language, and only when a finding exists. Arguments that are strings (paths, object names,
resource names) are never translated."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple, Union

from webhook.config.model import Policy
from webhook.locale import gettext_for
from webhook.objects.podspec import Container
from webhook.rules import Rule
from webhook.text import safe

Arg = Union[str, int, "Text", "Names", "Joined"]
_NO_ARGS: Mapping[str, Arg] = MappingProxyType({})
_new_text = tuple.__new__


class Text(NamedTuple):
    """A message template (its English text, the msgid) and its named arguments. A tuple, not a dataclass:
    mutations make a few on every pod they change, rendered only when announced."""

    msgid: str
    args: Mapping[str, Arg] = _NO_ARGS


class Names(NamedTuple):
    """Several values read as a list: 'a, b and c' in English, 'a、b、c' in Japanese."""

    values: tuple[Arg, ...]


class Joined(NamedTuple):
    """Several values separated by the language's comma, without a final 'and' (a report's extras)."""

    values: tuple[Arg, ...]


# What a mutation says it did, made only when it is announced (warn, audit, dry-run): a mutation changes
# most GPU pods, and an applied default is not reported.
Said = Callable[[], "Text"]


def T(msgid: str, /, **args: Arg) -> Text:
    return _new_text(Text, (msgid, args))


def N_(msgid: str) -> str:
    """Marks a msgid for extraction where the text is translated later (gettext's N_)."""
    return msgid


_AND = N_("{first} and {last}")
_COMMA = N_(", ")


def render(value: Arg, language: str = "en") -> str:
    """The value's text in `language`."""
    if type(value) is str:
        return value
    return _render(value, gettext_for(language))


def _render(value: Arg, tr: Callable[[str], str]) -> str:
    if isinstance(value, Text):
        template = tr(value.msgid)
        if not value.args:
            return template
        return template.format_map({k: _render(v, tr) for k, v in value.args.items()})
    if isinstance(value, Names):
        items = [_render(v, tr) for v in value.values]
        if len(items) <= 1:
            return "".join(items)
        return tr(_AND).format(first=tr(_COMMA).join(items[:-1]), last=items[-1])
    if isinstance(value, Joined):
        return tr(_COMMA).join(_render(v, tr) for v in value.values)
    return str(value)


def line(policy: Policy, rule: Rule, subject: str, what: Arg, why: Arg, fix: Arg, language: str = "en") -> str:
    """A finding's message. Names and values come from the object: a control character would make the
    apiserver drop the warning, a line separator would start a line that looks like another finding
    (webhook/text.py)."""
    tr = gettext_for(language)
    template = tr(LINE)
    return safe(template.format(subject=subject, what=_render(what, tr), why=_render(why, tr), fix=_render(fix, tr),
                                rule=rule.value, docs=policy.docs_url(rule, language)))


LINE = N_("{subject}: {what}. Fix: {fix}. Why: {why} [{rule}] {docs}")
_SETS = N_("{subject}: sets {path}: {what} [{rule}] {docs}")
_WOULD_SET = N_("{subject}: would set {path}: {what} [{rule}] {docs}")


def mutation_line(policy: Policy, rule: Rule, subject: str, applied: bool, what: Said, path: str,
                  language: str = "en") -> str:
    """What a mutation set (or, in dry-run, would set): `<object>: sets <path>: <what> [<rule>] <link>`."""
    tr = gettext_for(language)
    return safe(tr(_SETS if applied else _WOULD_SET).format(subject=subject, path=path, what=_render(what(), tr),
                                                            rule=rule.value, docs=policy.docs_url(rule, language)))


def names(values: Iterable[Arg]) -> Names:
    """'a', 'a and b', 'a, b and c' (in the message's language)."""
    return Names(tuple(values))


def quoted(values: Iterable[str]) -> list[str]:
    """Each value in double quotes, as messages name objects: ['"a"', '"b"']."""
    return [f'"{v}"' for v in values]



# The words podspec labels containers with (SECTIONS, SIDECAR), as catalogue texts.
CONTAINER_WORDS: Mapping[str, Text] = {w: Text(w) for w in (N_("container"), N_("init container"),
                                                             N_("sidecar container"), N_("ephemeral container"))}
WHO = N_('{word} "{name}"')


def who(container: Container) -> Text:
    """A container as messages name it (its label, 'init container "warmup"'), in the message's language."""
    word = container.label[: -(len(container.name) + 3)]
    return T(WHO, word=CONTAINER_WORDS.get(word) or Text(word), name=container.name)


_LOOKUP_OFF = re.compile(r"lookups of (\S+) are off")
_NOT_LISTED = re.compile(r"(\S+) could not be listed: (.+)", re.S)
_REASONS = {r: Text(r) for r in (N_("not found"), N_("not resolved"), N_("cluster lookups are off"),
                                  N_("not among the given manifests"), N_("no probe matched"))}
_DEPENDS = "whether its selectors pick GPUs depends on the nodes' devices: "
_SELECTS_BY = re.compile(r'it selects by "(.*)" and matches none of the NVIDIA devices gpu-admission knows', re.S)
_NO_COMPILE = re.compile(r"its CEL selector (\d+) does not compile: (.*)", re.S)
_NOT_BOOL = re.compile(r"a selector gives a (\S+), not a bool")


def lookup_reason(reason: str) -> Arg:
    """Why a lookup found nothing, as the lookups say it (webhook/lookups), in the message's language; an
    apiserver's own text (a Status message, a transport error) is quoted as it came."""
    if reason in _REASONS:
        return _REASONS[reason]
    if reason.startswith(_DEPENDS):
        return T("whether its selectors pick GPUs depends on the nodes' devices: {why}",
                 why=lookup_reason(reason[len(_DEPENDS):]))
    if (m := _SELECTS_BY.fullmatch(reason)) is not None:
        return T('it selects by "{key}" and matches none of the NVIDIA devices gpu-admission knows', key=m.group(1))
    if (m := _NO_COMPILE.fullmatch(reason)) is not None:
        return T("its CEL selector {number} does not compile: {error}", number=m.group(1), error=m.group(2))
    if (m := _NOT_BOOL.fullmatch(reason)) is not None:
        return T("a selector gives a {type}, not a bool", type=m.group(1))
    if (m := _LOOKUP_OFF.fullmatch(reason)) is not None:
        return T("lookups of {resource} are off", resource=m.group(1))
    if (m := _NOT_LISTED.fullmatch(reason)) is not None:
        return T("{resource} could not be listed: {reason}", resource=m.group(1), reason=m.group(2))
    return reason


_EXEMPT = re.compile(r'namespace "(.*)" is exempt', re.S)
_OTHER_KIND = re.compile(r"kind (.*) is not one gpu-admission handles", re.S)
_NOT_MUTATED = re.compile(r"(.*) objects are never mutated", re.S)


def skip_reason(reason: str) -> Arg:
    """Why the engine skipped an object (policy.engine), as the report says it."""
    if (m := _EXEMPT.fullmatch(reason)) is not None:
        return T('namespace "{namespace}" is exempt', namespace=m.group(1))
    if (m := _OTHER_KIND.fullmatch(reason)) is not None:
        return T("kind {kind} is not one gpu-admission handles", kind=m.group(1))
    if (m := _NOT_MUTATED.fullmatch(reason)) is not None:
        return T("{kind} objects are never mutated", kind=m.group(1))
    return reason
