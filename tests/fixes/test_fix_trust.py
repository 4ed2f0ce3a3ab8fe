"""Quick fixes a user can apply blindly, and the ones that say why they cannot be: a rewrite
that bakes in the traced input size is never preferred, says its condition in its title and
is applied by `--fix` only with `--unsafe-fixes`; the warning filter says it silences torch's
runtime warning (not the lint), names what torch prints, and is never listed first."""

from __future__ import annotations

from fixes_support import finding_for_call, fixes_of
from lsprotocol import types

from atenlint.fixes.apply import choose
from atenlint.lsp import convert
from atenlint.sourcetext import Range

HEADER = "import torch\nimport torch.nn.functional as F\n\n\n"
POOL = HEADER + "def f(feats):\n    return F.adaptive_avg_pool3d(feats, (2, 8, 8))\n"
CALL = "F.adaptive_avg_pool3d(feats, (2, 8, 8))"
TRACED = {"arg_shapes": {"self": [1, 3, 4, 16, 16]}}


def _pool_finding():
    finding = finding_for_call(POOL, CALL, "adaptive-avg-pool3d-avg-pool3d", data=dict(TRACED))
    fixes_of(POOL, finding)
    return finding


def test_a_size_dependent_rewrite_says_so_and_is_not_safe():
    finding = _pool_finding()
    fix = next(f for f in finding.fixes if f["id"] == "adaptive-avg-pool3d-avg-pool3d")
    assert fix["safe"] is False and fix["exact"] is True
    assert "F.avg_pool3d(feats, (2, 2, 2))" in fix["title"]
    assert "only for 4×16×16 inputs" in fix["title"] and "output shape changes" in fix["title"]
    assert not convert.is_preferred_fix(fix)
    chosen = {f["id"]: True for _, f in choose([finding], unsafe=False)}
    assert "adaptive-avg-pool3d-avg-pool3d" not in chosen  # --fix alone never applies it
    assert next(f["id"] for _, f in choose([finding], unsafe=True)) in (
        "adaptive-avg-pool3d-avg-pool3d",
        "adaptive-pool3d-cpu-round-trip",
    )


def test_the_editor_prefers_only_what_holds_for_every_input_and_lists_silencing_last():
    finding = _pool_finding()
    data = convert.diagnostic_data(finding)
    diag = types.Diagnostic(
        range=types.Range(types.Position(5, 11), types.Position(5, 11 + len(CALL))),
        message="m",
        code="MPS001",
        source="atenlint",
        data=data,
    )
    actions = convert.code_actions("file:///virtual/case.py", POOL, [diag], None, convert.Encoding(), [data])
    titles = [a.title for a in actions]
    pool = next(a for a in actions if "avg_pool3d" in a.title and "only for" in a.title)
    assert not pool.is_preferred
    assert all(not a.is_preferred for a in actions if "only for" in a.title)
    silence = [i for i, t in enumerate(titles) if t.startswith("Silence")]
    assert (
        silence
        and min(silence) > 0
        and all(i > titles.index(t) for i in silence for t in titles if t.startswith("Ignore"))
    )
    fix_all = convert.fix_all_action(
        "file:///virtual/case.py", convert.SourceText(POOL, "/virtual/case.py"), [data], convert.Encoding()
    )
    assert fix_all is None or all(
        "avg_pool3d" not in e.new_text for e in fix_all.edit.changes["file:///virtual/case.py"]
    )


def test_the_warning_filter_names_what_torch_prints_and_says_it_is_not_the_lint():
    source = HEADER + "def f(a):\n    return torch.linalg.svdvals(a)\n"
    finding = finding_for_call(source, "torch.linalg.svdvals(a)", "linalg-cpu-round-trip", ops=["aten::_linalg_svd.U"])
    fixes_of(source, finding)
    silence = next(f for f in finding.fixes if f["id"] == "silence-mps-fallback-warning")
    assert "runtime" in silence["title"] and "not this lint" in silence["title"]
    (filters,) = [e["newText"] for e in silence["edits"] if "filterwarnings" in e["newText"]]
    assert "aten::_linalg_svd\\.U" in filters  # torch's warning names the .out overload
    assert "'aten::linalg_svd'" not in filters
    ranges = [Range.from_json(e["range"]) for e in silence["edits"]]
    assert all(r.start.line < 5 for r in ranges)  # at the top of the module, not in the call
