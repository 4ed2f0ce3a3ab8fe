"""`--format sarif`: SARIF 2.1.0 as GitHub code scanning reads it.

One run; the driver lists a rule for every code reported (description, help URI to the
code's section of docs/rules.md, default level). Each result points at the call, relative to the
repository root (`%SRCROOT%`), with the library line where the operator is really
called as a related location (relative to `%SITE_PACKAGES%` for an installed library), and a fingerprint that survives unrelated edits (the same
one baselines use, plus the occurrence among identical calls in the file).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from .. import __version__
from ..baseline import BaselineKey, SourceLookup, key_of
from ..finding_data import Fix
from ..findings import Finding
from ..output import StatisticsRow
from ..run_report import Report
from . import locations
from .redact import finding_message, machine_text, secret_values
from .rules import help_uri, rule_for

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/atenlint/atenlint"
ROOT_ID = "%SRCROOT%"
# Files of installed libraries (a library line a finding is reached through). Declared
# without a `uri`, as SARIF allows for a base the producer does not fix: where the
# environment is differs per machine, and naming it would put the user's paths in a report.
SITE_ID = "%SITE_PACKAGES%"
FINGERPRINT_KEY = "atenlintCallHash/v1"
# SARIF is JSON read by other tools: its objects are plain dicts, as the schema defines them.
Json = dict[str, Any]
LEVEL = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def report_sarif(report: Report, root: str | None = None, statistics: list[StatisticsRow] | None = None) -> Json:
    root = root or locations.repository_root()
    lookup = SourceLookup()
    rules: list[Json] = []
    rule_index: dict[str, int] = {}
    results: list[Json] = []
    occurrences: dict[BaselineKey, int] = {}
    secrets = secret_values()  # read once: the same redaction for every message
    for finding in report.findings:
        if finding.code not in rule_index:
            rule_index[finding.code] = len(rules)
            rules.append(_rule(finding))
        key = key_of(finding, lookup)
        occurrence = occurrences[key] = occurrences.get(key, 0) + 1
        results.append(_result(finding, rule_index[finding.code], root, _stable_hash(key, root), occurrence, secrets))
    run: Json = {
        "tool": {
            "driver": {
                "name": "atenlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {
            ROOT_ID: {"uri": locations.file_uri(root).rstrip("/") + "/"},
            **(
                {SITE_ID: {"description": {"text": "the site-packages folder of the analysed Python environment"}}}
                if _uses_site(results)
                else {}
            ),
        },
        "columnKind": "utf16CodeUnits",
        "results": results,
        "invocations": [_invocation(report, secrets)],
        "properties": {"torch": report.torch_version, "targets": list(report.targets)},
    }
    if statistics is not None:
        run["properties"]["statistics"] = statistics
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _rule(finding: Finding) -> Json:
    rule = rule_for(finding.code, finding.severity)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.description},
        "fullDescription": {"text": f"{rule.description} ({rule.code}); see {help_uri(rule.code)}"},
        "helpUri": help_uri(rule.code),
        "help": {
            "text": f"{rule.description}. Documentation: {help_uri(rule.code)}",
            "markdown": f"{rule.description}. [Documentation]({help_uri(rule.code)})",
        },
        "defaultConfiguration": {"level": LEVEL.get(rule.default_severity, "warning")},
        "properties": {"tags": ["atenlint", finding.target or "module"]},
    }


def _artifact(path: str, root: str) -> Json:
    relative, base = locations.portable(path, root)
    if base == "root":
        return {"uri": locations.uri_reference(relative), "uriBaseId": ROOT_ID}
    if base == "site":  # an installed library: relative to site-packages, never this machine's path
        return {"uri": locations.uri_reference(relative), "uriBaseId": SITE_ID}
    return {"uri": locations.file_uri(path)}


def _uses_site(results: list[Json]) -> bool:
    return any(
        place["physicalLocation"]["artifactLocation"].get("uriBaseId") == SITE_ID
        for result in results
        for place in [*result["locations"], *result.get("relatedLocations", [])]
    )


def _result(
    finding: Finding, index: int, root: str, fingerprint: str, occurrence: int, secrets: list[tuple[str, str]]
) -> Json:
    region = locations.region(finding)
    physical: Json = {
        "artifactLocation": _artifact(locations.absolute(finding), root),
        "region": {
            "startLine": region.start_line,
            "startColumn": region.start_column,
            "endLine": region.end_line,
            "endColumn": region.end_column,
        },
    }
    result: Json = {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": LEVEL.get(finding.severity, "warning"),
        "message": {"text": finding_message(finding, secrets)},
        "locations": [{"physicalLocation": physical}],
        "partialFingerprints": {FINGERPRINT_KEY: f"{fingerprint}:{occurrence}"},
        "properties": {
            "target": finding.target,
            "ops": list(finding.ops),
            "call": finding.call,
            "module": finding.module,
            "capture": finding.capture,
            "severity": finding.severity,
        },
    }
    notebook = finding.data.get("notebook")
    if notebook is not None:
        result["properties"]["cell"] = notebook["cell"]
        result["properties"]["cellRange"] = finding.range.as_json()
    related: list[Json] = []
    for number, item in enumerate(finding.related, start=1):
        related.append(
            {
                "id": number,
                "physicalLocation": {
                    "artifactLocation": _artifact(item["path"], root),
                    "region": {"startLine": item["line"] + 1, "startColumn": item["character"] + 1},
                },
                "message": {"text": machine_text(item.get("message") or "related location", (), secrets)},
            }
        )
    if related:
        result["relatedLocations"] = related
    fixes = [
        _fix(fix, physical["artifactLocation"])
        for fix in finding.fixes
        if fix.get("edits") and not any("path" in edit or "cell" in edit for edit in fix["edits"])
    ]
    if fixes:
        result["fixes"] = fixes
    return result


def _fix(fix: Fix, artifact: Json) -> Json:
    replacements: list[Json] = []
    for edit in fix["edits"]:
        start, end = edit["range"]["start"], edit["range"]["end"]
        replacements.append(
            {
                "deletedRegion": {
                    "startLine": start["line"] + 1,
                    "startColumn": start["character"] + 1,
                    "endLine": end["line"] + 1,
                    "endColumn": end["character"] + 1,
                },
                "insertedContent": {"text": edit["newText"]},
            }
        )
    return {
        "description": {"text": fix.get("title") or fix.get("id", "atenlint fix")},
        "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
    }


def _stable_hash(key: BaselineKey, root: str) -> str:
    # The repository-relative path, so another checkout location gives the same fingerprint.
    relative = locations.portable(key.path, root)[0].replace(os.sep, "/")
    text = "\x1f".join((relative, key.code, key.target, ",".join(key.ops), key.fingerprint))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _invocation(report: Report, secrets: list[tuple[str, str]]) -> Json:
    invocation: Json = {"executionSuccessful": True}
    notifications = [
        {"level": "error", "message": {"text": machine_text(f"{error.path}: {error.message}", (), secrets)}}
        for error in report.errors
    ]
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return invocation
