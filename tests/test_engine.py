"""The analysis core end to end: editor buffers, huge files, coverage of helper classes."""

from __future__ import annotations

import os
import textwrap

from atenlint.config import SettingsResolver
from torch_facts import mps_missing

# forward calls an op with no MPS kernel in the installed torch (torch_facts).
_MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            return {call}
""").lstrip()


def model() -> str:
    return _MODEL.format(call=mps_missing().call.call("x"))


def findings_for(engine, path, text=None):
    engine.resolver = SettingsResolver()
    capture = engine.capture(str(path), text=text)
    return engine.findings([capture])


def test_the_buffer_text_is_analysed_not_the_disk(engine, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(model())
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]
    unsaved = model().replace(mps_missing().call.call("x"), "x.relu()")
    assert findings_for(engine, path, text=unsaved) == []
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]  # the disk still has the old text


def test_a_ten_thousand_line_file(engine, tmp_path):
    filler = "".join(f"CONSTANT_{i} = {i}\n" for i in range(10_000 - 8))
    path = tmp_path / "huge.py"
    path.write_text(filler + model())
    (finding,) = findings_for(engine, path)
    assert finding.range.start.line == 10_000 - 8 + 6


def test_helper_classes_used_by_a_built_model_are_not_reported_as_unbuildable(engine, tmp_path):
    path = tmp_path / "layers.py"
    path.write_text(
        textwrap.dedent("""
        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.lin = nn.Linear(width, width)

            def forward(self, x):
                return {call}


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(8)

            def forward(self, x):
                return self.block(x)
    """)
        .lstrip()
        .format(call=mps_missing().call.call("self.lin(x)"))
    )
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]


def test_findings_in_files_outside_the_checked_one_are_located_there(engine, tmp_path):
    call = mps_missing().call.call("x")
    (tmp_path / "helpers.py").write_text(f"import torch\n\n\ndef gate(x):\n    return {call}\n")
    (tmp_path / "model.py").write_text(
        "import torch.nn as nn\nfrom helpers import gate\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return gate(x)\n"
    )
    (finding,) = findings_for(engine, tmp_path / "model.py")
    assert os.path.basename(finding.abs_path) == "helpers.py" and finding.range.start.line == 4


def test_a_syntax_error_in_an_imported_file_is_placed_at_the_import(engine, tmp_path):
    (tmp_path / "broken_helper.py").write_text("x = 1\n\n\n\n\n\n\n\n\ndef f(:\n    pass\n")
    path = tmp_path / "uses_broken.py"
    path.write_text(
        "import torch.nn as nn\nimport broken_helper\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n"
    )
    (finding,) = [f for f in findings_for(engine, path) if f.code == "ATL002"]
    assert finding.range.start.line == 1  # `import broken_helper`, not line 10 of the other file


# -- the fast targets first (issue 10) ---------------------------------------------------------


class _PartialPool:
    """The real pool's answers, with the full answer also offered as the partial one: the
    engine must judge a partial capture by the dispatcher-view targets only, whatever views
    its trees hold."""

    def __init__(self, real):
        self.real = real
        self.partials = 0

    def warm(self):
        return self.real.warm()

    def request(self, method, params, timeout, on_partial=None):
        answer = self.real.request(method, params, timeout)
        if on_partial is not None:
            self.partials += 1
            on_partial(dict(answer, partial=True))
        return answer


def _two_speed_workspace(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps", "onnx:17"]\n')
    path = tmp_path / "model.py"
    path.write_text(model())
    return path


def test_a_partial_capture_is_judged_by_the_fast_targets_only(engine, tmp_path):
    from atenlint.engine import Engine

    path = _two_speed_workspace(tmp_path)
    pool = _PartialPool(engine.pool)
    two_speed = Engine(pool, SettingsResolver())
    early = []
    capture = two_speed.capture(str(path), on_partial=early.append)
    (partial,) = early
    assert partial.partial and partial.views == frozenset({"dispatch"}) and not capture.partial
    assert {f.target for f in two_speed.findings([partial]) if f.target} == {"mps"}
    assert "mps" in {f.target for f in two_speed.findings([capture]) if f.target}
    assert [t.name for t in two_speed.judging_targets(partial)] == ["mps"]
    assert {t.name for t in two_speed.judging_targets(capture)} == {"mps", "onnx:17"}
    assert [t.name for t in two_speed.fast_targets(capture.settings)] == ["mps"]


def test_no_partial_is_asked_for_when_every_target_is_fast(engine, tmp_path):
    from atenlint.engine import Engine

    path = tmp_path / "model.py"
    path.write_text(model())
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n')
    pool = _PartialPool(engine.pool)
    early = []
    Engine(pool, SettingsResolver()).capture(str(path), on_partial=early.append)
    assert early == [] and pool.partials == 0


def test_the_worker_sends_the_dispatch_view_before_the_full_answer(engine, tmp_path):
    """End to end through the real worker: one import, the partial answer first."""
    path = _two_speed_workspace(tmp_path)
    engine.resolver = SettingsResolver()
    early = []
    engine.capture(str(path), on_partial=early.append)
    (partial,) = early
    assert partial.views == frozenset({"dispatch"})
    assert {f.target for f in engine.findings([partial]) if f.target} == {"mps"}
    assert all(set(o.trees) <= {"dispatch"} for o in partial.occurrences)


def test_a_worker_that_cannot_start_fails_the_run_once_not_each_file(tmp_path):
    """check_paths starts the workers while it finds the files, then waits for them: a
    start failure is raised from the run (the CLI's one clear message), not filed per file."""
    import pytest

    from atenlint.engine import Engine
    from atenlint.worker.pool import WorkerFailure

    class NoInterpreter:
        warmed = 0

        def warm(self):
            self.warmed += 1
            raise WorkerFailure("start", "cannot start /nonexistent/python3")

    for index in range(3):
        (tmp_path / f"model_{index}.py").write_text(model())
    pool = NoInterpreter()
    with pytest.raises(WorkerFailure, match="nonexistent"):
        Engine(pool, SettingsResolver()).check_paths([str(tmp_path)])
    assert pool.warmed == 1


def test_a_module_named_like_its_folder_imports_its_own_package(engine, tmp_path):
    """`mypkg/mypkg.py` importing `mypkg.layers` (no __init__.py anywhere) is imported as
    Python imports it from the project root, so its class is run, not read from source."""
    from atenlint.pipeline import check_paths

    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n')
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "layers.py").write_text("import torch\n\n\ndef act(x):\n    return torch.special.ndtri(x)\n")
    (tmp_path / "mypkg" / "mypkg.py").write_text(
        "import torch.nn as nn\nfrom mypkg.layers import act\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return act(x)\n"
    )
    engine.resolver = SettingsResolver()
    report = check_paths(engine, [str(tmp_path / "mypkg" / "mypkg.py")])
    assert not [f.message for f in report.findings if f.code == "ATL002"]
    assert report.by_capture["static"] == 0 and report.classes == 1
    assert [f.code for f in report.findings] == ["MPS001"]


def test_warm_asks_each_worker_for_the_targets_views_dispatcher_first(engine, tmp_path):
    """`warm` is answered at once with the views still to warm, the dispatcher view (the fast
    targets' squiggles) ahead of the export toolchains'; after a file's analysis that
    needed them all (the CLI's: no partial answer), every one is warm in the zygote."""
    from atenlint.worker.protocol import check_warm_answer, warm_params

    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["onnx:17", "mps", "torchscript"]\n')
    path = tmp_path / "model.py"
    path.write_text(model())
    engine.resolver = SettingsResolver()
    settings = engine.resolver.for_file(str(path))
    views = {t.tree_view for t in engine.targets_for(settings)}
    assert "dispatch" in views and len(views) > 1
    (answer,) = engine.warm(settings)  # one worker in the test pool: one answer
    assert views <= set(answer["warmed"]) | set(answer["pending"])
    if "dispatch" in answer["pending"]:
        assert answer["pending"][0] == "dispatch"
    capture = engine.capture(str(path))
    assert [f.code for f in engine.findings([capture]) if f.target == "mps"] == ["MPS001"]
    after = check_warm_answer(engine.pool.request("warm", dict(warm_params([])), 60.0))
    assert views <= set(after["warmed"]) and not views & set(after["pending"])


def test_a_file_that_wants_its_fast_answer_first_waits_only_for_the_dispatcher_view(engine, tmp_path):
    """A request with a partial answer (the editor's) needs only the dispatcher view warm
    before its child is forked; its other views are left to warm while no request waits."""
    from atenlint.worker.protocol import check_warm_answer, warm_params

    path = _two_speed_workspace(tmp_path)
    engine.resolver = SettingsResolver()
    early = []
    engine.capture(str(path), on_partial=early.append)
    assert len(early) == 1
    after = check_warm_answer(engine.pool.request("warm", dict(warm_params([])), 60.0))
    assert "dispatch" in after["warmed"]
    assert {"onnx-export", "onnx-jit"} & ({*after["warmed"], *after["pending"]})
