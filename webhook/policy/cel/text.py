"""Catalogue texts as CEL string expressions: a message of the engine (webhook/policy/messages.py: a
template, the catalogue's msgid, and named arguments) written for the apiserver to finish. The template is
translated by the catalogue lookup the engine makes and cut at its `{placeholders}`; the pieces between
them become CEL string literals, and each argument is either known now (a value or a Text, rendered in the
language as the engine renders it) or known only to the apiserver: `Cel`, an expression of the object, or
`If`, a choice between two pieces by a condition of the object. So that the in-tree line is the engine's
line for the same object, in every language the policy speaks."""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Policy
from webhook.locale import gettext_for
from webhook.policy.cel import lit, strings
from webhook.policy.messages import _AND, _COMMA, LINE, Arg, render
from webhook.rules import Rule

_PARSER = string.Formatter()


@dataclass(frozen=True, slots=True)
class Cel:
    """A piece the apiserver computes: a CEL expression of type string."""

    expression: str


@dataclass(frozen=True, slots=True)
class If:
    """`then` where the CEL condition holds, else `otherwise`."""

    condition: str
    then: Piece
    otherwise: Piece


@dataclass(frozen=True, slots=True)
class Msg:
    """A Text whose arguments may be pieces the apiserver computes (`msgid` is a catalogue msgid)."""

    msgid: str
    args: Mapping[str, Piece]


@dataclass(frozen=True, slots=True)
class CelNames:
    """messages.names of a CEL list of strings without duplicates ('a', 'a and b', 'a, b and c'), in the
    message's language."""

    values: str


@dataclass(frozen=True, slots=True)
class Cat:
    """Pieces one after the other."""

    pieces: tuple[Piece, ...]


def cat(*pieces: Piece) -> Cat:
    return Cat(pieces)


@dataclass(frozen=True, slots=True)
class Lookup:
    """The piece of `key`'s value (CEL of a string) among `pieces`, texts known now: a map the key picks from
    (the caller knows every value the key can take here)."""

    key: str
    pieces: Mapping[str, Arg]


@dataclass(frozen=True, slots=True)
class _Translated:
    """A template already in the language, with its arguments (a part of the catalogue's line)."""

    template: str
    args: Mapping[str, Piece]


Piece = Arg | Cel | If | Msg | CelNames | Cat | Lookup | _Translated


def msg(msgid: str, /, **args: Piece) -> Msg:
    return Msg(msgid, args)


def expression(piece: Piece, language: str) -> str:
    """CEL: the piece's text in `language`."""
    return _concat(_parts(piece, gettext_for(language), language))


# A part is a literal (str) or a CEL expression of type string (Cel); adjacent literals are merged.
_Part = str | Cel


def _parts(piece: Piece, tr: Callable[[str], str], language: str) -> list[_Part]:
    if isinstance(piece, Cel):
        return [piece]
    if isinstance(piece, If):
        return [Cel(f"({piece.condition} ? {_concat(_parts(piece.then, tr, language))} : "
                    f"{_concat(_parts(piece.otherwise, tr, language))})")]
    if isinstance(piece, CelNames):
        values = piece.values
        first = Cel(f"{values}.filter(x, {values}.indexOf(x) < size({values}) - 1).join({lit(tr(_COMMA))})")
        return _parts(If(f"size({values}) <= 1", Cel(f"{values}.join('')"),
                         Msg(_AND, {"first": first, "last": Cel(f"{values}[size({values}) - 1]")})), tr, language)
    if isinstance(piece, Lookup):
        return [Cel("{" + ", ".join(f"{lit(k)}: {lit(render(v, language))}" for k, v in piece.pieces.items())
                    + f"}}[{piece.key}]")]
    if isinstance(piece, Cat):
        return [p for sub in piece.pieces for p in _parts(sub, tr, language)]
    if isinstance(piece, _Translated):
        return _filled(piece.template, piece.template, piece.args, tr, language)
    if isinstance(piece, Msg):
        template = tr(piece.msgid)
        if not piece.args:  # as the engine renders a Text without arguments: braces and all
            return [template]
        return _filled(piece.msgid, template, piece.args, tr, language)
    return [render(piece, language)]  # a value or a Text: known now


def _filled(msgid: str, template: str, args: Mapping[str, Piece], tr: Callable[[str], str],
            language: str) -> list[_Part]:
    out: list[_Part] = []
    for literal, field, spec, conversion in _PARSER.parse(template):
        if literal:
            out.append(literal)
        if field is None:
            continue
        if spec or conversion or field not in args:
            raise ValueError(f"{msgid!r}: the placeholder {{{field}}} takes a plain argument")
        out.extend(_parts(args[field], tr, language))
    return out


def _concat(parts: list[_Part]) -> str:
    merged: list[_Part] = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    if not merged:
        return '""'
    return " + ".join(lit(p) if isinstance(p, str) else p.expression for p in merged)


def other_languages(policy: Policy) -> dict[str, tuple[str, ...]]:
    """The namespaces whose messages are in another language than the policy's, by language."""
    out: dict[str, list[str]] = {}
    for ns in sorted(policy.overridden_namespaces):
        language = policy.language_for(ns)
        if language != policy.language:
            out.setdefault(language, []).append(ns)
    return {k: tuple(v) for k, v in sorted(out.items())}


def in_languages(policy: Policy, make: Callable[[str], Piece]) -> str:
    """CEL: `make(language)` in the request's namespace's language. One validating policy serves every
    namespace: where namespace overrides speak other languages, the namespace picks; where one language is
    in force everywhere, only it is written."""
    out = expression(make(policy.language), policy.language)
    for language, namespaces in reversed(other_languages(policy).items()):
        out = f"request.namespace in {strings(namespaces)} ? {expression(make(language), language)} : {out}"
    return out


def line(policy: Policy, rule: Rule, what: Piece, why: Piece, fix: Piece) -> str:
    """CEL: a finding's message (messages.line) about the object in `variables.subject`."""
    return in_languages(policy, lambda language: msg(
        LINE, subject=Cel("variables.subject"), what=what, why=why, fix=fix, rule=rule.value,
        docs=policy.docs_url(rule, language)))


def _quarters(language: str) -> tuple[str, str, str, str]:
    """The catalogue's line in `language` cut after `{what}`, `{fix}` and `{why}`: the object and what it does,
    the fix, the why, then the rule and its docs."""
    template = gettext_for(language)(LINE)
    fields = [f for _, f, _, _ in _PARSER.parse(template) if f]
    if fields[:4] != ["subject", "what", "fix", "why"] or sorted(fields[4:]) != ["docs", "rule"]:
        raise ValueError(f"{language}: the line {template!r} does not say the fix, then the why, then rule and docs")
    what, fix, why = (template.find("{" + f + "}") + len(f) + 2 for f in ("what", "fix", "why"))
    return template[:what], template[what:fix], template[fix:why], template[why:]


def _shorter(uses: int, length: int) -> bool:
    """A text of `length` characters written `uses` times is longer than once in a variable (its name, the
    variable's entry in the policy) and `uses` reads of it."""
    return (uses - 1) * length > 16 * uses + 70


class Lines:
    """The findings' lines of one policy (messages.line about the object in `variables.subject`). Most of a
    line's text is its ending: the fix, the why, the rule and the docs link, and a rule's checks share some of
    it. So an ending is written once where lines share it: a fix and why that end more than one line are a
    variable (`tail`, `tail1`, ...), a why that ends more than one line or tail is one (`why`, `why1`, ...), and
    the rule and docs link, where more than one why ends with them, are one more (`docs`). `line` hands out a
    placeholder, which `resolve` turns into the line's expression once every line of the policy is known."""

    def __init__(self, policy: Policy, rule: Rule) -> None:
        self.policy, self.rule = policy, rule
        self._lines: list[tuple[Piece, str, str]] = []  # (what, the fix's key, the why's key)
        self._pieces: dict[str, Piece] = {}  # key (the part's expression) -> its piece

    def _key(self, part: int, name: str, piece: Piece) -> str:
        key = f"{name}:" + in_languages(self.policy, lambda language: _Translated(_quarters(language)[part],
                                                                                    {name: piece}))
        self._pieces.setdefault(key, piece)
        return key

    def line(self, what: Piece, why: Piece, fix: Piece) -> str:
        """A placeholder for a finding's message (resolve)."""
        self._lines.append((what, self._key(1, "fix", fix), self._key(2, "why", why)))
        return f"\0line {len(self._lines) - 1}"

    def _plan(self) -> tuple[dict[tuple[str, str], str], dict[str, str], bool]:
        """(the tails' variables by (fix, why), the whys' variables, whether the docs are a variable): an ending is
        a variable where that makes the policy shorter."""
        pairs = Counter((fix, why) for _, fix, why in self._lines)
        tails = {pair: f"tail{i or ''}" for i, pair in enumerate(
            p for p, n in pairs.items() if _shorter(n, self._length(p[0]) + len("variables.why")))}
        ends: Counter[str] = Counter()  # the lines and tails each why ends
        for (fix, why), n in pairs.items():
            ends[why] += 1 if (fix, why) in tails else n
        whys = {why: f"why{i or ''}" for i, why in enumerate(
            w for w, n in ends.items() if _shorter(n, self._length(w) + len("variables.docs")))}
        said = len(whys) + sum(n for w, n in ends.items() if w not in whys)  # the docs, written this often
        docs = _shorter(said, len(in_languages(self.policy, lambda language: self._docs(language, False))))
        return tails, whys, docs

    def _length(self, key: str) -> int:
        return len(key) - key.index(":") - 1

    def _docs(self, language: str, docs: bool) -> Piece:
        return Cel("variables.docs") if docs else _Translated(_quarters(language)[3], {
            "rule": self.rule.value, "docs": self.policy.docs_url(self.rule, language)})

    def _why(self, language: str, why: str, plan: tuple[Any, ...], written: bool = False) -> list[Piece]:
        """The pieces from the why on: its variable, or (`written`: always) the why and the docs."""
        _, whys, docs = plan
        if why in whys and not written:
            return [Cel(f"variables.{whys[why]}")]
        return [_Translated(_quarters(language)[2], {"why": self._pieces[why]}), self._docs(language, docs)]

    def _fix(self, language: str, fix: str, why: str, plan: tuple[Any, ...], written: bool = False) -> list[Piece]:
        """The pieces from the fix on: its tail's variable, or (`written`: always) the fix and the why on."""
        tails = plan[0]
        if (fix, why) in tails and not written:
            return [Cel(f"variables.{tails[fix, why]}")]
        return [_Translated(_quarters(language)[1], {"fix": self._pieces[fix]}), *self._why(language, why, plan)]

    def resolve(self, placeholder: str) -> str:
        """CEL: the message `line` handed out `placeholder` for."""
        what, fix, why = self._lines[int(placeholder.removeprefix("\0line "))]
        plan = self._plan()
        return in_languages(self.policy, lambda language: cat(
            _Translated(_quarters(language)[0], {"subject": Cel("variables.subject"), "what": what}),
            *self._fix(language, fix, why, plan)))

    @property
    def variables(self) -> list[dict[str, str]]:
        policy, rule = self.policy, self.rule
        plan = tails, whys, docs = self._plan()
        out = []
        if docs:
            out.append({"name": "docs", "expression": in_languages(policy, lambda language: _Translated(
                _quarters(language)[3], {"rule": rule.value, "docs": policy.docs_url(rule, language)}))})
        for why, name in whys.items():
            def why_on(language: str, why: str = why) -> Piece:
                return cat(*self._why(language, why, plan, written=True))
            out.append({"name": name, "expression": in_languages(policy, why_on)})
        for (fix, why), name in tails.items():
            def fix_on(language: str, fix: str = fix, why: str = why) -> Piece:
                return cat(*self._fix(language, fix, why, plan, written=True))
            out.append({"name": name, "expression": in_languages(policy, fix_on)})
        return out


def text(policy: Policy, piece: Piece) -> str:
    """CEL: the piece in the request's namespace's language: a variable's expression, for a text that a
    message reads by the variable's name."""
    return in_languages(policy, lambda language: piece)
