"""What a call is, from the file alone: imports and aliases, methods, submodules, binding."""

from __future__ import annotations

import ast

import pytest

from atenlint.fixes.callsite import FileContext, call_site, is_pure
from atenlint.fixes.imports import Bindings, insertion_point
from atenlint.fixes.model import Signature
from atenlint.sourcetext import SourceText


def site_of(source: str, call_text: str):
    text = SourceText(source, "/virtual/case.py")
    file = FileContext.build(text)
    node = next(n for n in ast.walk(file.tree) if isinstance(n, ast.Call) and file.segment(n) == call_text)
    return call_site(file, node)


@pytest.mark.parametrize(
    "imports, call, expected",
    [
        ("import torch", "torch.take(x, i)", "torch.take"),
        ("import torch as th", "th.take(x, i)", "torch.take"),
        ("import torch.nn.functional as F", "F.pdist(x)", "torch.nn.functional.pdist"),
        ("from torch.nn import functional as nnf", "nnf.pdist(x)", "torch.nn.functional.pdist"),
        ("import torch.nn as nn", "nn.functional.pdist(x)", "torch.nn.functional.pdist"),
        ("from torch import linalg", "linalg.svdvals(a)", "torch.linalg.svdvals"),
        ("from torch.linalg import svdvals as sv", "sv(a)", "torch.linalg.svdvals"),
        ("import torch.nn", "torch.nn.functional.pdist(x)", "torch.nn.functional.pdist"),
    ],
)
def test_functions_resolve_through_imports(imports, call, expected):
    site = site_of(f"{imports}\n\ndef f(x, i, a):\n    return {call}\n", call)
    assert (site.form, site.name) == ("function", expected)


def test_a_name_the_function_rebinds_is_not_the_import():
    source = "import torch\n\ndef f(x, i):\n    torch = x\n    return torch.take(i)\n"
    site = site_of(source, "torch.take(i)")
    assert (site.form, site.name) == ("method", "take")


def test_methods_have_their_receiver():
    site = site_of("def f(x, i):\n    return (x + 1).take(i)\n", "(x + 1).take(i)")
    assert (site.form, site.name, ast.unparse(site.receiver)) == ("method", "take", "x + 1")
    bound = site.bind(Signature.parse("input, index"))
    assert (bound["input"].text, bound["index"].text) == ("x + 1", "i")


MODULE = """import torch.nn as nn
from torch.nn import AdaptiveAvgPool3d as Pool


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d((2, 4, 4))


class Child(Base):
    def forward(self, x):
        return self.pool(x)


class Aliased(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.down = Pool(output_size=size)

    def forward(self, x):
        return self.down(x)


class Ambiguous(nn.Module):
    def __init__(self, big):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(2)
        if big:
            self.pool = nn.AdaptiveAvgPool3d(4)

    def forward(self, x):
        return self.pool(x)
"""


def test_submodules_resolve_to_their_constructor_in_the_class_or_a_base():
    site = site_of(MODULE, "self.pool(x)")
    assert (site.form, site.name) == ("module", "torch.nn.AdaptiveAvgPool3d")
    bound = site.bind(Signature.parse("input, output_size"), Signature.parse("output_size"))
    assert (bound["input"].text, bound["output_size"].text) == ("x", "(2, 4, 4)")
    aliased = site_of(MODULE, "self.down(x)")
    assert aliased.name == "torch.nn.AdaptiveAvgPool3d"
    assert (
        aliased.bind(Signature.parse("input, output_size"), Signature.parse("output_size"))["output_size"].text
        == "size"
    )


def test_a_submodule_assigned_twice_is_unknown():
    text = SourceText(MODULE, "/virtual/case.py")
    file = FileContext.build(text)
    calls = [n for n in ast.walk(file.tree) if isinstance(n, ast.Call) and file.segment(n) == "self.pool(x)"]
    assert call_site(file, calls[-1]) is None  # Ambiguous


@pytest.mark.parametrize(
    "call, bound",
    [
        ("torch.take(x, i)", {"input": "x", "index": "i"}),
        ("torch.take(index=i, input=x)", {"input": "x", "index": "i"}),
        ("torch.take(x, index=i)", {"input": "x", "index": "i"}),
        ("torch.take(x)", None),  # index is required
        ("torch.take(x, i, j)", None),  # one too many
        ("torch.take(*args)", None),
        ("torch.take(x, **kw)", None),
        ("torch.take(x, i, index=i)", None),  # given twice
        ("torch.take(x, idx=i)", None),  # no such parameter
    ],
)
def test_arguments_bind_as_python_binds_them(call, bound):
    site = site_of(f"import torch\n\ndef f(x, i, j, args, kw):\n    return {call}\n", call)
    result = site.bind(Signature.parse("input, index"))
    assert (None if result is None else {k: v.text for k, v in result.items()}) == bound


def test_keyword_only_parameters_and_defaults():
    signature = Signature.parse("start, end, steps, base=10.0, *, dtype=None")
    site = site_of(
        "import torch\n\ndef f(a):\n    return torch.logspace(0, 1, 5, dtype=a)\n", "torch.logspace(0, 1, 5, dtype=a)"
    )
    bound = site.bind(signature)
    assert (bound["base"].text, bound["base"].given, bound["dtype"].text) == ("10.0", False, "a")
    positional_dtype = site_of(
        "import torch\n\ndef f(a):\n    return torch.logspace(0, 1, 5, 2.0, a)\n", "torch.logspace(0, 1, 5, 2.0, a)"
    )
    assert positional_dtype.bind(signature) is None


@pytest.mark.parametrize(
    "text, pure",
    [
        ("x", True),
        ("self.weight", True),
        ("self.blocks[0].weight", True),
        ("x[:, -1]", True),
        ("-1", True),
        ("x.t()", False),
        ("x + 1", False),
        ("x[i]", False),
        ("f(x).y", False),
    ],
)
def test_purity(text, pure):
    assert is_pure(ast.parse(text, mode="eval").body) is pure


def test_spelling_prefers_the_conventional_name_then_the_shortest():
    tree = ast.parse("import torch\nimport torch as t\nimport torch.nn.functional as F\nimport math as m\n")
    bindings = Bindings.of(tree)
    assert bindings.spell("torch", set()) == "torch"
    assert bindings.spell("torch", set(), preferred="t") == "t"
    assert bindings.spell("torch.nn.functional", set()) == "F"
    assert bindings.spell("torch.nn.functional", {"F"}) == "t.nn.functional"
    assert bindings.spell("math", set()) == "m"
    assert bindings.spell("warnings", set()) is None


def test_a_module_name_rebound_at_module_level_is_not_an_import():
    bindings = Bindings.of(ast.parse("import math\nmath = None\nimport torch\n"))
    assert bindings.spell("math", set()) is None and "math" in bindings.other


@pytest.mark.parametrize(
    "source, after",
    [
        ('"""Doc."""\nfrom __future__ import annotations\n\nimport torch\n\nx = 1\n', "import torch\n"),
        ('"""Doc."""\n\nclass A:\n    pass\n', '"""Doc."""\n'),
        (
            "import torch\ntry:\n    import scipy\nexcept ImportError:\n    scipy = None\n\ndef f():\n    pass\n",
            "    scipy = None\n",
        ),
        ("x = 1\n", ""),
        ("import torch", "import torch"),
    ],
)
def test_new_imports_go_after_the_leading_imports(source, after):
    from atenlint.fixes.edits import LineIndex

    offset, before, following = insertion_point(ast.parse(source), LineIndex(source))
    assert source[:offset].endswith(after)
    new = source[:offset] + before + "import math" + following + source[offset:]
    ast.parse(new)


def test_imports_only_for_type_checkers_bind_nothing():
    source = "from typing import TYPE_CHECKING\nimport torch\nif TYPE_CHECKING:\n    import torch.nn.functional as F\n"
    bindings = Bindings.of(ast.parse(source))
    assert "F" not in bindings.imported
    assert bindings.spell("torch.nn.functional", set()) == "torch.nn.functional"
