"""`--format json`'s `path` names a file the same way on every machine: relative to the
working directory, or for an installed library's file `%SITE_PACKAGES%/` and its path
inside site-packages, as SARIF's `%SITE_PACKAGES%` base and the GitHub format name it."""

from __future__ import annotations

import json
import os

from atenlint.findings import Finding
from atenlint.formats.sarif import report_sarif
from atenlint.output import finding_json, report_json
from atenlint.run_report import Report
from atenlint.sourcetext import Position, Range


def _finding(path: str) -> Finding:
    return Finding(
        path,
        Range(Position(756, 20), Position(756, 70)),
        "error",
        "ATL004",
        "torch.jit.script cannot compile `find_packed_sequence_indices`",
        target="torchscript",
        abs_path=os.path.abspath(path),
    )


def test_a_library_file_is_named_inside_site_packages(tmp_path):
    library = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "transformers" / "masking_utils.py"
    found = finding_json(_finding(str(library)))
    assert found["path"] == "%SITE_PACKAGES%/transformers/masking_utils.py"
    assert str(tmp_path) not in json.dumps(found)


def test_the_same_library_file_has_the_same_path_in_every_environment(tmp_path):
    paths = [
        tmp_path / "a" / ".venv" / "lib" / "python3.11" / "site-packages" / "torch" / "nn" / "functional.py",
        tmp_path / "usr" / "lib" / "python3" / "dist-packages" / "torch" / "nn" / "functional.py",
    ]
    assert {finding_json(_finding(str(p)))["path"] for p in paths} == {"%SITE_PACKAGES%/torch/nn/functional.py"}


def test_the_users_files_keep_their_paths(tmp_path):
    assert finding_json(_finding("models/net.py"))["path"] == "models/net.py"
    outside = str(tmp_path / "elsewhere" / "net.py")  # given outside the working directory
    assert finding_json(_finding(outside))["path"] == outside


def test_json_and_sarif_name_a_library_file_alike(tmp_path):
    library = tmp_path / "env" / "site-packages" / "transformers" / "masking_utils.py"
    report = Report("2.13.0", ["torchscript"], [_finding(str(library))], [])
    diagnostic = report_json(report)["diagnostics"][0]
    location = report_sarif(report, root=str(tmp_path / "repo"))["runs"][0]["results"][0]["locations"][0]
    artifact = location["physicalLocation"]["artifactLocation"]
    assert diagnostic["path"] == f"{artifact['uriBaseId']}/{artifact['uri']}"
