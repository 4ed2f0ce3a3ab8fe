"""Inputs inferred for classes nobody gave any (capture/infer_inputs.py), and how the
capture uses them: traced on the toolchains' own front ends when they run, silently
scripted when they do not, never a finding of their own."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import torch

from atenlint.capture import file_capture
from atenlint.capture.infer_inputs import MAX_CANDIDATES, candidates, evaluate
from atenlint.capture.trace import forward_runs
from support import load_module


def _candidates(tmp_path: Any, source: str, cls: str, name: str) -> list[str]:
    module = load_module(tmp_path, source, name)
    with torch.device("meta"):
        instance = getattr(module, cls)()
    return [c.expression for c in candidates(getattr(module, cls), instance, module)]


def test_the_first_layer_of_the_instance_gives_channels_and_sizes_it_declares(tmp_path: Any) -> None:
    found = _candidates(
        tmp_path,
        """
        import torch.nn as nn

        class Stem(nn.Module):
            def __init__(self, chans=5, image_size=48):
                super().__init__()
                self.image_size = image_size
                self.body = nn.Sequential(nn.Conv2d(chans, 8, 3), nn.ReLU())

            def forward(self, img):
                return self.body(img)
        """,
        "Stem",
        "infer_stem",
    )
    # The declared image size first, then common ones; channels from the built layer.
    assert found[:2] == ["(torch.randn(2, 5, 48, 48),)", "(torch.randn(2, 5, 32, 32),)"]
    assert "(torch.randn(2, 5, 224, 224),)" in found and len(found) == MAX_CANDIDATES


def test_a_parameter_reaches_its_layer_through_activations(tmp_path: Any) -> None:
    """`self.time(self.act(t))`: the SiLU keeps the shape, the Linear says the size; the
    name's convention (one step per batch item) comes after what the layer says."""
    found = _candidates(
        tmp_path,
        """
        import torch.nn as nn

        class ResBlock(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.GroupNorm(4, 16)
                self.conv = nn.Conv2d(16, 16, 3, padding=1)
                self.time = nn.Linear(8, 16)
                self.act = nn.SiLU()

            def forward(self, x, t):
                h = self.conv(self.act(self.norm(x)))
                return h + self.time(self.act(t))[:, :, None, None]
        """,
        "ResBlock",
        "infer_resblock",
    )
    assert found[:2] == [
        "(torch.randn(2, 16, 32, 32), torch.randn(2, 16, 8),)",
        "(torch.randn(2, 16, 32, 32), torch.randn(2, 8),)",
    ]


def test_token_ids_below_the_embeddings_size_and_as_long_as_the_block(tmp_path: Any) -> None:
    found = _candidates(
        tmp_path,
        """
        import torch.nn as nn

        class Config:
            block_size = 24

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.config = Config()
                self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(100, 8)))

            def forward(self, idx, targets=None):
                return self.transformer.wte(idx)
        """,
        "LM",
        "infer_lm",
    )
    assert found == ["(torch.randint(0, 100, (2, 24)),)", "(torch.randint(0, 100, (2, 16)),)"]


def test_parameters_named_by_convention_and_the_signature_suggestion_first(tmp_path: Any) -> None:
    found = _candidates(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Denoiser(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(12, 12)

            def forward(self, x, time, mask):
                return self.proj(x) * time[:, None, None]

        class Hinted(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(12, 4)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.proj(x)
        """,
        "Denoiser",
        "infer_denoiser",
    )
    assert found[0] == "(torch.randn(2, 16, 12), torch.randint(0, 1000, (2,)), None,)"
    assert len(found) <= MAX_CANDIDATES and len(set(found)) == len(found)
    module = load_module(tmp_path, (tmp_path / "infer_denoiser.py").read_text(), "infer_denoiser_again")
    with torch.device("meta"):
        hinted = module.Hinted()
    listed = candidates(module.Hinted, hinted, module)
    assert (listed[0].expression, listed[0].source) == ("torch.randn(1, 12)", "signature")
    assert candidates(module.Hinted, hinted, module) == listed  # a fixed order, every time


def test_what_no_tensor_can_give_gets_no_candidate(tmp_path: Any) -> None:
    source = """
        import torch.nn as nn

        class Varargs(nn.Module):
            def forward(self, *xs):
                return xs[0]

        class Keyword(nn.Module):
            def forward(self, x, *, scale):
                return x * scale

        class Typed(nn.Module):
            def forward(self, batch: dict):
                return batch["x"]
    """
    module = load_module(tmp_path, source, "infer_none")
    for name in ("Varargs", "Keyword", "Typed"):
        cls = getattr(module, name)
        assert candidates(cls, cls(), module) == [], name


def test_a_fake_run_leaves_the_train_state_as_it_was() -> None:
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout())
    model.train()
    assert forward_runs(model, evaluate("(torch.randn(2, 4),)", "meta"))
    assert not forward_runs(model, evaluate("(torch.randn(2, 5),)", "meta"))
    assert all(m.training for m in model.modules())


SOURCE = """
    import torch
    import torch.nn as nn


    class Guessed(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x))


    class Unguessable(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x.view(-1, 7, 8)).softmax(-1)


    class DataDependent(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            y = self.proj(x)
            if y.sum() > 0:
                return y.relu()
            return y


    class Configured(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)
"""

VIEWS = ["dispatch", "jit", "onnx-jit", "export", "executorch-export", "script"]


def _file_request(
    tmp_path: Any, module: str, source: str, classes: dict[str, Any], views: list[str], **more: Any
) -> dict[str, Any]:
    """An `analyse` request for `source`, written as `tmp_path/<module>.py`, on the CPU."""
    path = tmp_path / f"{module}.py"
    path.write_text(source)
    return {
        "path": str(path),
        "module": module,
        "roots": [str(tmp_path)],
        "overlays": {},
        "classes": classes,
        "devices": ["cpu"],
        "views": views,
        **more,
    }


def _capture(tmp_path: Any, infer: bool = True) -> dict[str, Any]:
    classes = {"Guessed": {}, "Unguessable": {}, "DataDependent": {}, "Configured": {"inputs": "torch.randn(3)"}}
    request = _file_request(tmp_path, "inferred_case", textwrap.dedent(SOURCE).lstrip(), classes, VIEWS)
    if not infer:
        request["infer_inputs"] = False
    return {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _capture(tmp_path_factory.mktemp("inferred"))


def test_a_class_without_inputs_is_traced_with_inferred_ones_and_says_so(captured: dict[str, Any]) -> None:
    guessed = captured["Guessed"]
    assert guessed["capture"] == "trace"
    assert guessed["inputs_inferred"] == "(torch.randn(2, 3, 32, 32),)"
    assert set(guessed["covered"]) == {"dispatch", "jit", "onnx-jit", "export", "executorch-export"}
    ops = {e["op"] for e in guessed["ops"]}
    assert "aten::_convolution" in ops or "aten::conv2d" in ops  # the jit view's node
    assert "aten::convolution" in ops  # the export view's node


def test_inferred_inputs_that_fail_fall_back_silently(captured: dict[str, Any]) -> None:
    unguessable = captured["Unguessable"]
    assert unguessable.get("capture") != "trace" and "inputs_inferred" not in unguessable
    assert unguessable["status"] == "ok" and unguessable["ops"]  # scripted, as without inference
    for key in ("trace_error", "graph_errors", "trace_notes"):
        assert key not in unguessable, key


def test_a_front_end_failing_on_inferred_inputs_is_kept_only_where_the_toolchain_fails_whatever_the_values(
    captured: dict[str, Any],
) -> None:
    """A guard on a data-dependent value in the user's code fails the real torch.export for
    any inputs that reach it (it fakifies them): kept, marked as found with the guess (the
    answer makes it a warning, not an error). A failure that may be the guess's is dropped."""
    data_dependent = captured["DataDependent"]
    assert data_dependent["capture"] == "trace" and "inputs_inferred" in data_dependent
    errors = data_dependent["graph_errors"]
    assert errors and {e["view"] for e in errors} <= {"export", "executorch-export"}, errors
    assert all(e["toolchain_fails"] and e["inputs_inferred"] == data_dependent["inputs_inferred"] for e in errors)
    branch = textwrap.dedent(SOURCE).lstrip().splitlines().index("        if y.sum() > 0:") + 1
    assert all(e["site"]["line"] == branch for e in errors), errors
    assert data_dependent["fallback"] == {"export": "script", "executorch-export": "script"}
    assert "dispatch" in data_dependent["covered"] and "export" not in data_dependent["covered"]


def test_configured_inputs_still_decide_and_their_failure_is_reported(captured: dict[str, Any]) -> None:
    configured = captured["Configured"]
    assert "inputs_inferred" not in configured
    assert configured.get("trace_error") or configured.get("graph_errors")


def test_inference_can_be_turned_off(tmp_path: Any) -> None:
    off = _capture(tmp_path, infer=False)
    assert not any("inputs_inferred" in c for c in off.values())
    assert off["Guessed"].get("capture") != "trace"


BUDGET_SOURCE = """
    import torch
    import torch.nn as nn


    class Part(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x).relu()


    class Unscriptable(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.scale = torch.ones(8)  # a plain tensor attribute: TorchScript refuses it as a module

        def forward(self, x):
            return self.proj(x) * (lambda y: y)(self.scale)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.part = Part()
            self.other = Unscriptable()

        def forward(self, x):
            return self.other(self.part(x))
"""


def test_the_model_is_guessed_first_and_its_parts_only_when_they_cannot_be_scripted(tmp_path: Any) -> None:
    request = _file_request(
        tmp_path,
        "budget_case",
        textwrap.dedent(BUDGET_SOURCE).lstrip(),
        {"Part": {}, "Unscriptable": {}, "Model": {}},
        ["dispatch", "export"],
    )
    answer = file_capture.capture_file(request)
    by_name = {c["qualname"]: c for c in answer["classes"]}
    assert [c["qualname"] for c in answer["classes"]] == ["Part", "Unscriptable", "Model"]  # source order
    assert by_name["Model"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    # What the trace ran, as the scripted walk lists it: a part is not "unanalysed".
    assert {"budget_case.Part", "budget_case.Unscriptable"} <= set(by_name["Model"]["submodules"])
    # Part runs inside Model's trace and TorchScript compiles it: scripted, no guess spent.
    assert "inputs_inferred" not in by_name["Part"] and by_name["Part"].get("capture") != "trace"
    # Unscriptable runs inside Model's trace too, but would be read from source: traced.
    assert by_name["Unscriptable"]["capture"] == "trace" and "inputs_inferred" in by_name["Unscriptable"]


def test_a_file_traces_a_bounded_number_of_classes_with_guesses(tmp_path: Any) -> None:
    from atenlint.capture.infer_inputs import INFERRED_CLASSES_PER_FILE

    count = INFERRED_CLASSES_PER_FILE + 2
    source = "import torch.nn as nn\n" + "".join(
        f"\n\nclass Layer{i}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.proj = nn.Linear({i + 2}, 4)\n\n    def forward(self, x):\n        return self.proj(x)\n"
        for i in range(count)
    )
    request = _file_request(tmp_path, "many_case", source, {f"Layer{i}": {} for i in range(count)}, ["dispatch"])
    classes = file_capture.capture_file(request)["classes"]
    guessed = [c["qualname"] for c in classes if "inputs_inferred" in c]
    # The last defined first, the same ones every run.
    assert guessed == [f"Layer{i}" for i in range(count - INFERRED_CLASSES_PER_FILE, count)]
    assert all(c["ops"] for c in classes)  # the others scripted, as before


def test_the_request_sets_the_budget() -> None:
    from atenlint.capture.file_capture import _inference_budget
    from atenlint.capture.infer_inputs import INFERRED_CLASSES_PER_FILE

    default = _inference_budget(True)
    assert default is not None and default.remaining == INFERRED_CLASSES_PER_FILE
    two = _inference_budget(2)
    assert two is not None and two.remaining == 2
    assert _inference_budget(False) is None and _inference_budget(0) is None


def test_every_class_torchscript_refuses_is_traced_whatever_the_budget(tmp_path: Any) -> None:
    """Issue 20: past the file's budget, a class TorchScript cannot compile would be read from
    source only; it gets its own inferred trace instead, outside the count. Here each class
    also needs constructor arguments, guessed: before, such a class was reported as not built."""
    from atenlint.capture.infer_inputs import INFERRED_CLASSES_PER_FILE

    count = INFERRED_CLASSES_PER_FILE + 2
    source = "import torch.nn as nn\n" + "".join(
        f"\n\nclass Layer{i}(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        f"        self.proj = nn.Linear(dim, {i + 2})\n\n"
        # A lambda: TorchScript refuses the class.
        f"    def forward(self, x):\n        return (lambda y: self.proj(y))(x)\n"
        for i in range(count)
    )
    request = _file_request(
        tmp_path, "unscriptable_case", source, {f"Layer{i}": {} for i in range(count)}, ["dispatch", "export", "script"]
    )
    classes = file_capture.capture_file(request)["classes"]
    assert [c["qualname"] for c in classes] == [f"Layer{i}" for i in range(count)]
    for layer in classes:
        assert layer["status"] == "ok" and layer["capture"] == "trace", layer["qualname"]
        assert layer["arguments_inferred"] == f"{layer['qualname']}(dim=64)"
        assert layer["inputs_inferred"] == "(torch.randn(2, 16, 64),)"
        assert {"dispatch", "export"} <= set(layer["covered"])
        # Built with a guess: TorchScript's refusal may be the guess's, so it is no verdict.
        assert "script_error" not in layer
    # Without inference they are what they were: not built (their constructor needs `dim`).
    request["infer_inputs"] = False
    alone = file_capture.capture_file(request)["classes"]
    assert all(c["status"] == "build_failed" and c.get("capture") != "trace" for c in alone)


PAST_BUDGET_SOURCE = """
    import torch.nn as nn


    class Part(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(12, 12)

        def forward(self, x, scale: float = 1.0):
            return (lambda y: self.proj(y) * scale)(x)  # TorchScript refuses the lambda


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(8, 12)
            self.part = Part()

        def forward(self, x):
            return (lambda y: self.part(self.inp(y), scale=2.0))(x)


    class Big(nn.Module):  # TorchScript compiles it, and it holds the most module classes
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)
            self.act = nn.GELU()
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            return self.drop(self.act(self.norm(self.proj(x))))
"""


def test_a_trace_past_the_budget_covers_the_parts_it_runs(tmp_path: Any) -> None:
    """With a budget of one class, Big (the widest) takes it. Model comes past the budget and
    TorchScript refuses it: traced with its own guess, and that run covers Part as a budgeted
    one would: Part (refused too) is traced with the arguments Model's run handed it, not with
    a guess of its own (which would be `(torch.randn(2, 16, 12),)`)."""
    request = _file_request(
        tmp_path,
        "past_budget_case",
        textwrap.dedent(PAST_BUDGET_SOURCE).lstrip(),
        {"Part": {}, "Model": {}, "Big": {}},
        ["dispatch", "export"],
        infer_inputs=1,
    )
    by_name = {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}
    assert by_name["Big"]["capture"] == "trace" and by_name["Big"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    assert by_name["Model"]["capture"] == "trace" and by_name["Model"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    assert "past_budget_case.Part" in by_name["Model"]["submodules"]
    part = by_name["Part"]
    assert part["capture"] == "trace" and part["inputs_inferred"] == "(torch.randn((2, 16, 12)), 2.0)"
    assert "arguments_inferred" not in part  # its own instance: the arguments fit it


ENCLOSED_SOURCE = """
    import torch
    import torch.nn as nn


    class Mixer(nn.Module):
        def __init__(self, spec):  # nothing guesses `spec`: built only inside Model
            super().__init__()
            self.proj = nn.Linear(spec["width"], spec["width"])

        def forward(self, x, scale: float = 1.0):
            return self.proj(x) * scale


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(8, 12)
            self.mixer = Mixer(self.spec())

        @staticmethod
        def spec():
            return {"width": 12}

        def forward(self, x):
            return self.mixer(self.inp(x), scale=2.0)
"""


def test_a_part_no_guess_builds_is_traced_as_the_enclosing_model_built_and_called_it(tmp_path: Any) -> None:
    """Mixer cannot be built alone; Model's inferred run builds one and hands it a tensor
    and a keyword: the part is traced on that instance with those arguments (written as
    positional ones), and the answer says where the instance came from."""
    request = _file_request(
        tmp_path,
        "enclosed_case",
        textwrap.dedent(ENCLOSED_SOURCE).lstrip(),
        {"Mixer": {}, "Model": {}},
        ["dispatch", "export"],
    )
    by_name = {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}
    assert by_name["Model"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    mixer = by_name["Mixer"]
    assert mixer["capture"] == "trace" and mixer["status"] == "ok" and "build_error" not in mixer
    assert mixer["inputs_inferred"] == "(torch.randn((2, 16, 12)), 2.0)"
    assert mixer["arguments_inferred"] == "Model().mixer"
    assert {"dispatch", "export"} <= set(mixer["covered"])
    # Without the enclosing run (inference off) it is what it was: not built, read from source.
    request["infer_inputs"] = False
    alone = {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}["Mixer"]
    assert alone["status"] == "build_failed" and alone.get("capture") != "trace"


def test_the_arguments_a_submodule_received_are_written_as_one_positional_expression() -> None:
    from atenlint.capture.infer_inputs import call_expression

    class Part(torch.nn.Module):
        def forward(self, x, mask=None, scale=1.0, *, keyword=0):
            return x

    part = Part()
    x = torch.empty(2, 3, device="meta")
    assert call_expression(part, (x,), {}) == "(torch.randn((2, 3)),)"
    # A later keyword fills the defaults before it in; nothing after it is written.
    assert call_expression(part, (x,), {"scale": 0.5}) == "(torch.randn((2, 3)), None, 0.5)"
    ids = torch.empty(4, dtype=torch.int32, device="meta")
    flags = torch.empty(2, 5, dtype=torch.bool, device="meta")
    assert call_expression(part, (ids, flags), {}) == (
        "(torch.randint(0, 2, (4,), dtype=torch.int32), torch.ones((2, 5), dtype=torch.bool))"
    )
    # What no expression can write: a keyword-only parameter, an object, a complex tensor.
    assert call_expression(part, (x,), {"keyword": 1}) is None
    assert call_expression(part, (object(),), {}) is None
    assert call_expression(part, (torch.empty(2, dtype=torch.complex64, device="meta"),), {}) is None
    for written in ("(torch.randn((2, 3)), None, 0.5)", "(torch.randint(0, 2, (4,), dtype=torch.int32),)"):
        assert all(t.device.type == "meta" for t in evaluate(written, "meta") if isinstance(t, torch.Tensor))


def test_a_layer_of_the_projects_own_is_read_from_the_weight_it_keeps(tmp_path: Any) -> None:
    """A weight-normalised convolution written in the project (lucidrains' Karras U-Net):
    its `weight` in torch's `(out, in, *kernel)` layout says the channels and the rank, as
    `in_channels` does for `nn.Conv2d`; a 2-D weight is a linear layer's `(out, in)`."""
    module = load_module(
        tmp_path,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Conv2d(nn.Module):
            def __init__(self, dim_in, dim_out, kernel_size):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(dim_out, dim_in, kernel_size, kernel_size))

            def forward(self, x):
                return F.conv2d(x, F.normalize(self.weight, dim=1), padding="same")

        class Linear(nn.Module):
            def __init__(self, dim_in, dim_out):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(dim_out, dim_in))

            def forward(self, x):
                return F.linear(x, self.weight)

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = Conv2d(6, 8, 3)

            def forward(self, x):
                return self.conv(x)

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = Linear(12, 4)

            def forward(self, features):
                return self.proj(features)
        """,
        "infer_own_layers",
    )
    with torch.device("meta"):
        encoder, head = module.Encoder(), module.Head()
    found = [c.expression for c in candidates(module.Encoder, encoder, module)]
    assert found[0] == "(torch.randn(2, 6, 32, 32),)"
    head_found = [c.expression for c in candidates(module.Head, head, module)]
    assert head_found[0] == "(torch.randn(2, 16, 12),)" and "(torch.randn(2, 12),)" in head_found


def test_the_widest_class_is_guessed_first_wherever_it_is_defined(tmp_path: Any) -> None:
    """The model comes first in the file and its parts after it: it still gets the file's
    first guess (it holds the most module classes), so one inferred trace runs every part
    instead of the budget going to the parts defined last."""
    from atenlint.capture.infer_inputs import INFERRED_CLASSES_PER_FILE

    count = INFERRED_CLASSES_PER_FILE + 1
    parts = "".join(
        f"\n\nclass Part{i}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.proj = nn.Linear(8, 8)\n\n    def forward(self, x):\n        return self.proj(x) + {i}\n"
        for i in range(count)
    )
    model = (
        "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.parts = nn.ModuleList([{', '.join(f'Part{i}()' for i in range(count))}])\n\n"
        "    def forward(self, x):\n        for part in self.parts:\n            x = part(x)\n        return x\n"
    )
    # Model is defined first; its parts are resolved when it is built, after the import.
    classes = {"Model": {}, **{f"Part{i}": {} for i in range(count)}}
    request = _file_request(
        tmp_path, "widest_case", "import torch.nn as nn\n" + model + parts, classes, ["dispatch", "export"]
    )
    by_name = {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}
    assert by_name["Model"]["capture"] == "trace" and by_name["Model"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    # Every part ran inside Model's trace and TorchScript compiles it: scripted, no guess spent.
    assert all("inputs_inferred" not in by_name[f"Part{i}"] for i in range(count))


UNCALLED_SOURCE = """
    import torch
    import torch.nn as nn


    class Used(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)


    class Spare(nn.Module):  # held by Model, never called by it
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x).relu()


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = Used()
            self.spare = Spare()

        def forward(self, x):
            return self.used(x)
"""


def test_a_part_the_model_holds_but_never_calls_is_not_covered_by_its_trace(tmp_path: Any) -> None:
    """Issue 20: Model's inferred trace never reaches Spare's forward, so it judged nothing
    of Spare. Spare goes its own way (here: a guess of its own, traced), and Model's answer
    lists only the part its trace ran; Used, which it ran, stays scripted."""
    request = _file_request(
        tmp_path,
        "uncalled_case",
        textwrap.dedent(UNCALLED_SOURCE).lstrip(),
        {"Used": {}, "Spare": {}, "Model": {}},
        ["dispatch", "script"],
    )
    by_name = {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}
    assert by_name["Model"]["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    assert "uncalled_case.Used" in by_name["Model"]["submodules"]
    assert "uncalled_case.Spare" not in by_name["Model"]["submodules"]
    spare = by_name["Spare"]
    assert spare["capture"] == "trace" and spare["inputs_inferred"] == "(torch.randn(2, 16, 8),)"
    assert any(op["op"].startswith("aten::relu") for op in spare["ops"])
    assert "inputs_inferred" not in by_name["Used"]


def test_the_recorded_check_is_the_eval_phase_the_dispatch_trace_would_record() -> None:
    """Issue 22: inferred inputs' check, recorded, serves as the dispatch trace's eval phase:
    the same ops at the same sites, in the same order, with the same notes; inputs that do
    not fit are refused as `forward_runs` refuses them, with the train state left as it was."""
    from atenlint.capture.trace import recorded_check, trace_ops

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Dropout())
    model.train()
    inputs = evaluate("(torch.randn(2, 4),)", "meta")
    run = recorded_check(model, inputs)
    assert run is not None and run.failure is None and not run.training
    assert all(m.training for m in model.modules())
    once, once_notes = trace_ops(model, inputs, eval_run=run)
    twice, twice_notes = trace_ops(model, inputs)

    def shape(ops: list[Any]) -> list[Any]:
        return [(op.op, op.sites, op.training, op.dispatch, op.dtypes_in, op.arg_shapes) for op in ops]

    assert shape(once) == shape(twice) and once_notes == twice_notes
    assert {op.training for op in once} == {True, False}
    model.train()
    assert recorded_check(model, evaluate("(torch.randn(2, 5),)", "meta")) is None
    assert not forward_runs(model, evaluate("(torch.randn(2, 5),)", "meta"))
    assert all(m.training for m in model.modules())
