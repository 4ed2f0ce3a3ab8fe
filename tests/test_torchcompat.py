"""torchcompat owns every private torch API: nothing else in the package touches one, and a
torch that lacks one loses that capability with a note naming it, not the analysis."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest
import torch

from atenlint import torchcompat
from support import load_module

PACKAGE = pathlib.Path(torchcompat.__file__).parent
# Private members of torch objects (an OpOverload's schema, a ScriptModule's C++ object,
# a module's parameter dict, a symbolic group's per-opset table) reached by attribute.
PRIVATE_MEMBERS = {
    "_schema",
    "_op_dk",
    "_c",
    "_get_method",
    "_has_method",
    "_type",
    "_parameters",
    "_buffers",
    "_python_cu",
    "_builtin_ops",
    "_find_builtin",
    "_script_classes",
    "_functions",
    "_name_to_pyclass",
    "_clear_class_state",
    "_enabled",
}
_PRIVATE_PATH = re.compile(r"^torch(\.\w+)*\._[A-Za-z]")


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def private_torch_uses(source: str, filename: str = "<test>") -> list[str]:
    """`line: what` for every private torch name the source touches."""
    tree = ast.parse(source, filename)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        where = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [
                f"{where}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] == "torch" and any(map(_is_private, a.name.split(".")))
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torch":
            parts = (node.module or "").split(".")
            if any(map(_is_private, parts)) or any(_is_private(a.name) for a in node.names):
                found.append(f"{where}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node) if id(node) not in inner else None  # a torch chain once, whole
            if dotted and dotted[0] == "torch" and dotted[1:2] != ["ops"] and any(map(_is_private, dotted[1:])):
                found.append(f"{where}: {'.'.join(dotted)}")
            elif (
                node.attr in PRIVATE_MEMBERS
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and not (dotted and dotted[0] == "torch")
            ):
                found.append(f"{where}: .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in PRIVATE_MEMBERS
        ):
            found.append(f"{where}: {node.func.id}(..., {node.args[1].value!r})")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _PRIVATE_PATH.match(node.value)
        ):
            found.append(f"{where}: {node.value!r}")
    return sorted(set(found), key=lambda text: int(text.split(":")[0]))


def test_the_scan_sees_every_spelling_of_a_private_api():
    source = """
import torch
import torch._dynamo
from torch._decomp import get_decompositions
from torch.utils import _python_dispatch
from torch.jit import _state
import importlib
x = torch._C._jit_pass_dce
y = torch.jit._builtins._find_builtin(len)
z = op._schema
v = zip(func._schema.arguments, args)
w = getattr(module, "_has_method", None)
importlib.import_module("torch.onnx._internal.exporter")
ok = torch.ops.aten._local_scalar_dense.default   # an operator, not a private API
ok2 = torch.__version__
ok3 = self._c
"""
    found = private_torch_uses(source)
    assert [line.split(":")[0] for line in found] == ["3", "4", "5", "6", "8", "9", "10", "11", "12", "13"]
    assert "8: torch._C._jit_pass_dce" in found


def test_no_module_outside_torchcompat_touches_a_private_torch_name():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "torchcompat.py" and path.parent == PACKAGE:
            continue
        uses = private_torch_uses(path.read_text(encoding="utf-8"), str(path))
        if uses:
            offenders[str(path.relative_to(PACKAGE))] = uses
    assert not offenders, "private torch APIs outside torchcompat.py (add a function there):\n" + "\n".join(
        f"{name}: {'; '.join(uses)}" for name, uses in offenders.items()
    )


def test_torchcompat_imports_only_the_standard_library_and_torch():
    tree = ast.parse((PACKAGE / "torchcompat.py").read_text(encoding="utf-8"))
    import sys

    tops = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "torchcompat must not import the rest of atenlint"
            tops.add((node.module or "").split(".")[0])
    assert tops - {"torch", "__future__"} <= set(sys.stdlib_module_names)


def test_every_capability_is_present_on_this_torch():
    torchcompat.forget_degradations()
    assert torchcompat.probe_all() == []


@pytest.fixture
def fresh_lookups():
    torchcompat.forget_degradations()
    yield
    torchcompat.forget_degradations()


def test_a_missing_call_walk_is_one_lost_capability_with_its_message(tmp_path, monkeypatch, fresh_lookups):
    from atenlint.capture.script import script, script_ops

    module = load_module(
        tmp_path,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                return F.relu(x)
    """,
        "walkless_case",
    )
    with torch.device("meta"):
        scripted = script(module.Net())  # scripting itself (the torchscript target) still works
    monkeypatch.delattr(torch.jit._state, "_python_cu")
    assert torchcompat.compiled_function("__torch__.torch.nn.functional.relu") is None
    with pytest.raises(torchcompat.Unavailable) as raised:
        script_ops(scripted, ("cpu",))
    message = str(raised.value)
    assert message.startswith(f"the TorchScript call walk is unavailable on torch {torchcompat.TORCH_VERSION}: ")
    assert "read from source" in message
    lost = torchcompat.degradations()
    assert [d["capability"] for d in lost] == [torchcompat.JIT_WALK.name]
    assert "_python_cu" in lost[0]["reason"]
    # Every other capability is untouched.
    assert torchcompat.available(torchcompat.DISPATCHER) and torchcompat.available(torchcompat.JIT_SPECIALISE)


def test_a_missing_dispatcher_lookup_falls_back_to_the_overloads(monkeypatch, fresh_lookups):
    monkeypatch.delattr(torch._C, "_dispatch_find_schema_or_throw")
    monkeypatch.delattr(torch._C, "_dispatch_get_registrations_for_dispatch_key")
    assert torchcompat.registrations_for_key("MPS") == []  # Python-registered kernels: unknown
    assert torchcompat.overload("aten::add", "Tensor") is torch.ops.aten.add.Tensor
    assert torchcompat.overload("aten::relu", "") is torch.ops.aten.relu.default
    assert [d["capability"] for d in torchcompat.degradations()] == [torchcompat.DISPATCHER.name]


def test_missing_passes_keep_the_walk_and_say_what_it_costs(tmp_path, monkeypatch, fresh_lookups):
    from atenlint.capture.script import script, script_ops

    module = load_module(
        tmp_path,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                return F.interpolate(x, scale_factor=2.0, mode="bilinear")
    """,
        "passless_case",
    )
    with torch.device("meta"):
        scripted = script(module.Net())
    for name in ("_jit_pass_constant_propagation", "_jit_pass_dce", "_jit_pass_peephole"):
        monkeypatch.delattr(torch._C, name)
    names = {op.op for op in script_ops(scripted, ("cpu",)).ops}
    assert "aten::upsample_bilinear2d.vec" in names  # still walked, now with every branch
    messages = torchcompat.degradation_messages()
    assert len(messages) == 1 and messages[0].startswith("TorchScript graph specialisation")
    assert "false alarms" in messages[0]


def test_a_missing_fake_tensor_mode_raises_unavailable(monkeypatch, fresh_lookups):
    import torch._subclasses
    import torch._subclasses.fake_tensor

    monkeypatch.delattr(torch._subclasses.fake_tensor, "FakeTensorMode")
    monkeypatch.delattr(torch._subclasses, "FakeTensorMode", raising=False)
    with pytest.raises(torchcompat.Unavailable, match="fake tensors"):
        torchcompat.fake_tensor_mode()


def test_a_module_that_needs_a_missing_package_says_so(fresh_lookups, monkeypatch):
    import importlib

    real_import_module = importlib.import_module

    def without_expecttest(name, *args, **kwargs):
        if name == "torch.testing._internal.common_methods_invocations":
            raise ModuleNotFoundError("No module named 'expecttest'", name="expecttest")
        return real_import_module(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_expecttest)
    assert torchcompat.opinfo_mps_dtypes() == {}
    (lost,) = torchcompat.degradations()
    assert lost["capability"] == torchcompat.OPINFO.name and "expecttest" in lost["reason"]


def test_without_the_call_walk_the_class_is_read_from_source(tmp_path, monkeypatch, fresh_lookups):
    from atenlint.capture import file_capture

    path = tmp_path / "walkless_file.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return torch.heaviside(x, x)\n"
    )
    # A torch that moved the compilation unit: scripting (torch's own code) still works,
    # atenlint's lookup of it fails.
    real_resolve = torchcompat._resolve

    def moved(path: str) -> object:
        if path == "torch.jit._state._python_cu":
            raise LookupError(f"{path} does not exist")
        return real_resolve(path)

    monkeypatch.setattr(torchcompat, "_resolve", moved)
    answer = file_capture.capture_file(
        {
            "path": str(path),
            "module": "walkless_file",
            "roots": [str(tmp_path)],
            "overlays": {},
            "classes": {"Net": {}},
            "devices": ["mps"],
            "views": ["dispatch"],
            "infer_inputs": False,  # the scripted path is the one whose walk is lost
        }
    )
    (captured,) = answer["classes"]
    assert captured["capture"] == "static"  # never less than the source: the class is still judged
    assert "aten::heaviside" in {op["op"] for op in captured["ops"]}
    assert [d["capability"] for d in torchcompat.degradations()] == [torchcompat.JIT_WALK.name]


def test_an_object_the_walk_cannot_serve_loses_nothing_for_later_files(fresh_lookups):
    """A module without `forward`, or a TorchScript class instance, takes the degraded path
    for itself only: recording it would read every later file of the worker from source."""
    torchcompat.forget_degradations()
    assert torchcompat.script_method_graph(object(), "forward") is None
    with pytest.raises(torchcompat.Unavailable):
        torchcompat.script_module_object(object())
    assert torchcompat.degradations() == []


_DEFERRED_DYNAMO = """
import sys

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from atenlint import torchcompat

assert torchcompat.defer_dynamo_import() > 0
assert torchcompat.defer_dynamo_import() == 0  # once


class Seen(TorchDispatchMode):  # made after the deferral: its wrapper is deferred too
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def dispatch_wrapper_target():
    wrapper = Seen.__dict__["__torch_dispatch__"]
    return dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))["fn"].cell_contents


with Seen() as seen:  # a dispatch mode and a Python reference's type promotion, on meta
    out = F.interpolate(torch.empty(1, 3, 8, 8, device="meta"), scale_factor=2.0, mode="bilinear")
assert out.shape == (1, 3, 16, 16) and any("upsample_bilinear2d" in op for op in seen.ops), seen.ops
assert "torch._dynamo" not in sys.modules, "a forward on meta imported torch._dynamo"

import torch._dynamo  # noqa: E402 - from here on, torch's own wrappers

with Seen() as seen:
    F.interpolate(torch.randn(1, 1, 4, 4), scale_factor=2.0, mode="bilinear")
disabled = getattr(dispatch_wrapper_target(), "__dynamo_disable")
assert not isinstance(disabled, torchcompat._UntilDynamoLoads), disabled  # Dynamo's disabled function now
compiled = torch.compile(lambda t: F.interpolate(t, scale_factor=2.0, mode="bilinear") * 2, backend="eager")
x = torch.randn(1, 3, 8, 8)
assert torch.equal(compiled(x), F.interpolate(x, scale_factor=2.0, mode="bilinear") * 2)
print("ok")
"""


def test_dynamo_is_imported_only_by_what_uses_it_and_then_is_torchs_own():
    """The worker defers torch._dynamo's import (`defer_dynamo_import`): a dispatch mode and
    torch's Python references run on meta tensors without it; once anything imports it,
    torch's wrappers disable Dynamo as they always did and torch.compile works."""
    done = subprocess.run(
        [sys.executable, "-c", _DEFERRED_DYNAMO], check=False, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_dynamo_already_imported_is_left_as_it_is():
    script = "import torch, torch._dynamo\nfrom atenlint import torchcompat\nprint(torchcompat.defer_dynamo_import())"
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "0", done.stderr[-3000:]
