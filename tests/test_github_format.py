"""`--format github`: one workflow command per finding, escaped as GitHub reads them, parsed back."""

from __future__ import annotations

import json
import os
import re

from atenlint.findings import Finding
from atenlint.formats.github import annotation, escape_data, escape_property
from atenlint.sourcetext import Position, Range
from ci_support import make_workspace, run_check

COMMAND = re.compile(r"^::(?P<level>error|warning|notice) (?P<properties>[^:]*)::(?P<message>.*)$")


def unescape(text: str) -> str:
    """What the Actions runner does to a value (`%25` last: `%253A` is a literal `%3A`)."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def parse(line: str) -> dict:
    match = COMMAND.match(line)
    assert match, line
    properties = dict(item.split("=", 1) for item in match["properties"].split(","))
    return {
        "level": match["level"],
        "message": unescape(match["message"]),
        **{key: unescape(value) for key, value in properties.items()},
    }


def test_escaping_follows_the_runner():
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    tricky = "dir,with:odd%3A/n\nb.py"
    assert unescape(escape_property(tricky)) == tricky


def test_a_message_and_path_with_special_characters_round_trip(tmp_path):
    path = tmp_path / "odd, name: 100%.py"
    finding = Finding(
        "odd, name: 100%.py",
        Range(Position(2, 4), Position(2, 9)),
        "information",
        "MPS001",
        "line one: 50% of `a, b`\nline two, quoted from an exception",
        target="mps",
        abs_path=str(path),
    )
    line = annotation(finding, str(tmp_path))
    assert "\n" not in line
    parsed = parse(line)
    assert parsed == {
        "level": "notice",
        "file": "odd, name: 100%.py",
        "line": "3",
        "col": "5",
        "endLine": "3",
        "endColumn": "10",
        "title": "atenlint MPS001",
        # Only the first line: more lines are text quoted from analysed code (formats/redact.py).
        "message": "[mps] line one: 50% of `a, b` …",
    }


def test_annotations_match_the_json_positions(pool, monkeypatch, capsys, tmp_path):
    root = make_workspace(tmp_path)
    status, out, _ = run_check(pool, monkeypatch, capsys, root, ".", "--no-exec", "--format", "github")
    assert status == 1
    annotations = [parse(line) for line in out.splitlines()]
    _, json_out, _ = run_check(pool, monkeypatch, capsys, root, ".", "--no-exec", "--format", "json")
    diagnostics = json.loads(json_out)["diagnostics"]
    assert len(annotations) == len(diagnostics) == 3
    for parsed, diagnostic in zip(annotations, diagnostics):
        assert parsed["level"] == "warning" and parsed["title"] == f"atenlint {diagnostic['code']}"
        assert parsed["file"] == diagnostic["path"].replace(os.sep, "/")
        assert parsed["message"] == f"[{diagnostic['target']}] {diagnostic['message']}"
        if "cell" in diagnostic:  # on the .ipynb file's own line, where GitHub shows it
            with open(os.path.join(root, parsed["file"]), encoding="utf-8") as handle:
                raw = handle.read().splitlines()
            text = raw[int(parsed["line"]) - 1][int(parsed["col"]) - 1 : int(parsed["endColumn"]) - 1]
            assert text == "self.pool(x)"
            continue
        start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
        assert (int(parsed["line"]), int(parsed["col"]), int(parsed["endLine"]), int(parsed["endColumn"])) == (
            start["line"] + 1,
            start["character"] + 1,
            end["line"] + 1,
            end["character"] + 1,
        )
