"""Results as SARIF 2.1.0 (OASIS), the format code-scanning UIs read (GitHub's upload-sarif among them):
one run, a rule descriptor for every rule id (docs link, default level), and each finding located at
its manifest file and, where the document could be mapped, the line of the offending field."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from webhook.cli.subjects import Subject, default_level, level
from webhook.config.model import Policy
from webhook.policy.definitions import REASONS, SUMMARIES
from webhook.policy.messages import T, Text, render
from webhook.rules import Rule
from webhook.version import package_version

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/gpu-admission/gpu-admission"
_RULE_INDEX = {rule: i for i, rule in enumerate(Rule)}


def _descriptor(rule: Rule, policy: Policy) -> dict:
    """The rule's descriptor; a validation's reason in full (the long form of its findings' one-clause why)
    is its fullDescription and leads its help, which code-scanning UIs show beside each finding."""
    kind = "mutation" if rule.is_mutation else "validation"
    language, docs = policy.language, policy.docs_url(rule, policy.language)
    reason = REASONS.get(rule)
    out = {"id": rule.value, "shortDescription": {"text": render(Text(SUMMARIES[rule]), language)}}
    if reason is not None:
        out["fullDescription"] = {"text": render(reason, language)}
        help_text = T("{summary}. {reason} See {docs}", summary=Text(SUMMARIES[rule]), reason=reason, docs=docs)
    else:
        help_text = T("{summary}. See {docs}", summary=Text(SUMMARIES[rule]), docs=docs)
    return {**out, "helpUri": docs, "help": {"text": render(help_text, language)},
            "defaultConfiguration": {"level": default_level(rule)}, "properties": {"tags": ["kubernetes", "gpu", kind]}}


def _location(s: Subject, path: str) -> dict:
    ev = s.evaluation
    qualified = "/".join(p for p in (ev.kind, ev.namespace, ev.name) if p)
    out: dict = {"logicalLocations": [{"name": ev.name or ev.kind, "fullyQualifiedName": qualified,
                                       "kind": "resource"}]}
    if s.file is not None:
        file = Path(s.file)
        physical: dict = {"artifactLocation": {"uri": file.as_uri() if file.is_absolute() else quote(file.as_posix())}}
        line = s.line(path)
        if line is not None:
            physical["region"] = {"startLine": line}
        out["physicalLocation"] = physical
    return out


def _fingerprint(s: Subject, rule: str, path: str) -> dict:
    ev = s.evaluation
    key = "\0".join((s.group, ev.kind, ev.namespace, ev.name, rule, path))
    return {"gpuAdmission/v1": hashlib.sha256(key.encode()).hexdigest()}


def _results(subjects: Iterable[Subject]) -> list[dict]:
    out = []
    for s in subjects:
        ev = s.evaluation
        for v in ev.violations:
            out.append({"ruleId": v.rule.value, "ruleIndex": _RULE_INDEX[v.rule], "level": level(v, ev.dry_run),
                        "message": {"text": v.message}, "locations": [_location(s, v.path)],
                        "partialFingerprints": _fingerprint(s, v.rule.value, v.path),
                        "properties": {"action": v.action.value, "path": v.path}})
        for e in ev.errors:
            out.append({"ruleId": e.rule.value, "ruleIndex": _RULE_INDEX[e.rule], "level": "warning",
                        "message": {"text": f"{s.title}: " + render(T("rule {rule} failed internally: {error}",
                                                                      rule=e.rule.value, error=e.error),
                                                                    ev.language)},
                        "locations": [_location(s, "")], "partialFingerprints": _fingerprint(s, e.rule.value, "")})
    return out


def sarif_log(subjects: list[Subject], policy: Policy, *, input_errors: Iterable[str] = ()) -> dict:
    """The SARIF log; input errors (files that could not be read or parsed) are the invocation's
    notifications, and make it unsuccessful."""
    notifications = [{"level": "error", "message": {"text": e}} for e in input_errors]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gpu-admission", "version": package_version(),
                                "informationUri": INFORMATION_URI,
                                "rules": [_descriptor(rule, policy) for rule in Rule]}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "results": _results(subjects),
        }],
    }
