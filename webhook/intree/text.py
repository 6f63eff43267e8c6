"""Catalogue texts as CEL string expressions: a message of the engine (webhook/policy/messages.py: a
template, the catalogue's msgid, and named arguments) written for the apiserver to finish. The template is
translated by the catalogue lookup the engine makes and cut at its `{placeholders}`; the pieces between
them become CEL string literals, and each argument is either known now (a value or a Text, rendered in the
language as the engine renders it) or known only to the apiserver: `Cel`, an expression of the object, or
`If`, a choice between two pieces by a condition of the object. So that the in-tree line is the engine's
line for the same object, in every language the policy speaks."""
from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from webhook.config.model import Policy
from webhook.intree.cel import lit, strings
from webhook.locale import gettext_for
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


Piece = Arg | Cel | If | Msg | CelNames


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
    if isinstance(piece, Msg):
        template = tr(piece.msgid)
        if not piece.args:  # as the engine renders a Text without arguments: braces and all
            return [template]
        out: list[_Part] = []
        for literal, field, spec, conversion in _PARSER.parse(template):
            if literal:
                out.append(literal)
            if field is None:
                continue
            if spec or conversion or field not in piece.args:
                raise ValueError(f"{piece.msgid!r}: the placeholder {{{field}}} takes a plain argument")
            out.extend(_parts(piece.args[field], tr, language))
        return out
    return [render(piece, language)]  # a value or a Text: known now


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


def text(policy: Policy, piece: Piece) -> str:
    """CEL: the piece in the request's namespace's language: a variable's expression, for a text that a
    message reads by the variable's name."""
    return in_languages(policy, lambda language: piece)
