"""result_cache.py: `atenlint check --incremental` reuses a file's stored result only when
every input of its check is unchanged, and the report is the one a full check gives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from atenlint import findings as codes
from atenlint.captured import FileCapture
from atenlint.config import Settings, SettingsResolver
from atenlint.findings import Finding
from atenlint.pipeline import FileSnapshot, check_file, check_paths
from atenlint.result_cache import (
    EnvironmentUnknown,
    ResultCache,
    environment_fingerprint,
    finding_from_json,
    finding_to_json,
    settings_digest,
)
from atenlint.sourcetext import Position, Range
from support import REPO
from torch_facts import with_mps_missing

ENCODER = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def forward(self, x):
            return torch.special.ndtri(x)
""").lstrip()

MODEL = textwrap.dedent("""
    import torch.nn as nn
    from a import Encoder


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = Encoder()

        def forward(self, x):
            return self.enc(x)
""").lstrip()


def _workspace(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n')
    (project / "a.py").write_text(ENCODER)
    (project / "b.py").write_text(MODEL)
    return project


class _Counting:
    """The engine, counting the files it captures (a cached file is never captured)."""

    def __init__(self, engine):
        self._engine = engine
        self.captured: list[str] = []

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def capture(self, path, *args, **kwargs):
        self.captured.append(os.path.basename(path))
        return self._engine.capture(path, *args, **kwargs)


def _cache(tmp_path, execute=True, environment="env"):
    # The session's engine names other files' findings from the repository (conftest.py).
    return ResultCache(environment, execute=execute, sandbox=True, directory=str(tmp_path / "cache"), cwd=REPO)


def _json(report):
    return [f.as_json() for f in report.findings], report.classes, report.by_capture, report.built, report.targets


def test_real_findings_with_fixes_round_trip(engine, tmp_path):
    engine.resolver = SettingsResolver()
    path = tmp_path / "gather.py"
    # An op with no MPS kernel in the installed torch (torch_facts): its finding carries fixes.
    path.write_text(
        with_mps_missing(
            "import torch\nimport torch.nn as nn\n\n\nclass Gather(nn.Module):\n"
            "    def forward(self, x):\n        return MISSING(x)\n"
        ),
        encoding="utf-8",
    )
    result = check_file(engine, FileSnapshot.of(str(path), resolver=engine.resolver))
    with_fixes = [f for f in result.findings if f.fixes]
    assert with_fixes, "the finding carries fixes"
    for finding in result.findings:
        stored = json.loads(json.dumps(finding_to_json(finding)))
        assert finding_from_json(stored) == finding


def test_tuples_in_finding_data_read_back_as_tuples():
    finding = Finding("m.py", Range(Position(1, 2), Position(1, 5)), "warning", "MPS001", "m", target="mps")
    finding.data["args"] = {"kernel_size": (2, 2), "mode": "area", "nested": [(1,), {"k": (3,)}]}
    assert finding_from_json(json.loads(json.dumps(finding_to_json(finding)))) == finding


def test_the_second_run_captures_nothing_and_reports_the_same(engine, tmp_path):
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    plain = check_paths(engine, [str(project)])
    counting = _Counting(engine)
    first_cache = _cache(tmp_path)
    first = check_paths(counting, [str(project)], cache=first_cache)
    assert sorted(counting.captured) == ["a.py", "b.py"] and first_cache.stored == 2
    counting.captured.clear()
    second_cache = _cache(tmp_path)
    second = check_paths(counting, [str(project)], cache=second_cache)
    assert counting.captured == [] and second_cache.hits == 2
    assert _json(second) == _json(first) == _json(plain)
    assert second.torch_version == plain.torch_version


def test_a_changed_helper_recaptures_the_files_that_import_it(engine, tmp_path):
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    check_paths(engine, [str(project)], cache=_cache(tmp_path))
    (project / "a.py").write_text(ENCODER.replace("torch.special.ndtri", "torch.erfinv"))
    counting = _Counting(engine)
    cache = _cache(tmp_path)
    report = check_paths(counting, [str(project)], cache=cache)
    assert sorted(counting.captured) == ["a.py", "b.py"] and cache.hits == 0
    assert _json(report) == _json(check_paths(engine, [str(project)]))
    assert [f.code for f in report.findings if f.code == "MPS001"] == []


def test_one_cache_over_runs_in_one_process_sees_each_edit(engine, tmp_path):
    """`--fix` checks again after editing files, with the same cache: the edited file and
    those importing it are checked again, not answered from what the first run read."""
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    cache = _cache(tmp_path)
    check_paths(engine, [str(project)], cache=cache)
    (project / "a.py").write_text(ENCODER.replace("torch.special.ndtri", "torch.erfinv"))
    counting = _Counting(engine)
    report = check_paths(counting, [str(project)], cache=cache)
    assert sorted(counting.captured) == ["a.py", "b.py"]
    assert [f.code for f in report.findings if f.code == "MPS001"] == []


def test_a_new_file_in_the_project_or_other_settings_or_environment_miss(engine, tmp_path):
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    path = str(project / "b.py")
    check_paths(engine, [path], cache=_cache(tmp_path))
    settings = _settings(engine, project)
    assert _cache(tmp_path).lookup(path, path, settings) is not None
    assert _cache(tmp_path).lookup(path, "b.py", settings) is None  # findings would name it otherwise
    (project / "c.py").write_text("x = 1\n")  # `import c` in a try block could now find it
    assert _cache(tmp_path).lookup(path, path, settings) is None
    (project / "c.py").unlink()
    assert _cache(tmp_path).lookup(path, path, settings) is not None
    assert _cache(tmp_path).lookup(path, path, settings.with_overrides(targets=("cuda",))) is None
    assert _cache(tmp_path, environment="other").lookup(path, path, settings) is None
    assert _cache(tmp_path, execute=False).lookup(path, path, settings) is None
    elsewhere = ResultCache("env", execute=True, sandbox=True, directory=str(tmp_path / "cache"), cwd=str(project))
    assert elsewhere.lookup(path, path, settings) is None  # a.py's finding would be named from another folder
    (project / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n# edited\n')
    assert _cache(tmp_path).lookup(path, path, settings) is None


def test_a_source_only_result_misses_when_any_project_file_changes(engine, tmp_path):
    """The static pass follows `from a import Encoder` into a.py without recording it: a
    result read from source depends on the contents of every file of the project."""
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    path = str(project / "b.py")
    counting = _Counting(engine)
    first = check_paths(counting, [path], execute=False, cache=_cache(tmp_path, execute=False))
    assert counting.captured == ["b.py"]
    settings = _settings(engine, project)
    assert _cache(tmp_path, execute=False).lookup(path, path, settings) is not None
    (project / "a.py").write_text(ENCODER.replace("torch.special.ndtri", "torch.erfinv"))
    cache = _cache(tmp_path, execute=False)
    second = check_paths(counting, [path], execute=False, cache=cache)
    assert cache.hits == 0 and counting.captured == ["b.py", "b.py"]
    assert _json(second) == _json(check_paths(engine, [path], execute=False)) != _json(first)


def _settings(engine, project) -> Settings:
    return engine.resolver.for_file(str(project / "b.py"))


def test_a_check_that_did_not_finish_normally_is_not_stored(tmp_path):
    project = _workspace(tmp_path)
    path = str(project / "a.py")
    settings = SettingsResolver().for_file(path)
    cache = _cache(tmp_path)
    for code in (codes.TIMEOUT, codes.WORKER_CRASHED, codes.INTERNAL_ERROR, codes.IMPORT_ERROR):
        capture = FileCapture(path, "a.py", settings, None, None)
        capture.module_findings.append(
            Finding("a.py", Range(Position(0, 0), Position(0, 0)), "warning", code, "failed", abs_path=path)
        )
        assert not cache.store(path, "a.py", settings, capture, capture.module_findings, [path], [], "2.13.0")
    capture = FileCapture(path, "a.py", settings, None, None)
    assert not cache.store(path, "a.py", None, capture, [], [path], [], "2.13.0")  # an invalid configuration
    assert cache.store(path, "a.py", settings, capture, [], [path], [], "2.13.0")
    assert cache.lookup(path, "a.py", settings) is not None


def test_a_corrupt_or_foreign_entry_is_a_miss_and_is_replaced(tmp_path):
    project = _workspace(tmp_path)
    path = str(project / "a.py")
    settings = SettingsResolver().for_file(path)
    cache = _cache(tmp_path)
    capture = FileCapture(path, "a.py", settings, None, None)
    assert cache.store(path, "a.py", settings, capture, [], [path], [], "2.13.0")
    (entry,) = [n for n in os.listdir(cache.directory) if n != "index.json"]
    for garbage in ("{not json", json.dumps({"format": 1, "key": 3}), json.dumps([1, 2])):
        (tmp_path / "cache" / entry).write_text(garbage)
        assert _cache(tmp_path).lookup(path, "a.py", settings) is None
    assert cache.store(path, "a.py", settings, capture, [], [path], [], "2.13.0")
    assert _cache(tmp_path).lookup(path, "a.py", settings) is not None


def test_entries_of_deleted_files_and_beyond_the_cap_are_pruned(tmp_path, monkeypatch):
    project = _workspace(tmp_path)
    settings = SettingsResolver().for_file(str(project / "a.py"))
    cache = _cache(tmp_path)
    for name in ("a.py", "b.py"):
        path = str(project / name)
        assert cache.store(path, name, settings, FileCapture(path, name, settings, None, None), [], [path], [], "x")
    cache.prune()
    (project / "a.py").unlink()
    later = _cache(tmp_path)
    assert later.prune() == 1
    assert len([n for n in os.listdir(later.directory) if n != "index.json"]) == 1
    path = str(project / "b.py")
    monkeypatch.setattr("atenlint.result_cache.MAX_ENTRIES", 0)
    assert _cache(tmp_path).prune() == 1


def test_the_settings_digest_does_not_depend_on_the_hash_seed(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint]\ntargets = ["mps", "cuda"]\n[tool.atenlint.ignore]\nmps = ["aten::take", "aten::ndtri", "MPS002", "aten::erfinv"]\n'
    )
    code = (
        "import sys; from atenlint.config import SettingsResolver; from atenlint.result_cache import settings_digest;"
        f"print(settings_digest(SettingsResolver().for_file({str(tmp_path / 'm.py')!r})))"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1
    assert settings_digest(SettingsResolver().for_file(str(tmp_path / "m.py"))) + "\n" in digests


def test_the_environment_names_the_installed_packages(tmp_path):
    assert environment_fingerprint(sys.executable) == environment_fingerprint(sys.executable)
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(EnvironmentUnknown):
        environment_fingerprint(str(fake))


COUNTED = textwrap.dedent("""
    import counter  # appends a line to a file outside the workspace each time it is imported
    import torch
    import torch.nn as nn


    class Counted(nn.Module):
        def forward(self, x):
            return torch.special.ndtri(x)
""").lstrip()


def _cli(*args, cache):
    command = [os.path.join(os.path.dirname(sys.executable), "atenlint"), "check", *args]
    env = {**os.environ, "ATENLINT_CACHE_DIR": cache}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=env, cwd=REPO)


def test_the_cli_on_the_examples_imports_nothing_the_second_time(tmp_path):
    """Twice --incremental on examples/ (with a file whose import is counted outside the
    workspace): the second run imports nothing and reports what a plain run does; a change
    to the imported helper re-captures the file that imports it."""
    workspace = tmp_path / "workspace"
    shutil.copytree(os.path.join(REPO, "examples"), workspace / "examples")
    counts = tmp_path / "outside" / "imports.log"
    counts.parent.mkdir()
    counter = f"with open({str(counts)!r}, 'a') as _log:\n    _log.write('imported\\n')\n"
    (workspace / "examples" / "vision" / "counter.py").write_text(counter)
    (workspace / "examples" / "vision" / "counted.py").write_text(COUNTED)
    cache = str(tmp_path / "cache")
    examples = str(workspace / "examples")
    # The counter writes a file: the sandbox would refuse it (and a refused check is not stored).
    args = (examples, "--format", "json", "--no-sandbox")

    first = _cli(*args, "--incremental", cache=cache)
    assert first.returncode == 1, first.stderr
    imports = counts.read_text().count("imported")
    assert imports >= 1
    second = _cli(*args, "--incremental", cache=cache)
    assert second.returncode == 1, second.stderr
    assert counts.read_text().count("imported") == imports  # nothing imported
    assert "atenlint: 8 of 8 files from the cache" in second.stderr
    plain = _cli(*args, cache=cache)
    assert json.loads(second.stdout) == json.loads(plain.stdout) == json.loads(first.stdout)
    assert "cache" not in plain.stderr

    with open(workspace / "examples" / "vision" / "counter.py", "a") as handle:
        handle.write("# edited\n")
    third = _cli(*args, "--incremental", cache=cache)
    assert counts.read_text().count("imported") > imports
    assert "atenlint: 6 of 8 files from the cache" in third.stderr  # counter.py and counted.py
    assert json.loads(third.stdout) == json.loads(plain.stdout)
    text = _cli(examples, "--no-sandbox", "--incremental", cache=cache)
    assert text.stdout.strip().splitlines()[-1].endswith("[8 of 8 files from the cache]")


class _Persisting(_Counting):
    """The engine as the editor's: its checks read and write stored results (`cache`, for
    the executed mode only)."""

    def __init__(self, engine, cache):
        super().__init__(engine)
        self.cache = cache

    def result_cache(self, execute):
        return self.cache if execute == self.cache.execute else None


def test_an_editor_restarted_serves_an_unchanged_file_from_the_stored_check(engine, tmp_path):
    """check_file with an analyser that keeps results (the editor's): the first check
    captures and stores; after a "restart" (a new cache object on the same folder) the
    same text is served without a capture, with the same findings and hover verdicts.
    A buffer that differs from the disk, and a check that failed, are never served."""
    project = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    environment = environment_fingerprint(sys.executable)

    def editor() -> _Persisting:
        cache = ResultCache(environment, True, engine.pool.settings.sandbox, directory=str(tmp_path / "cache"))
        return _Persisting(engine, cache)

    for name in ("a.py", "b.py"):  # b.py's finding is in a.py, which its import reads
        path = str(project / name)
        text = (project / name).read_text()
        first = editor()
        checked = check_file(first, FileSnapshot.of(path, text=text, resolver=engine.resolver))
        assert first.captured == [name] and [f.code for f in checked.findings] == ["MPS001"]
        restarted = editor()
        served = check_file(restarted, FileSnapshot.of(path, text=text, resolver=engine.resolver))
        assert restarted.captured == []
        assert served.findings == checked.findings and served.call_sites == checked.call_sites
        assert served.imported == checked.imported
    assert checked.imported and served.call_sites == ()  # b.py: no call of its own
    assert check_file(editor(), FileSnapshot.of(str(project / "a.py"), resolver=engine.resolver)).call_sites

    unsaved = text + "\nx = 1\n"  # the buffer is not the file on disk: its own check
    edited = editor()
    check_file(edited, FileSnapshot.of(path, text=unsaved, resolver=engine.resolver))
    assert edited.captured == ["b.py"]

    (project / "broken.py").write_text(
        "import torch.nn as nn\nraise RuntimeError('no')\n\n\nclass M(nn.Module):\n    pass\n"
    )
    for _ in range(2):  # an import error is never stored: each check captures
        failing = editor()
        result = check_file(failing, FileSnapshot.of(str(project / "broken.py"), resolver=engine.resolver))
        assert failing.captured == ["broken.py"] and codes.IMPORT_ERROR in {f.code for f in result.findings}


def test_the_engine_keeps_executed_and_source_only_results_apart(engine, tmp_path, monkeypatch):
    """An untrusted session reads source only: its lookups (execute=False) never reach a
    result stored by a check that ran the code."""
    from atenlint.engine import Engine

    monkeypatch.setenv("ATENLINT_CACHE_DIR", str(tmp_path / "cache"))
    keeping = Engine(engine.pool, SettingsResolver())
    assert keeping.result_cache(True) is None  # results are kept only when asked
    keeping.persist_results()
    executed, source_only = keeping.result_cache(True), keeping.result_cache(False)
    assert executed is not None and source_only is not None
    assert executed.run_key != source_only.run_key and not source_only.execute
    assert keeping.result_cache(True) is executed
    assert executed.directory == str(tmp_path / "cache" / "results")
