"""Call trees come from running the op on meta tensors with the call's own arguments."""

from __future__ import annotations

import torch

from atenlint.capture.decompose import UNKNOWN, call_tree, resolve_overload


def tree(name, overload="", **known):
    return call_tree(resolve_overload(name, overload), {k: UNKNOWN if v is ... else v for k, v in known.items()})


def ops(node):
    found = [node["op"]]
    for child in node.get("calls") or []:
        found += ops(child)
    return found


def test_arguments_choose_the_decomposition():
    assert "aten::mean.dim" in ops(tree("aten::adaptive_avg_pool3d", self=..., output_size=[1, 1, 1]))
    grid = ops(tree("aten::adaptive_avg_pool3d", self=..., output_size=[2, 2, 2]))
    assert "aten::_adaptive_avg_pool3d" in grid and "aten::mean.dim" not in grid


def test_explicit_composites_are_expanded_but_device_dispatch_is_not():
    assert (
        ops(
            tree(
                "aten::logspace",
                start=0.0,
                end=1.0,
                steps=5,
                base=10.0,
                dtype=None,
                layout=None,
                device=None,
                pin_memory=None,
            )
        )[-1]
        == "aten::logspace.out"
    )
    conv = ops(
        tree("aten::conv2d", input=..., weight=..., bias=..., stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)
    )
    assert conv == ["aten::conv2d", "aten::convolution", "aten::_convolution"]


def test_ops_without_meta_kernels_give_a_partial_tree():
    lstsq = tree("aten::linalg_lstsq", self=..., b=...)
    assert lstsq.get("partial") and "aten::linalg_lstsq.out" in ops(lstsq)


def test_factories_never_allocate():
    before = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
    huge = tree("aten::zeros", size=[10**6, 10**6], dtype=None, layout=None, device=None, pin_memory=None)
    assert huge["op"] == "aten::zeros" and not huge.get("undecomposed")
    assert (torch.cuda.memory_allocated() if torch.cuda.is_available() else 0) == before


def test_torchscript_only_builtins_are_not_dispatcher_ops():
    assert resolve_overload("aten::sub", "int") is None
    assert resolve_overload("aten::len", "t") is None
    assert resolve_overload("aten::add", "Tensor") is not None
