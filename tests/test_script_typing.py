"""An int where TorchScript wants a float (`F.interpolate(x, scale_factor=2)`): Python and
every exporter accept it, so atenlint neither notes it on the class nor loses the call."""

from __future__ import annotations

import ast
import textwrap

import torch.nn.functional as F

from atenlint.config import Settings
from atenlint.script_typing import only_int_for_float, widen_int_literals, widen_int_literals_by_types

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Up(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode="bicubic", antialias=True)


    class Pairs(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=(2, 3))


    class Broken(nn.Module):
        def forward(self, x):
            return torch.nonexistent_op(x)
""")


def test_only_an_int_for_a_float_is_recognised():
    refusal = "Expected a value of type 'Optional[float]' for argument 'scale_factor' but instead found type 'int'."
    pair = (
        "Expected a value of type 'Optional[List[float]]' for argument 'scale_factor' but instead found "
        "type 'Tuple[int, int]'."
    )
    tensor = "Expected a value of type 'Tensor' for argument 'input' but instead found type 'int'."
    assert only_int_for_float(refusal) and only_int_for_float(refusal + "\n" + pair)
    assert not only_int_for_float(refusal + "\n" + tensor) and not only_int_for_float("")


def test_int_literals_are_widened_only_where_a_float_is_annotated():
    call = ast.parse("F.interpolate(x, 4, 2, 'nearest')", mode="eval").body
    widened = widen_int_literals(call, F.interpolate)
    assert ast.unparse(widened) == "F.interpolate(x, 4, 2.0, 'nearest')"  # size stays an int
    keyword = ast.parse("F.interpolate(x, scale_factor=(2, 3))", mode="eval").body
    assert ast.unparse(widen_int_literals(keyword, F.interpolate)) == "F.interpolate(x, scale_factor=(2.0, 3.0))"
    assert widen_int_literals(ast.parse("F.interpolate(x, scale_factor=2.0)", mode="eval").body, F.interpolate) is None


def test_builtins_are_widened_by_their_schema_types():
    # F.scaled_dot_product_attention is a builtin: no Python signature, typed by its schema.
    call = ast.parse("F.scaled_dot_product_attention(q, k, v, None, 0, dropout_p=0)", mode="eval").body
    widened = widen_int_literals_by_types(
        call, ["Tensor", "Tensor", "Tensor", "Optional[Tensor]", "float"], {"dropout_p": "float"}
    )
    assert ast.unparse(widened) == "F.scaled_dot_product_attention(q, k, v, None, 0.0, dropout_p=0.0)"
    assert widen_int_literals_by_types(call, ["Tensor"] * 5, {"dropout_p": "int"}) is None


def test_no_note_on_the_class_and_the_call_is_still_judged(engine, tmp_path):
    path = tmp_path / "up.py"
    path.write_text(SOURCE)
    # Captured for the torchscript target (beside mps): the worker then always asks
    # torch.jit.script, also for a class it traces with inferred inputs.
    settings = Settings(targets=("mps", "torchscript"))
    capture = engine.capture(str(path), settings=settings)
    ops = {cls["name"]: {op["op"] for op in cls["ops"]} for cls in capture.classes}
    # The call is kept (by the static replay, or a trace where inputs could be inferred).
    assert any(op.startswith("aten::_upsample_bicubic2d_aa") for op in ops["Up"])
    assert any(op.startswith("aten::upsample_nearest2d") for op in ops["Pairs"])
    notes = [f for f in capture.module_findings if f.code == "ATL004"]
    # A real TorchScript failure is still said; the int-for-float one is not.
    assert [f.data.get("class") for f in notes] == ["Broken"]
    findings = engine.findings([capture])
    assert {f.message.split("`")[1] for f in findings if f.code == "TS001"} == {"Up", "Pairs", "Broken"}
