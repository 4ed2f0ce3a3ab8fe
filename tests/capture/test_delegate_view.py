"""The delegate views agree with the real `to_edge_transform_and_lower`: on small
hand-written modules (a dtype, a keepdim argument, an op no delegate has, a rank), the
nodes atenlint says a partitioner leaves to the CPU, read on fake tensors, are exactly
those the real lowering, on real tensors, leaves outside its delegate calls."""

from __future__ import annotations

import contextlib
import copy
import gc
import importlib
import inspect
import os
import warnings
from collections import Counter
from typing import Any

import pytest
import torch
from torch import nn

pytest.importorskip("executorch.exir")

from atenlint import torchcompat
from atenlint.capture import delegate_view
from atenlint.capture.decompose import canonical_name
from atenlint.capture.delegate_view import (
    DelegateUnavailable,
    _functional_copy,
    delegate_nodes,
    merged_delegate,
    partitioner,
    preload,
)
from atenlint.capture.graphs import _executorch_decomposition_table, export_graph_ops, on_fake_cpu
from atenlint.probe import registries


class Mixed(nn.Module):
    """A conv block XNNPACK takes; a mean without keepdim (XNNPACK's MeanDimConfig declines
    it); cumsum and sort (no XNNPACK config at all); float64 arithmetic (a dtype it
    declines); a 5-D add."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).relu().mean((2, 3))
        z = torch.cumsum(y, 1)
        s = torch.sort(y, 1)[0][:, :4]
        d = (y[:, :4].to(torch.float64) * 2).float()
        w = (v + 1).sum()
        return self.fc(z) + s + d + w


def _inputs() -> tuple[torch.Tensor, ...]:
    return torch.randn(1, 3, 16, 16), torch.randn(1, 2, 2, 2, 2)


def _real_left(name: str) -> Counter[str]:
    """The op nodes the real lowering keeps outside its delegate calls."""
    to_edge_transform_and_lower = importlib.import_module("executorch.exir").to_edge_transform_and_lower

    module = Mixed().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(module, _inputs(), strict=False)
        lowered = to_edge_transform_and_lower(exported, partitioner=[partitioner(name)])
    left: Counter[str] = Counter()
    for node in lowered.exported_program().graph.nodes:
        # An edge op keeps its aten overload as `_op`; a plain aten op's own `_op` is a builtin.
        target = node.target if isinstance(node.target, torch._ops.OpOverload) else getattr(node.target, "_op", None)
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            left[canonical_name(target)] += 1
    return left


def _atenlint_left(name: str) -> tuple[Counter[str], list[Any]]:
    """The same, as atenlint reads it: meta weights swapped for fake CPU tensors."""
    with torch.device("meta"):
        module = Mixed().eval()
    args = tuple(t.to("meta") for t in _inputs())
    with on_fake_cpu(module, args, {}) as (_mode, fake_args, _kwargs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(module, tuple(fake_args), strict=False)
        nodes = delegate_nodes(exported, name)
    return Counter(n.op for n in nodes if not n.delegated), nodes


# XNNPACK on every run; Vulkan's real lowering serialises its shaders' graph (about 3x
# XNNPACK's time) and Core ML's converts with coremltools, so their agreement runs where the
# real-model suite runs (`=all`).
_DELEGATES = ["xnnpack", "vulkan", "coreml"] if os.environ.get("ATENLINT_DELEGATE_AGREEMENT") == "all" else ["xnnpack"]


@pytest.mark.parametrize("name", _DELEGATES)
def test_undelegated_nodes_agree_with_the_real_lowering(name: str) -> None:
    try:
        ours, nodes = _atenlint_left(name)
    except DelegateUnavailable as error:
        pytest.skip(str(error))
    assert ours == _real_left(name)
    if name == "coreml":
        assert not ours  # coremltools converts every op of the module: Core ML takes it whole
        return
    # The cases the module was written for are among them, with the partitioner's reasons.
    assert {"aten::cumsum", "aten::sort", "aten::mean.dim"} <= set(ours)
    reasons = {n.op: n.reasons for n in nodes if not n.delegated}
    assert reasons["aten::mean.dim"], "the partitioner says why it leaves mean.dim"
    if name == "xnnpack":
        assert "keepdim" in reasons["aten::mean.dim"][0]
        assert any("dtype" in r for n in nodes if n.op == "aten::mul.Tensor" for r in n.reasons)
        # Each node's stack still points at the user's line.
        cumsum = next(n for n in nodes if n.op == "aten::cumsum")
        assert "torch.cumsum" in (cumsum.node.meta.get("stack_trace") or "")


class SpaceToDepth(nn.Module):
    """`pixel_unshuffle`: Core ML's partitioner takes it (coremltools registers a translation),
    which builds an iOS 16 MIL op, so the conversion for the default target (iOS 15) fails."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(12, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(nn.functional.pixel_unshuffle(x, 2)).relu()


class UnsortedTopk(nn.Module):
    """`topk(sorted=False)`: taken, refused by coremltools' translation before iOS 16."""

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        return torch.topk(s, 3, sorted=False)[0] * 2


class Both(nn.Module):
    """Both refusals in one partition, a conv that depends on the first (not judged: the real
    conversion stops before it) and a relu that depends on neither (converts)."""

    def __init__(self) -> None:
        super().__init__()
        self.space = SpaceToDepth()

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return self.space(x).sum() + torch.topk(s, 3, sorted=False)[0].sum() + s.relu().sum()


_CORE_ML_CASES = {
    "SpaceToDepth": (SpaceToDepth, lambda: (torch.randn(1, 3, 8, 8),)),
    "UnsortedTopk": (UnsortedTopk, lambda: (torch.randn(2, 10),)),
}


def _core_ml_nodes(cls: type[nn.Module], inputs: tuple[torch.Tensor, ...]) -> list[Any]:
    with torch.device("meta"):
        module = cls().eval()
    args = tuple(t.to("meta") for t in inputs)
    with on_fake_cpu(module, args, {}) as (_mode, fake_args, _kwargs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(module, tuple(fake_args), strict=False)
        try:
            return delegate_nodes(exported, "coreml")
        except DelegateUnavailable as error:
            pytest.skip(str(error))


@pytest.mark.parametrize("case", sorted(_CORE_ML_CASES))
def test_a_node_core_ml_takes_but_cannot_convert_fails_as_the_real_lowering_does(case: str) -> None:
    """The real `to_edge_transform_and_lower` with the CoreMLPartitioner raises in the backend's
    conversion, with the words atenlint records on that node (taken by the partitioner)."""
    cls, inputs = _CORE_ML_CASES[case]
    nodes = _core_ml_nodes(cls, inputs())
    refused = [n for n in nodes if n.not_converted]
    assert len(refused) == 1 and refused[0].delegated
    to_edge_transform_and_lower = importlib.import_module("executorch.exir").to_edge_transform_and_lower
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(cls().eval(), inputs(), strict=False)
        with pytest.raises(Exception) as raised:  # whatever coremltools raises
            to_edge_transform_and_lower(exported, partitioner=[partitioner("coreml")])
    assert f"{type(raised.value).__name__}: {raised.value}".startswith(refused[0].not_converted)
    assert refused[0].op == {"SpaceToDepth": "aten::pixel_unshuffle", "UnsortedTopk": "aten::topk"}[case]
    assert refused[0].facts()["not_converted"] == refused[0].not_converted


def test_every_refused_node_is_found_and_those_that_depend_on_one_are_not_judged() -> None:
    nodes = _core_ml_nodes(Both, (torch.randn(1, 3, 8, 8), torch.randn(2, 10)))
    assert {n.op for n in nodes if n.not_converted} == {"aten::pixel_unshuffle", "aten::topk"}
    # The conv after pixel_unshuffle is never reached by the real conversion: no claim; the
    # relu beside converts.
    assert all(not n.not_converted for n in nodes if n.op in ("aten::convolution", "aten::relu"))
    assert all(n.delegated for n in nodes if n.op in ("aten::convolution", "aten::relu"))


def test_a_delegate_without_a_backend_check_records_no_conversion() -> None:
    """XNNPACK's preprocess is not run: its nodes carry no conversion verdict."""
    with torch.device("meta"):
        module = SpaceToDepth().eval()
    with on_fake_cpu(module, (torch.randn(1, 3, 8, 8).to("meta"),), {}) as (_m, fake_args, _k):
        exported = torch.export.export(module, tuple(fake_args), strict=False)
        nodes = delegate_nodes(exported, "xnnpack")
    assert nodes and not any(n.not_converted for n in nodes)


def _exported_mixed() -> Any:
    with torch.device("meta"):
        module = Mixed().eval()
    args = tuple(t.to("meta") for t in _inputs())
    with on_fake_cpu(module, args, {}) as (_mode, fake_args, _kwargs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(module, tuple(fake_args), strict=False)


def test_a_worker_that_preloaded_a_delegate_collects_no_composite_ops_in_its_views(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After `preload`, a delegate view asks torch.export's composite-op list only from the
    cache the worker filled before forking: the op registry's state does not move (every op
    loaded, to_edge's kept ops registered), so no child walks the namespaces again."""
    utils = importlib.import_module("torch._export.utils")
    original = utils._collect_all_valid_cia_ops
    walks: list[int] = []

    def counted() -> Any:
        walks.append(1)
        return original()

    monkeypatch.setattr(utils, "_collect_all_valid_cia_ops", counted)
    preload("xnnpack")  # collects it (unless this process's cache already holds this state)
    exported = _exported_mixed()
    walks.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nodes = delegate_nodes(exported, "xnnpack")
    assert nodes and not walks


def test_delegate_views_of_one_program_share_its_functionalisation(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_decompositions({})`, the first step of to_edge, runs once per program however many
    delegate views are asked; each view gets its own copy (to_edge's passes change it), and
    the nodes each view reports are those of executorch functionalising it itself."""
    exported = _exported_mixed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = _functional_copy(exported, partitioner("xnnpack"))
        retraces: list[int] = []
        program_type = type(exported)
        original = program_type.run_decompositions

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            retraces.append(1)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(program_type, "run_decompositions", counted)
        second = _functional_copy(exported, partitioner("vulkan"))
        assert not retraces and first is not second and first.graph_module is not second.graph_module
        assert [str(n.target) for n in first.graph.nodes] == [str(n.target) for n in second.graph.nodes]
        monkeypatch.undo()
        monkeypatch.setattr(delegate_view, "_decomposed_for", lambda *_: None)  # functionalised apart
        shared = [(n.op, n.delegated, n.reasons) for n in delegate_nodes(exported, "xnnpack")]
        monkeypatch.setattr(delegate_view, "_functional_copy", lambda *_: None)  # executorch does it all
        alone = [(n.op, n.delegated, n.reasons) for n in delegate_nodes(exported, "xnnpack")]
    assert shared == alone


def test_several_nodes_at_one_site_are_taken_only_if_all_are() -> None:
    first = merged_delegate(None, {"delegated": True})
    both = merged_delegate({"delegate": first}, {"delegated": False, "reasons": ["invalid dtype"]})
    assert both == {"delegated": False, "reasons": ["invalid dtype"], "nodes": 2, "taken": 1}
    quantized = merged_delegate({"delegate": {"delegated": False, "quantized_only": True}}, {"delegated": True})
    assert quantized["quantized_only"] is True and quantized["taken"] == 1
    # One node the backend cannot convert fails the lowering: the site keeps its words.
    refused = merged_delegate({"delegate": {"delegated": True}}, {"delegated": True, "not_converted": "E: no"})
    assert refused["not_converted"] == "E: no" and refused["delegated"] is True


def test_cached_cia_collection_answers_as_torch_and_sees_new_ops() -> None:
    """The CompositeImplicitAutograd walk answers from its cache exactly what torch's own
    does, and a CIA op registered meanwhile is in the next answer (the key moves)."""
    utils = importlib.import_module("torch._export.utils")
    original = utils._collect_all_valid_cia_ops
    before = original()
    with torchcompat.cia_ops_cached():
        assert utils._collect_all_valid_cia_ops is not original
        assert utils._collect_all_valid_cia_ops() == before
        assert utils._collect_all_valid_cia_ops() == before  # from the cache
        library = torch.library.Library("atenlint_cia_test", "DEF")
        library.define("double(Tensor x) -> Tensor")
        library.impl("double", lambda x: x * 2, "CompositeImplicitAutograd")
        added = torch.ops.atenlint_cia_test.double.default
        assert added in utils._collect_all_valid_cia_ops()
        assert utils._collect_all_valid_cia_ops() == original()
    assert utils._collect_all_valid_cia_ops is original


def test_a_redecomposition_of_an_unchanged_graph_is_skipped_only_when_nothing_is_left() -> None:
    """Inside `redecomposition_skipped`, run_decompositions returns a program in ATen IR
    that calls none of the table's ops as it is; the training IR (not functional yet), or
    a graph with an op of the table, is decomposed as ever."""
    uses_any = importlib.import_module("executorch.exir.graph_module").contains_any_call_fn_target_op

    class Small(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.hardswish(x) + 1

    exported = torch.export.export(Small(), (torch.randn(2, 3),), strict=False)
    table = torchcompat.export_default_decompositions()
    with torchcompat.redecomposition_skipped(uses_any):
        functional = exported.run_decompositions({})  # training IR: never skipped
        assert functional is not exported and torchcompat.is_aten_dialect(functional)
        assert any(n.target == torch.ops.aten.hardswish.default for n in functional.graph.nodes)
        decomposed = functional.run_decompositions(table)  # hardswish is in the table: decomposed
        assert decomposed is not functional
        assert not any(n.target == torch.ops.aten.hardswish.default for n in decomposed.graph.nodes)
        assert decomposed.run_decompositions(table) is decomposed  # nothing of the table is left
    assert decomposed.run_decompositions(table) is not decomposed  # outside, torch retraces


def test_the_edge_dialect_table_parsed_by_libyaml_is_what_ruamel_reads() -> None:
    """The installed executorch's edge.yaml, read through the fast path executorch's import
    takes, is the data ruamel.yaml's own parser gives; outside it, ruamel.yaml is itself."""
    yaml = pytest.importorskip("yaml")
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml: the fast path is not taken")
    from importlib import resources

    from ruamel.yaml import YAML

    from atenlint.capture.delegate_view import _edge_table_parsed_by_libyaml

    text = resources.files("executorch.exir.dialects.edge").joinpath("edge.yaml").read_text(encoding="utf-8")
    original = YAML.load
    with _edge_table_parsed_by_libyaml():
        assert YAML.load is not original
        fast = YAML(typ="safe").load(text)
    assert YAML.load is original
    assert fast == YAML(typ="safe").load(text)


@pytest.mark.parametrize(
    ("text", "alike"),
    [
        ("- inherits: aten::abs\n  type_alias: {T0: [Bool, Float]}\n", True),
        ("key: on\n", False),  # a bool to PyYAML (YAML 1.1), a string to ruamel.yaml (1.2)
        ("key: 0o17\n", False),  # a string to YAML 1.1, an int to 1.2
        ("key: 1e3\n", False),  # a string to YAML 1.1, a float to 1.2
        ("key: '12'\n", False),  # quoted: a string to both, refused all the same (safe side)
        ("key: 12\n", False),
        ("key: ~\n", False),
    ],
)
def test_only_documents_both_yaml_versions_read_alike_take_the_fast_path(text: str, alike: bool) -> None:
    yaml = pytest.importorskip("yaml")
    from ruamel.yaml import YAML

    from atenlint.capture.delegate_view import _reads_alike_in_yaml_1_2

    assert _reads_alike_in_yaml_1_2(yaml.safe_load(text)) is alike
    if not alike:
        return
    assert yaml.safe_load(text) == YAML(typ="safe").load(text)


# -- one decomposition for the plain view and the delegates that keep a fixed list ------------


def _graph_ops(module: nn.Module, inputs: tuple[torch.Tensor, ...], views: tuple[str, ...]) -> dict[str, list[Any]]:
    """export_graph_ops' ops per view, as the worker asks for them (to_edge's table changes
    read from the installed executorch, as the parent reads them)."""
    options = {"executorch_decompositions": registries._executorch_decompositions()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = export_graph_ops(module, inputs, {}, views, options)
    out: dict[str, list[Any]] = {}
    for op in found:
        out.setdefault(op.view, []).append((op.op, op.sites, op.delegate))
    return out


class Recurrent(nn.Module):
    """An LSTM: no `linear` in the exported graph, yet its decomposition calls `linear`,
    which XNNPACK keeps from decomposition."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0].relu()


_FIXED_LIST_CASES = {
    # Vulkan keeps hardswish, upsample_nearest2d and pixel_shuffle: none is reached in Mixed,
    # whose plain program is then Vulkan's too; XNNPACK keeps linear, which Mixed calls, and
    # which the LSTM's decomposition calls: its program is decomposed apart.
    ("vulkan", "Mixed"): (Mixed, _inputs, True),
    ("xnnpack", "Mixed"): (Mixed, _inputs, False),
    ("xnnpack", "Recurrent"): (Recurrent, lambda: (torch.randn(1, 3, 4),), False),
}


@pytest.mark.parametrize(("name", "case"), sorted(_FIXED_LIST_CASES))
def test_a_delegate_view_reads_the_program_executorch_itself_decomposes(
    name: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside the plain `executorch` view (its program, shared where no op the delegate keeps
    was reached), alone (decomposed in one trace), and with executorch doing all of
    `_gen_edge_manager_for_partitioners` itself: the same nodes, decisions and sites."""
    cls, inputs, shared = _FIXED_LIST_CASES[(name, case)]
    view = delegate_view.VIEW_PREFIX + name
    if delegate_view.fixed_kept_ops(name) is None:
        pytest.skip(f"the installed {name} partitioner keeps no fixed list here")
    offered: list[bool] = []
    program_for = delegate_view.PlainDecomposition.program_for

    def noted(self: Any, kept: frozenset[Any]) -> Any:
        found = program_for(self, kept)
        offered.append(found is not None)
        return found

    monkeypatch.setattr(delegate_view.PlainDecomposition, "program_for", noted)
    beside = _graph_ops(cls().eval(), inputs(), ("executorch-export", view))
    assert offered == [shared]
    alone = _graph_ops(cls().eval(), inputs(), (view,))
    monkeypatch.setattr(delegate_view, "_decomposed_for", lambda *_: None)
    monkeypatch.setattr(delegate_view, "_functional_copy", lambda *_: None)
    by_executorch = _graph_ops(cls().eval(), inputs(), (view,))
    assert beside[view] == alone[view] == by_executorch[view]
    assert beside["executorch-export"]  # the plain view still reports its own ops


def test_a_kept_op_reached_only_inside_another_ops_decomposition_is_noticed() -> None:
    """The LSTM's exported graph has no `linear`; decomposing it calls `linear`, so the
    plain program is not XNNPACK's (which keeps `linear` whole)."""
    kept = delegate_view.fixed_kept_ops("xnnpack")
    if kept is None:
        pytest.skip("the installed XNNPACK partitioner keeps no fixed list here")
    linear = torch.ops.aten.linear.default
    assert linear in kept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(Recurrent().eval(), (torch.randn(1, 3, 4),), strict=False)
        assert linear not in {node.target for node in exported.graph.nodes}
        plain = delegate_view.PlainDecomposition(("executorch-export", "executorch:xnnpack"))
        table = _executorch_decomposition_table(registries._executorch_decompositions())
        decomposed = exported.run_decompositions(plain.watching(table))
    plain.keep(decomposed)
    assert plain.reached == {linear}
    assert plain.program_for(kept) is None
    assert plain.program_for(frozenset()) is not None  # a delegate keeping nothing could share it


def test_a_plain_program_is_offered_only_for_to_edges_own_table() -> None:
    """A plain view decomposed with another table than to_edge's (torch.export's default one,
    as a parent that read no changes from executorch would use) is never given to a
    delegate view; with to_edge's own table it is."""
    edge_ops = frozenset(delegate_view._edge_table())
    default = torchcompat.export_default_decompositions()
    if frozenset(default) == edge_ops:
        pytest.skip("to_edge's table is torch.export's default one here")
    assert frozenset(_executorch_decomposition_table(registries._executorch_decompositions())) == edge_ops
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(nn.ReLU(), (torch.randn(2),), strict=False)
        for table, offered in ((default, False), (delegate_view._edge_table(), True)):
            plain = delegate_view.PlainDecomposition(("executorch-export", "executorch:vulkan"))
            plain.keep(exported.run_decompositions(plain.watching(table)))
            assert (plain.program_for(frozenset()) is not None) == offered


def test_vulkans_pattern_graphs_are_built_once_per_process() -> None:
    """Inside `_pattern_graphs_built_once`, each pattern gives the graphs its first build
    made (the same graphs, not rebuilt); outside, the registry is executorch's own again."""
    try:
        patterns = delegate_view._import_executorch(delegate_view.PATTERN_REGISTRIES["vulkan"])
    except ImportError as error:
        pytest.skip(str(error))
    before = {key: entry.get_graphs_fn for key, entry in patterns.fusable_patterns.items()}
    with delegate_view._quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with delegate_view._pattern_graphs_built_once("vulkan"):
            first = patterns.all_fusable_graph_patterns()
            second = patterns.all_fusable_graph_patterns()
        fresh = patterns.all_fusable_graph_patterns()
    assert first and all(a is b for a, b in zip(first, second, strict=True))
    assert [str(g.graph) for g in first] == [str(g.graph) for g in fresh]
    assert {key: entry.get_graphs_fn for key, entry in patterns.fusable_patterns.items()} == before


def test_preloaded_pattern_graphs_are_those_executorch_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """`preload` builds Vulkan's pattern graphs with torch.export's composite-op list
    answered from the cache (`cia_ops_cached`): the graphs are those executorch's own
    registry builds without it."""
    try:
        patterns = delegate_view._import_executorch(delegate_view.PATTERN_REGISTRIES["vulkan"])
    except ImportError as error:
        pytest.skip(str(error))
    monkeypatch.setattr(delegate_view, "_PATTERN_GRAPHS", {})  # built anew, whatever ran before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        preload("vulkan")
        with delegate_view._quiet():
            fresh = patterns.all_fusable_graph_patterns()
    preloaded = [graph for graphs in delegate_view._PATTERN_GRAPHS.values() for graph in graphs]
    assert preloaded
    assert [str(g.graph) for g in preloaded] == [str(g.graph) for g in fresh]


@pytest.mark.parametrize("enabled", [True, False])
def test_preload_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    """The collector is off while executorch is imported (`_collection_paused`), then as it
    was: on for a worker, off for a caller that had turned it off."""
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            preload("xnnpack")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("name", ["xnnpack", "coreml"])
def test_a_partitioners_caller_check_sees_the_same_frames_without_their_source_lines(name: str) -> None:
    """XNNPACK's and Core ML's `partition()` ask `inspect.stack()` whether executorch's
    deprecated `to_backend` called them (program/_program.py). Read without source lines
    (`_frames_without_source_lines`) the frames give the same answer, both ways, and the
    partitioner's module has its own `inspect` back afterwards."""
    try:
        chosen = partitioner(name)
    except DelegateUnavailable as error:
        pytest.skip(str(error))
    check = getattr(chosen, "_check_if_called_from_to_backend", None)
    if check is None:
        pytest.skip(f"this executorch's {name} partitioner does not look at its callers")
    namespace: dict[str, Any] = {}
    # A `to_backend` whose code says it lives in executorch's program/_program.py.
    exec(compile("def to_backend(check):\n    return check()\n", "/exir/program/_program.py", "exec"), namespace)  # noqa: S102
    module = importlib.import_module(type(chosen)._check_if_called_from_to_backend.__module__)
    for call, expected in ((lambda check: check(), False), (namespace["to_backend"], True)):
        assert call(check) is expected  # executorch's own reading of its callers
        with delegate_view._frames_without_source_lines(chosen):
            assert module.inspect is not inspect
            assert call(check) is expected
        assert module.inspect is inspect


class EdgePassCases(nn.Module):
    """What to_edge's passes rewrite, inside the runs `_edge_passes_fused` joins and around
    them: views and a transpose (made copies), an int tensor added to a float one
    (RemoveMixedTypeOperators adds a cast, itself then rewritten by the passes after it), a
    size read from a dynamic dimension (SymToTensorPass makes it a tensor, which is then
    cast), a copy to a memory format (MemoryFormatOpsPass), and, `rejected`, an op to_edge's
    verifier refuses."""

    def __init__(self, rejected: bool) -> None:
        super().__init__()
        self.rejected = rejected

    def forward(self, x: torch.Tensor, counts: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        square = x.t() @ x
        flat = square.reshape(-1)[:4].unsqueeze(0)
        mixed = counts + flat  # int64 + float32
        scaled = torch.pow(mixed, 2) * x.shape[0]
        last = image.to(memory_format=torch.channels_last).sum() + scaled.sum()
        if self.rejected:
            last = last + torch.special.ndtri(x.sigmoid()).sum()
        return last


def _edge_program_facts(program: Any) -> Any:
    """What anything downstream reads of an edge program: its code, and each node's name,
    target, arguments, fake value, user stack and debug handle; or the error it raised."""
    if isinstance(program, Exception):
        return type(program).__name__, str(program)
    nodes = []
    for module in program.graph_module.modules():
        for node in getattr(module, "graph", torch.fx.Graph()).nodes:
            value = node.meta.get("val")
            fake = (
                (tuple(value.shape), value.dtype, tuple(value.stride())) if isinstance(value, torch.Tensor) else value
            )
            nodes.append(
                (node.name, node.op, str(node.target), str(node.args), str(node.kwargs), str(fake))
                + tuple(str(node.meta.get(key)) for key in ("stack_trace", "nn_module_stack", "debug_handle"))
            )
    return program.graph_module.code, nodes, str(program.graph_signature), sorted(program.state_dict)


@pytest.mark.parametrize("rejected", [False, True])
def test_fused_edge_passes_build_the_program_executorch_builds(rejected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_generate_edge_program` (to_edge's passes and verifier) on the same program, with its
    passes as executorch runs them and with `_edge_passes_fused`: the same edge program,
    node for node, or the same verifier error; in fewer retraces of the program."""
    program_module = delegate_view._import_executorch("executorch.exir.program._program")
    config = importlib.import_module("executorch.exir").EdgeCompileConfig()
    side = torch.export.Dim("side", min=2, max=64)
    inputs = (torch.randn(4, 4), torch.arange(4).reshape(1, 4), torch.randn(1, 3, 4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(
            EdgePassCases(rejected).eval(), inputs, dynamic_shapes=({0: side, 1: side}, None, None), strict=False
        )
        decomposed = exported.run_decompositions(delegate_view._edge_table())
        export_pass = delegate_view._import_executorch("executorch.exir.pass_base")._ExportPassBase
        retrace = export_pass.call
        built = []
        retraces: list[int] = []
        for fused in (False, True):
            program = copy.deepcopy(decomposed)
            retraces.append(0)

            def counted(self: Any, graph_module: Any, retrace: Any = retrace) -> Any:
                retraces[-1] += 1
                return retrace(self, graph_module)

            monkeypatch.setattr(export_pass, "call", counted)
            try:
                with delegate_view._edge_passes_fused() if fused else contextlib.nullcontext():
                    built.append(_edge_program_facts(program_module._generate_edge_program(config, program)))
            except Exception as error:  # noqa: BLE001 - the verifier's refusal is compared too
                built.append(_edge_program_facts(error))
            monkeypatch.undo()
    assert built[0] == built[1]
    assert retraces[1] < retraces[0]
    if rejected:
        assert "special_ndtri" in built[0][1]
    else:
        nodes = built[0][1]
        # RemoveMixedTypeOperators' casts (inside the fused run): of the int tensor, and of the
        # dynamic size SymToTensorPass made a tensor of, each then a dim-order copy.
        assert any(node[3].startswith("(counts,") and "torch.float32" in node[4] for node in nodes)
        sizes = [node[0] for node in nodes if "scalar_tensor" in node[2]]
        assert sizes and any(node[3].startswith(f"({sizes[0]},") and "torch.float32" in node[4] for node in nodes)
