"""Results as JUnit XML, as CI systems read test reports (Jenkins' xUnit plugin, GitLab, GitHub reporters):
a test suite per file (per namespace in an audit), a test case per object, a failure per denial, the
findings that do not deny as the case's system-out, exempt objects skipped, rules that failed as errors."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable

from webhook.cli.subjects import Subject
from webhook.policy.messages import T, render, skip_reason
from webhook.rules import Action

_MARK = {Action.WARN: T("warn"), Action.AUDIT: T("audit"), Action.OFF: T("off")}


def _case(s: Subject) -> tuple[ET.Element, bool, bool, bool]:
    ev = s.evaluation
    language = ev.language
    case = ET.Element("testcase", name=s.title, classname=s.group)
    failed = errored = False
    if ev.skipped:
        ET.SubElement(case, "skipped", message=render(skip_reason(ev.skipped), language))
        return case, False, False, True
    others = []
    for v in ev.violations:
        if v.action is Action.ENFORCE and not v.rule.is_mutation and not ev.dry_run:
            failure = ET.SubElement(case, "failure", type=v.rule.value, message=v.message)
            failure.text = f"{s.where}: {v.path}: {v.message}"
            failed = True
        else:
            mark = T("patch") if v.rule.is_mutation else (T("would deny") if v.action is Action.ENFORCE else
                                                          _MARK[v.action])
            others.append(f"{render(mark, language)}: {v.message}")
    for e in ev.errors:
        error = ET.SubElement(case, "error", type=e.rule.value,
                              message=render(T("rule {rule} failed internally", rule=e.rule.value), language))
        error.text = f"{s.where}: {e.error}"
        errored = True
    if others:
        ET.SubElement(case, "system-out").text = "\n".join(others)
    return case, failed, errored, False


def junit_xml(subjects: list[Subject], *, name: str, input_errors: Iterable[str] = ()) -> str:
    suites: dict[str, list[Subject]] = defaultdict(list)
    for s in subjects:
        suites[s.group].append(s)
    root = ET.Element("testsuites", name=name)
    totals = [0, 0, 0]
    for group, members in suites.items():
        suite = ET.SubElement(root, "testsuite", name=group)
        counts = [0, 0, 0, 0]  # tests, failures, errors, skipped
        for s in members:
            case, failed, errored, skipped = _case(s)
            suite.append(case)
            counts[0] += 1
            counts[1] += failed
            counts[2] += errored
            counts[3] += skipped
        suite.attrib.update(tests=str(counts[0]), failures=str(counts[1]), errors=str(counts[2]),
                            skipped=str(counts[3]))
        totals = [t + c for t, c in zip(totals, counts)]
    errors = list(input_errors)
    if errors:
        suite = ET.SubElement(root, "testsuite", name="inputs", tests=str(len(errors)), failures="0",
                              errors=str(len(errors)), skipped="0")
        for text in errors:
            case = ET.SubElement(suite, "testcase", name=text.split(":", 1)[0], classname="inputs")
            ET.SubElement(case, "error", type="input", message=text).text = text
        totals[0] += len(errors)
        totals[2] += len(errors)
    root.attrib.update(tests=str(totals[0]), failures=str(totals[1]), errors=str(totals[2]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
