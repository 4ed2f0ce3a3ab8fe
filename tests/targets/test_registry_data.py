"""Registry data is never guessed: a read that fails is tried once more, then atenlint
reports its own failure (RegistryUnavailable) instead of judging against nothing."""

from __future__ import annotations

import sys

import pytest

from atenlint.config import Settings
from atenlint.probe import registries as probe
from atenlint.targets import build_target, build_targets
from atenlint.targets.registry_data import RegistryUnavailable, load
from atenlint.worker.pool import RequestError

TABLES = {
    "core_aten": {"available": True, "core": ["aten::relu"], "view_copy": []},
    "onnx_torchscript": {"available": True, "ops": {"aten::relu": [9]}, "default_opset": 17},
    "onnx_dynamo": {"available": False, "reason": "onnxscript is not installed"},
    "executorch": {"available": False, "reason": "executorch is not installed"},
    "coreml": {"available": True, "version": "9.0", "ops": ["aten::relu"], "library_ops": []},
}


class ProbePool:
    """Answers `target_data` as the worker does: versions in process, the tables from the
    probe's child process (which `dying` makes exit) or from `tables`; an exception in the
    handler reaches the parent as a RequestError."""

    def __init__(self, tables=None, failures=0):
        self.tables = list(tables or [])
        self.failures = failures
        self.reads = 0

    def request(self, method, params, timeout):
        assert method == "target_data"
        if params.get("versions_only"):
            return probe.versions()
        self.reads += 1
        try:
            if self.reads <= self.failures:
                return probe.tables_in_subprocess(timeout=60)
            return dict(self.tables.pop(0), versions=probe.versions())
        except Exception as error:  # noqa: BLE001 - the worker answers any handler error so
            raise RequestError({"message": f"{type(error).__name__}: {error}"}) from None


@pytest.fixture
def dying(tmp_path, monkeypatch):
    monkeypatch.setenv("ATENLINT_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'Killed' >&2\nexit 137\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(script))


def test_a_probe_that_fails_once_is_read_again(dying):
    pool = ProbePool([TABLES], failures=1)
    data = load(pool)
    assert pool.reads == 2 and data["core_aten"]["core"] == ["aten::relu"]


def test_a_probe_that_fails_twice_is_atenlints_own_failure(dying):
    pool = ProbePool([TABLES], failures=2)
    with pytest.raises(RegistryUnavailable) as failure:
        load(pool)
    assert pool.reads == 2
    assert "exit status 137" in failure.value.cause and "Killed" in failure.value.cause


def test_a_table_that_failed_is_never_judged_with_nor_cached(engine, dying):
    broken = dict(TABLES, coreml={"available": False, "failed": True, "reason": "ImportError: libcoremlpython"})
    pool = ProbePool([broken, broken, TABLES])
    data = load(pool)
    assert pool.reads == 2 and data["coreml"]["failed"]  # read again once, failed again
    with pytest.raises(RegistryUnavailable) as failure:
        build_targets(Settings(targets=("onnx:17", "coreml")), engine.native, engine.hello, _Returning(data))
    assert failure.value.target == "coreml" and "libcoremlpython" in failure.value.cause
    # Nothing was cached: the next run reads the tables again (and gets them).
    assert load(pool)["coreml"]["available"] and pool.reads == 3


def test_executorch_is_never_judged_against_an_empty_allow_list(engine):
    with pytest.raises(RegistryUnavailable):
        build_target("executorch", Settings(targets=("executorch",)), engine.native, engine.hello, None)


def test_an_installed_coremltools_is_never_told_to_be_installed(engine):
    unavailable = {"available": False, "reason": "a capability this torch lacks"}
    coreml = build_target("coreml", Settings(targets=("coreml",)), engine.native, engine.hello, {"coreml": unavailable})
    [note] = coreml.class_results({"name": "Net"})
    assert "pip install" not in note.message


class _Returning:
    def __init__(self, data):
        self.data = data

    def request(self, method, params, timeout):
        return probe.versions() if params.get("versions_only") else self.data
