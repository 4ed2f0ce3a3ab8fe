"""Machine formats (SARIF, GitHub annotations) never carry what analysed code put in an
exception message beyond its headline, nor the value of an environment variable."""

from __future__ import annotations

import json

from atenlint.findings import FileError, Finding
from atenlint.formats.github import report_github
from atenlint.formats.redact import HEADLINE_CHARS, headline, machine_text, secret_values
from atenlint.formats.sarif import report_sarif
from atenlint.output import report_json
from atenlint.run_report import Report
from atenlint.sourcetext import Position, Range

TOKEN = "ghp_0123456789abcdefSECRET"
KEY_FILE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"


def import_failure(raised: str) -> Finding:
    """An ATL002 as the engine words it, with the exception text it recorded."""
    return Finding(
        "leaky.py",
        Range(Position(2, 0), Position(2, 10)),
        "warning",
        "ATL002",
        f"importing `leaky` raised ValueError: {raised} at line 3; atenlint imports the file to build "
        "and analyse its modules",
        abs_path="/work/leaky.py",
        data={"untrusted_text": [raised]},  # type: ignore[typeddict-unknown-key]
    )


def test_a_headline_is_the_first_line_cut_to_its_length():
    assert headline("short") == "short"
    assert headline("first\nsecond") == "first …"
    assert headline("x" * 500) == "x" * (HEADLINE_CHARS - 1) + " …"


def test_environment_values_that_could_be_secrets_are_named_not_shown():
    environ = {
        "GITHUB_TOKEN": TOKEN,
        "HOME": "/home/runner",  # a path: shown (it is in every path of the report)
        "PATH": "/usr/bin:/bin",
        "USER": "runner",  # who: shown
        "CI": "true",  # too short to be a secret
        "GITHUB_RUN_ID": "123456789",  # a number
        "TORCH_VERSION": "2.13.0",  # a version: messages name torch's
        "TAG": "v1.2.3-rc1",
    }
    secrets = secret_values(environ)
    assert secrets == [(TOKEN, "GITHUB_TOKEN")]
    text = f"cannot log in with {TOKEN} from /home/runner/work as runner"
    assert machine_text(text, (), secrets) == "cannot log in with [$GITHUB_TOKEN] from /home/runner/work as runner"


def test_file_contents_in_an_exception_are_cut_to_a_headline_and_the_sentence_survives():
    finding = import_failure(KEY_FILE)
    text = machine_text(finding.message, finding.data["untrusted_text"], [])  # type: ignore[typeddict-item]
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in text
    assert text.startswith("importing `leaky` raised ValueError: -----BEGIN OPENSSH PRIVATE KEY----- …")
    assert text.endswith("atenlint imports the file to build and analyse its modules")


def test_without_a_record_a_multi_line_message_keeps_its_first_line_only():
    assert machine_text("raised: a secret\nline two\nline three", (), []) == "raised: a secret …"
    assert len(machine_text("y" * 5000, (), [])) <= 1002


def test_machine_formats_show_neither_file_contents_nor_environment_values(monkeypatch):
    monkeypatch.setenv("ATENLINT_TEST_API_KEY", TOKEN)
    report = Report(
        "2.13.0",
        ["mps"],
        [import_failure(KEY_FILE), import_failure(f"token={TOKEN}")],
        [FileError("/work/other.py", f"internal error: {TOKEN}\nTraceback ...")],
    )
    sarif = json.dumps(report_sarif(report, "/work"))
    github = report_github(report, "/work")
    as_json = json.dumps(report_json(report))  # `--format json` is uploaded and parsed by tools too
    for output in (sarif, github, as_json):
        assert TOKEN not in output
        assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in output
        assert "Traceback" not in output
        assert "[$ATENLINT_TEST_API_KEY]" in output
