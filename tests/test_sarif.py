"""`--format sarif`: valid SARIF 2.1.0 (the OASIS schema, vendored in tests/data/sarif), the
same positions as the JSON format, and fingerprints that survive unrelated edits."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest

from atenlint.findings import DOCS_URL, Finding, rule_url
from atenlint.formats.rules import RULES, help_uri, rule_for
from atenlint.lsp import convert
from atenlint.sourcetext import Position, Range
from ci_support import make_workspace, run_check
from support import TESTS

REPO = os.path.dirname(TESTS)
RULES_DOC = os.path.join(REPO, "docs", "rules.md")


def test_every_rule_link_points_at_an_anchor_that_exists():
    """SARIF help URIs, the editor's code links and `findings.DOCS_URL` all lead to the code's
    own section of docs/rules.md (not README anchors, 13 of which did not exist)."""
    assert DOCS_URL.endswith("/docs/rules.md#")
    with open(RULES_DOC, encoding="utf-8") as handle:
        anchors = set(re.findall(r'<a id="([a-z]+\d{3})"></a>', handle.read()))
    emitted = set()
    for path in glob.glob(os.path.join(REPO, "server", "atenlint", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            emitted |= set(re.findall(r'"([A-Z]{2,8}\d{3})"', handle.read()))
    codes = emitted | set(RULES)
    assert len(codes) >= 30
    for code in sorted(codes):
        for link in (help_uri(code), rule_url(code)):
            assert link.startswith(DOCS_URL) and link.partition("#")[2] in anchors, (code, link)
        finding = Finding("m.py", Range(Position(0, 0), Position(0, 1)), "warning", code, "m")
        assert convert.diagnostic(finding, None, convert.Encoding()).code_description.href == rule_url(code)
    # A code the registry does not describe (a newer target) still gets a rule and a link.
    assert rule_for("NEW001").code == "NEW001"


jsonschema = pytest.importorskip("jsonschema")

SCHEMA = os.path.join(TESTS, "data", "sarif", "sarif-schema-2.1.0.json")


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def sarif_and_json(pool, monkeypatch, capsys, root, *extra):
    status, out, err = run_check(pool, monkeypatch, capsys, root, ".", "--format", "sarif", *extra)
    assert status == 1, err
    _, json_out, _ = run_check(pool, monkeypatch, capsys, root, ".", "--format", "json", *extra)
    return json.loads(out), json.loads(json_out)


def test_sarif_is_valid_and_agrees_with_the_json_format(pool, monkeypatch, capsys, tmp_path, validator):
    root = make_workspace(tmp_path)
    sarif, plain = sarif_and_json(pool, monkeypatch, capsys, root, "--no-exec")
    errors = sorted(validator.iter_errors(sarif), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert sarif["version"] == "2.1.0"
    [run] = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "atenlint" and driver["version"] and driver["informationUri"].startswith("https://")
    rules = {rule["id"]: rule for rule in driver["rules"]}
    results = run["results"]
    diagnostics = plain["diagnostics"]
    assert len(results) == len(diagnostics) == 3
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/") and run["columnKind"] == "utf16CodeUnits"
    for result, diagnostic in zip(results, diagnostics):
        assert result["ruleId"] == diagnostic["code"] and result["message"]["text"] == diagnostic["message"]
        assert result["level"] == {"error": "error", "warning": "warning"}.get(diagnostic["severity"], "note")
        rule = rules[result["ruleId"]]
        assert driver["rules"][result["ruleIndex"]] is rule
        assert rule["helpUri"] == rule_url(rule["id"]) and rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {
            "uri": diagnostic["path"].replace(os.sep, "/"),
            "uriBaseId": "%SRCROOT%",
        }
        region = location["region"]
        if "cell" in diagnostic:
            # A notebook result sits on the .ipynb's own line; the cell position is a property.
            assert result["properties"]["cell"] == diagnostic["cell"]
            assert result["properties"]["cellRange"] == diagnostic["range"]
            with open(os.path.join(root, diagnostic["path"]), encoding="utf-8") as handle:
                raw = handle.read().splitlines()
            line = raw[region["startLine"] - 1]
            assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "self.pool(x)"
        else:
            start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
            assert region == {
                "startLine": start["line"] + 1,
                "startColumn": start["character"] + 1,
                "endLine": end["line"] + 1,
                "endColumn": end["character"] + 1,
            }
        for related in result.get("relatedLocations", []):  # the library line, in site-packages
            assert related["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SITE_PACKAGES%"
            assert not related["physicalLocation"]["artifactLocation"]["uri"].startswith(("/", "file:"))
            assert related["physicalLocation"]["region"]["startLine"] >= 1
            assert related["message"]["text"]
        assert list(result["partialFingerprints"]) == ["atenlintCallHash/v1"]
    # `self.pool(x)` reaches the op inside torch/nn/functional.py: that line is related.
    pooled = next(r for r in results if "cell" in r["properties"])
    assert pooled["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "torch/nn/functional.py"
    )


def test_fingerprints_survive_an_unrelated_edit_above(pool, monkeypatch, capsys, tmp_path):
    root = make_workspace(tmp_path)

    def sarif():
        return json.loads(run_check(pool, monkeypatch, capsys, root, ".", "--no-exec", "--format", "sarif")[1])

    before = sarif()
    model = os.path.join(root, "src", "model.py")
    with open(model, encoding="utf-8") as handle:
        text = handle.read()
    with open(model, "w", encoding="utf-8") as handle:
        handle.write('"""Scoring."""\n\nimport math\n' + text)
    after = sarif()

    def prints(document):
        return sorted(
            (
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["partialFingerprints"]["atenlintCallHash/v1"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in document["runs"][0]["results"]
        )

    old, new = prints(before), prints(after)
    assert [(u, f) for u, f, _ in old] == [(u, f) for u, f, _ in new]
    assert [line + 3 for u, _, line in old if u == "src/model.py"] == [
        line for u, _, line in new if u == "src/model.py"
    ]


def test_paths_are_relative_to_the_repository_root_and_percent_encoded(pool, monkeypatch, capsys, tmp_path, validator):
    root = make_workspace(tmp_path)
    os.rename(os.path.join(root, "src"), os.path.join(root, "my src"))
    _status, out, _ = run_check(
        pool, monkeypatch, capsys, os.path.join(root, "my src"), "model.py", "--no-exec", "--format", "sarif"
    )
    sarif = json.loads(out)
    assert not list(validator.iter_errors(sarif))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"my%20src/model.py"}  # from the repository root, not the working directory


def test_a_clean_run_is_valid_sarif_with_no_results(pool, monkeypatch, capsys, tmp_path, validator):
    (tmp_path / ".git").mkdir()
    (tmp_path / "clean.py").write_text("x = 1\n")
    status, out, _ = run_check(pool, monkeypatch, capsys, str(tmp_path), "clean.py", "--format", "sarif", "--no-exec")
    sarif = json.loads(out)
    assert status == 0 and sarif["runs"][0]["results"] == [] and sarif["runs"][0]["tool"]["driver"]["rules"] == []
    assert not list(validator.iter_errors(sarif))


def test_installed_library_files_are_named_inside_site_packages(tmp_path, validator):
    """A finding (or its related library line) in an installed package gets no absolute
    path: relative to `%SITE_PACKAGES%`, declared without a uri, and the same fingerprint
    whichever environment the package is installed in."""
    from atenlint.formats.github import annotation
    from atenlint.formats.sarif import report_sarif
    from atenlint.run_report import Report

    def report(environment: str) -> dict:
        library = os.path.join(environment, "lib", "python3.11", "site-packages", "torchvision", "ops", "boxes.py")
        finding = Finding(
            library,
            Range(Position(40, 4), Position(40, 20)),
            "warning",
            "ONNX001",
            "m",
            target="onnx:17",
            abs_path=library,
            related=[{"path": library.replace("torchvision", "torch"), "line": 3, "character": 0, "message": "here"}],
        )
        assert "file=site-packages/torchvision/ops/boxes.py," in annotation(finding, str(tmp_path / "repo"))
        return report_sarif(Report("2.13.0", ["onnx:17"], [finding], []), root=str(tmp_path / "repo"))

    first, second = report(str(tmp_path / "venv-a")), report(str(tmp_path / "home" / "venv-b"))
    assert not list(validator.iter_errors(first))
    [run] = first["runs"]
    [result] = run["results"]
    place = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert place == {"uri": "torchvision/ops/boxes.py", "uriBaseId": "%SITE_PACKAGES%"}
    related = result["relatedLocations"][0]["physicalLocation"]["artifactLocation"]
    assert related == {"uri": "torch/ops/boxes.py", "uriBaseId": "%SITE_PACKAGES%"}
    assert "uri" not in run["originalUriBaseIds"]["%SITE_PACKAGES%"]
    assert str(tmp_path) not in json.dumps(first["runs"][0]["results"])
    assert result["partialFingerprints"] == second["runs"][0]["results"][0]["partialFingerprints"]
