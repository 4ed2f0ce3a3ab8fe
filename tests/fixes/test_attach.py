"""When a rewrite is offered and when it is not, and what its edits look like.

Each test builds the finding the engine would report at one call and asks the catalog for
its fixes (no capture needed): the conditions, the refusals and the edit shapes are all
decided from the source text and the finding's data.
"""

from __future__ import annotations

import ast

import pytest
from fixes_support import apply_text, finding_for_call, fixes_of

from atenlint.fixes.attach import build_rewrite, target_matches
from atenlint.fixes.callsite import FileContext
from atenlint.fixes.model import Rewrite
from atenlint.sourcetext import SourceText

HEADER = "import torch\nimport torch.nn.functional as F\n\n\n"


def offered(source: str, call: str, entry: str, **finding) -> dict | None:
    found = finding_for_call(source, call, entry, **finding)
    return next((f for f in fixes_of(source, found) if f["id"] == entry), None)


def rewritten(source: str, call: str, entry: str, **finding) -> str:
    fix = offered(source, call, entry, **finding)
    assert fix is not None, f"{entry} not offered for {call}"
    result = apply_text(source, fix)
    ast.parse(result)
    return result


# -- offered ---------------------------------------------------------------------------


def test_a_fix_is_json_with_minimal_edits():
    source = HEADER + "def f(x, i):\n    return torch.take(x, i).sum()  # gather\n"
    fix = offered(source, "torch.take(x, i)", "take-flat-index")
    assert set(fix) == {"id", "title", "kind", "exact", "approximation", "safe", "condition", "edits", "description"}
    assert (fix["kind"], fix["exact"], fix["approximation"]) == ("rewrite", True, None)
    assert (fix["safe"], fix["condition"]) == (True, None)  # holds for every input
    assert fix["title"] == "Index the flattened tensor: `x.reshape(-1)[i]`"
    assert fix["edits"] == [
        {
            "range": {"start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 27}},
            "newText": "x.reshape(-1)[i]",
        }
    ]
    assert "Exact" in fix["description"] and "Checked by atenlint's tests" in fix["description"]


def test_multi_line_calls_in_a_crlf_file_with_wide_characters():
    source = HEADER.replace("\n", "\r\n") + (
        "def f(x, i):\r\n    s = '𝄞'; y = torch.take(\r\n        x,\r\n        i,\r\n    )\r\n    return y\r\n"
    )
    result = rewritten(source, "torch.take(\r\n        x,\r\n        i,\r\n    )", "take-flat-index")
    assert "s = '𝄞'; y = x.reshape(-1)[i]\r\n    return y\r\n" in result
    fix = offered(source, "torch.take(\r\n        x,\r\n        i,\r\n    )", "take-flat-index")
    # The range starts after the clef: two UTF-16 units for one character.
    assert fix["edits"][0]["range"]["start"] == {"line": 5, "character": 18}


def test_parentheses_are_added_around_the_whole_replacement_when_the_context_needs_them():
    power = Rewrite(
        id="take-times-two",
        title="t",
        targets=("mps",),
        ops=("aten::take",),
        functions=("torch.take",),
        signature="input, index",
        template="{input}.reshape(-1)[{index}] * 2",
        exact=True,
        why="w",
        equivalence="e",
    )
    source = HEADER + "def f(x, i):\n    return torch.take(x, i).sum()\n"
    finding = finding_for_call(source, "torch.take(x, i)", "take-flat-index")
    file = FileContext.build(SourceText(source, finding.abs_path))
    fix = build_rewrite(power, finding, file, {})
    assert "return (x.reshape(-1)[i] * 2).sum()" in apply_text(source, fix)


def test_a_missing_import_is_added_and_an_alias_is_used():
    source = "import torch\n\n\ndef f(p):\n    return torch.special.ndtri(p)\n"
    assert rewritten(source, "torch.special.ndtri(p)", "special-ndtri-erfinv") == (
        "import torch\nimport math\n\n\ndef f(p):\n    return torch.erfinv(2 * p - 1) * math.sqrt(2.0)\n"
    )
    aliased = "import math as m\nimport torch\n\n\ndef f(p):\n    return torch.special.ndtri(p)\n"
    assert "torch.erfinv(2 * p - 1) * m.sqrt(2.0)" in rewritten(
        aliased, "torch.special.ndtri(p)", "special-ndtri-erfinv"
    )


def test_torch_is_imported_when_only_a_function_was():
    source = "from torch import heaviside\n\n\ndef f(x, v):\n    return heaviside(x, v)\n"
    assert rewritten(source, "heaviside(x, v)", "heaviside-where") == (
        "from torch import heaviside\nimport torch\n\n\ndef f(x, v):\n"
        "    return torch.where(x == 0, v, (x > 0).to(x.dtype))\n"
    )


def test_a_module_name_used_as_a_local_is_not_shadowed_by_the_rewrite():
    source = "import torch\n\n\ndef f(p, math):\n    return torch.special.ndtri(p) + math\n"
    assert offered(source, "torch.special.ndtri(p)", "special-ndtri-erfinv") is None


def test_dtype_recorded_by_the_capture_satisfies_the_condition():
    source = HEADER + "def f(dt):\n    return torch.logspace(0, 1, 5, dtype=dt)\n"
    assert offered(source, "torch.logspace(0, 1, 5, dtype=dt)", "logspace-pow-linspace") is None
    fix = offered(source, "torch.logspace(0, 1, 5, dtype=dt)", "logspace-pow-linspace", data={"args": {"dtype": 7}})
    assert "torch.linspace(0, 1, 5, dtype=dt)" in apply_text(source, fix)
    integer = offered(source, "torch.logspace(0, 1, 5, dtype=dt)", "logspace-pow-linspace", data={"args": {"dtype": 4}})
    assert integer is None


def test_shapes_from_a_trace_enable_the_pool_rewrite():
    source = HEADER + "def f(x):\n    return F.adaptive_avg_pool3d(x, (2, None, 4))\n"
    call = "F.adaptive_avg_pool3d(x, (2, None, 4))"
    assert offered(source, call, "adaptive-avg-pool3d-avg-pool3d") is None
    shaped = rewritten(source, call, "adaptive-avg-pool3d-avg-pool3d", data={"arg_shapes": {"self": [1, 3, 4, 6, 8]}})
    assert "return F.avg_pool3d(x, (2, 1, 2))" in shaped
    assert (
        offered(source, call, "adaptive-avg-pool3d-avg-pool3d", data={"arg_shapes": {"self": [1, 3, 5, 6, 8]}}) is None
    )  # 5 is not a multiple of 2


def test_round_trips_mark_the_line_and_merge_into_an_existing_directive():
    source = HEADER + "def f(a):\n    return torch.linalg.svdvals(a)  # atenlint: ignore[aten::take]\n"
    result = rewritten(source, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"])
    assert result.endswith("torch.linalg.svdvals(a.cpu()).to(a.device)  # atenlint: ignore[aten::take, MPS001]\n")
    plain = HEADER + "def f(a):\n    return torch.linalg.svdvals(a)  # spectral norm\n"
    assert rewritten(plain, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"]).endswith(
        "# spectral norm  # atenlint: ignore[MPS001] runs on the CPU on purpose\n"
    )


def test_round_trips_take_a_field_of_a_named_tuple():
    source = HEADER + "def f(x):\n    return x.mode(-1).indices\n"
    assert rewritten(source, "x.mode(-1)", "mode-cpu-round-trip", ops=["aten::mode"]).endswith(
        "return x.cpu().mode(-1).indices.to(x.device)  # atenlint: ignore[MPS001] runs on the CPU on purpose\n"
    )


def test_a_dropped_keyword_takes_its_comma():
    source = (
        HEADER
        + "def f(x):\n    return F.interpolate(\n        x,\n        antialias=True,\n        size=4,\n        mode='bicubic',\n    )\n"
    )
    call = source[source.index("F.interpolate(") : source.rindex(")") + 1]
    result = rewritten(
        source,
        call,
        "interpolate-bicubic-without-antialias",
        ops=["aten::_upsample_bicubic2d_aa.vec"],
        data={"torch": "2.7.0"},
    )
    assert "F.interpolate(\n        x,\n        size=4,\n        mode='bicubic',\n    )" in result
    first = HEADER + "def f(x):\n    return F.interpolate(antialias=True, input=x, size=4, mode='bicubic')\n"
    assert "F.interpolate(input=x, size=4, mode='bicubic')" in rewritten(
        first,
        "F.interpolate(antialias=True, input=x, size=4, mode='bicubic')",
        "interpolate-bicubic-without-antialias",
        ops=["aten::_upsample_bicubic2d_aa.vec"],
        data={"torch": "2.7.0"},
    )


# -- refused -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, call, entry, finding",
    [
        # An argument written several times must be a name or attribute.
        ("return torch.heaviside(x.abs(), v)", "torch.heaviside(x.abs(), v)", "heaviside-where", {}),
        # A comment between the arguments would be lost.
        ("return torch.take(x,  # table\n        i)", "torch.take(x,  # table\n        i)", "take-flat-index", {}),
        ("return torch.heaviside(x, v, out=v)", "torch.heaviside(x, v, out=v)", "heaviside-where", {}),
        (
            "return torch.logspace(0, 1, 3, requires_grad=True)",
            "torch.logspace(0, 1, 3, requires_grad=True)",
            "logspace-pow-linspace",
            {},
        ),
        (
            "return torch.logspace(0, 1, 3, dtype=torch.int32)",
            "torch.logspace(0, 1, 3, dtype=torch.int32)",
            "logspace-pow-linspace",
            {},
        ),
        ("return torch.poisson(x, generator=g)", "torch.poisson(x, generator=g)", "poisson-cpu-round-trip", {}),
        (
            "return F.interpolate(x, size=4, mode='bicubic', antialias=False)",
            "F.interpolate(x, size=4, mode='bicubic', antialias=False)",
            "interpolate-bicubic-without-antialias",
            {"data": {"torch": "2.7"}},
        ),
        # A bicubic antialias finding on a torch whose MPS lacked plain bicubic too.
        (
            "return F.interpolate(x, size=4, mode='bicubic', antialias=True)",
            "F.interpolate(x, size=4, mode='bicubic', antialias=True)",
            "interpolate-bicubic-without-antialias",
            {"data": {"torch": "2.5"}},
        ),
        # Several tensors come back and the code uses the tuple itself.
        ("return torch.linalg.eigh(x)", "torch.linalg.eigh(x)", "linalg-decomposition-cpu-round-trip", {}),
        # Another argument may be a tensor on the device.
        (
            "return torch.linalg.matrix_rank(x, atol=v)",
            "torch.linalg.matrix_rank(x, atol=v)",
            "linalg-cpu-round-trip",
            {},
        ),
        (
            "return F.adaptive_max_pool3d(x, 2, return_indices=True)",
            "F.adaptive_max_pool3d(x, 2, return_indices=True)",
            "adaptive-pool3d-cpu-round-trip",
            {},
        ),
        # The op is called inside some other library's function of the same name.
        (
            "return x.take(v)",
            "x.take(v)",
            "take-flat-index",
            {"related": [{"path": "/site/packages/tensorlib/ops.py", "line": 3, "character": 0, "message": "m"}]},
        ),
        # A release where take has an MPS kernel.
        ("return torch.take(x, v)", "torch.take(x, v)", "take-flat-index", {"data": {"torch": "2.15.0"}}),
        # A finding for a target the entry does not cover, or with an op it does not answer.
        ("return torch.take(x, v)", "torch.take(x, v)", "take-flat-index", {"target": "onnx"}),
        ("return torch.take(x, v)", "torch.take(x, v)", "take-flat-index", {"ops": ["aten::take", "aten::mode"]}),
    ],
)
def test_not_offered(body, call, entry, finding):
    source = HEADER + f"def f(x, v, i, g):\n    {body}\n"
    assert offered(source, call, entry, **finding) is None


def test_a_pool_module_returning_indices_is_not_rewritten():
    source = HEADER + (
        "import torch.nn as nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.pool = nn.AdaptiveMaxPool3d(2, return_indices=True)\n"
        "        self.plain = nn.AdaptiveMaxPool3d(2)\n\n    def forward(self, x):\n"
        "        return self.pool(x), self.plain(x)\n"
    )
    shapes = {"data": {"arg_shapes": {"self": [1, 2, 4, 4, 4]}}, "ops": ["aten::adaptive_max_pool3d.out"]}
    for entry in ("adaptive-pool3d-cpu-round-trip", "adaptive-max-pool3d-max-pool3d"):
        assert offered(source, "self.pool(x)", entry, **shapes) is None
        assert offered(source, "self.plain(x)", entry, **shapes) is not None


def test_the_line_directive_is_refused_when_another_finding_shares_the_line():
    from fixes_support import Sources

    from atenlint.fixes import attach_fixes

    source = HEADER + "def f(a):\n    return torch.linalg.svdvals(a), torch.take(a, a)\n"
    svd = finding_for_call(source, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"])
    take = finding_for_call(source, "torch.take(a, a)", "take-flat-index")
    attach_fixes([svd, take], Sources({svd.abs_path: source}))
    assert "linalg-cpu-round-trip" not in [f["id"] for f in svd.fixes]
    assert "take-flat-index" in [f["id"] for f in take.fixes]


def test_a_backslash_continued_line_gets_no_directive():
    source = HEADER + "def f(a):\n    y = torch.linalg.svdvals(a) + \\\n        1\n    return y\n"
    assert offered(source, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"]) is None


def test_targets_with_an_opset_match_their_family():
    assert target_matches(("onnx",), "onnx:17") and target_matches(("onnx",), "onnx")
    assert not target_matches(("onnx",), "onnxruntime") and not target_matches(("mps",), None)


def test_a_line_ending_inside_a_string_gets_no_directive():
    source = HEADER + 'def f(a):\n    return torch.linalg.svdvals(a), """note\n    more"""\n'
    assert offered(source, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"]) is None


def test_a_failing_fix_costs_only_that_fix(monkeypatch):
    from fixes_support import Sources

    from atenlint.fixes import attach, attach_fixes

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setitem(attach.BUILDERS, "explain_mps_fallback", broken)
    source = HEADER + "def f(x, i):\n    return torch.take(x, i)\n"
    finding = finding_for_call(source, "torch.take(x, i)", "take-flat-index")
    messages = []
    attach_fixes([finding], Sources({finding.abs_path: source}), log=messages.append)
    ids = [fix["id"] for fix in finding.fixes]
    assert "take-flat-index" in ids and "enable-mps-fallback" not in ids
    assert len(messages) == 1 and "enable-mps-fallback" in messages[0] and "boom" in messages[0]


def test_a_constant_the_capture_recorded_is_not_a_tensor():
    source = HEADER + "def f(a, d):\n    return torch.linalg.matrix_norm(a, ord=2, dim=d)\n"
    call = "torch.linalg.matrix_norm(a, ord=2, dim=d)"
    assert offered(source, call, "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"]) is None
    assert (
        offered(source, call, "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"], data={"args": {"dim": [-2, -1]}})
        is not None
    )
