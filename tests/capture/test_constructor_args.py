"""Constructor arguments inferred for classes nobody said how to build
(capture/constructor_args.py), and how the build and the capture use them: the first
candidate that builds is kept and the answer says so; a guess nothing can analyse is
reported as not built, as before arguments were inferred."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import torch

from atenlint.capture import file_capture
from atenlint.capture.constructor_args import MAX_CANDIDATES, PROFILES, call_sites, candidates, evaluate_call
from atenlint.capture.loader import BuildFailure, build, last_build
from support import load_module
from torch_facts import mps_missing


def _expressions(tmp_path: Any, source: str, cls: str, name: str, roots: list[str] | None = None) -> list[str]:
    module = load_module(tmp_path, source, name)
    return [c.expression for c in candidates(getattr(module, cls), module, roots or [])]


def test_a_literal_call_site_in_the_project_comes_first(tmp_path: Any) -> None:
    """`Block(256, heads=8)` in a script of the same folder, and a call through a module-level
    constant: their literal arguments, bound to the parameters' names, before the name rules."""
    (tmp_path / "train_blocks.py").write_text(
        textwrap.dedent("""
            import sites_model as m
            WIDTH = 128

            def make(n):
                m.Block(n)  # not a literal: no candidate of its own
                return m.Block(256, heads=8), m.Block(WIDTH, dropout=0.1)
        """)
    )
    source = """
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, dim, heads=4, dropout=0.0):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)
    """
    module = load_module(tmp_path, source, "sites_model")
    sites = call_sites(module.Block, module, [str(tmp_path)])
    assert [s.arguments for s in sites] == [{"dim": "256", "heads": "8"}, {"dim": "128", "dropout": "0.1"}]
    found = candidates(module.Block, module, [str(tmp_path)])
    assert [c.expression for c in found[:3]] == [
        "Block(dim=256, heads=8)",
        "Block(dim=128, dropout=0.1)",
        "Block(dim=64)",  # then the name rules
    ]
    assert found[0].source == "call site train_blocks.py:7"


def test_an_editor_buffer_is_read_instead_of_the_file_on_disk(tmp_path: Any) -> None:
    script = tmp_path / "run_block.py"
    script.write_text("from buffer_model import Block\nBlock(16)\n")
    module = load_module(
        tmp_path,
        """
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()

            def forward(self, x):
                return x
        """,
        "buffer_model",
    )
    overlays = {str(script): "from buffer_model import Block\nBlock(48)\n"}
    assert [s.arguments for s in call_sites(module.Block, module, [str(tmp_path)])] == [{"dim": "16"}]
    assert [s.arguments for s in call_sites(module.Block, module, [str(tmp_path)], overlays)] == [{"dim": "48"}]


def test_names_give_sizes_heads_that_divide_depths_and_small_values(tmp_path: Any) -> None:
    found = _expressions(
        tmp_path,
        """
        import torch.nn as nn

        class ViT(nn.Module):
            def __init__(self, image_size, patch_size, dim, depth, num_heads, mlp_ratio, dropout, num_classes,
                         vocab_size, kernel_size, eps, in_chans):
                super().__init__()
                assert image_size % patch_size == 0 and dim % num_heads == 0

            def forward(self, x):
                return x
        """,
        "ViT",
        "names_vit",
    )
    assert found[0] == (
        "ViT(image_size=32, patch_size=4, dim=64, depth=2, num_heads=8, mlp_ratio=4, dropout=0.0, "
        "num_classes=10, vocab_size=100, kernel_size=3, eps=1e-05, in_chans=3)"
    )
    assert len(found) == len(PROFILES) <= MAX_CANDIDATES
    assert "dim=32" in found[1] and "num_heads=4" in found[1]  # another width with a head count dividing it


def test_every_profile_keeps_heads_dividing_the_width(tmp_path: Any) -> None:
    module = load_module(
        tmp_path,
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, d_model, n_head, dim_head):
                super().__init__()
                assert d_model % n_head == 0
                self.qkv = nn.Linear(d_model, n_head * dim_head * 3)

            def forward(self, x):
                return self.qkv(x)
        """,
        "divides_attention",
    )
    for candidate in candidates(module.Attention, module):
        with torch.device("meta"):
            built = evaluate_call(candidate.expression, module.Attention, module)
        assert isinstance(built, torch.nn.Module)


def test_a_config_becomes_a_namespace_of_what_the_file_reads_off_it(tmp_path: Any) -> None:
    module = load_module(
        tmp_path,
        """
        import torch.nn as nn

        class Mixer(nn.Module):
            def __init__(self, config):
                super().__init__()
                assert config.n_embd % config.n_head == 0
                self.fc = nn.Linear(config.n_embd, config.n_embd)
                self.drop = nn.Dropout(config.resid_pdrop)

            def forward(self, x):
                return self.drop(self.fc(x))

        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.wte = nn.Embedding(self.config.vocab_size, config.n_embd)
                self.mixer = Mixer(config)
                self.flavour = config.model_type

            def forward(self, idx):
                return self.mixer(self.wte(idx))
        """,
        "namespace_config",
    )
    first = candidates(module.Model, module)[0].expression
    assert first == (
        "Model(config=types.SimpleNamespace(model_type=None, n_embd=64, n_head=8, resid_pdrop=0.0, vocab_size=100))"
    )
    with torch.device("meta"):
        assert isinstance(evaluate_call(first, module.Model, module), torch.nn.Module)


def test_a_config_class_of_the_module_is_built_with_the_same_rules(tmp_path: Any) -> None:
    found = _expressions(
        tmp_path,
        """
        from dataclasses import dataclass
        import torch.nn as nn

        @dataclass
        class NetConfig:
            width: int
            layers: int = 2

        class Net(nn.Module):
            def __init__(self, cfg: NetConfig):
                super().__init__()
                self.fc = nn.Linear(cfg.width, cfg.width)

            def forward(self, x):
                return self.fc(x)
        """,
        "Net",
        "config_class",
    )
    assert found[0] == "Net(cfg=NetConfig(width=64))"


def test_annotations_decide_the_kind_of_value(tmp_path: Any) -> None:
    found = _expressions(
        tmp_path,
        """
        from typing import Literal, Optional, Tuple
        import torch.nn as nn

        class Annotated(nn.Module):
            def __init__(self, flag: bool, mode: Literal["nearest", "linear"], shape: Tuple[int, int],
                         cap: Optional[int], gain: float, count: int, norm_layer, act_layer):
                super().__init__()

            def forward(self, x):
                return x
        """,
        "Annotated",
        "annotated",
    )
    assert found[0] == (
        "Annotated(flag=False, mode='nearest', shape=(64, 64), cap=None, gain=1.0, count=64, "
        "norm_layer=torch.nn.LayerNorm, act_layer=torch.nn.GELU)"
    )


def test_a_module_parameter_gets_the_class_that_has_what_is_read_off_it(tmp_path: Any) -> None:
    """`GaussianDiffusion(model, image_size)` reads `model.channels`: the file's `Unet` sets
    it; a wrapper that only calls its module gets an identity."""
    module = load_module(
        tmp_path,
        """
        import torch.nn as nn

        class Residual(nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fn = fn

            def forward(self, x):
                return self.fn(x) + x

        class Unet(nn.Module):
            def __init__(self, dim, channels=3):
                super().__init__()
                self.channels = channels
                self.conv = nn.Conv2d(channels, dim, 3)

            def forward(self, x):
                return self.conv(x)

        class Diffusion(nn.Module):
            def __init__(self, model, *, image_size):
                super().__init__()
                self.model = model
                self.channels = self.model.channels
                self.image_size = image_size

            def forward(self, img):
                return self.model(img)
        """,
        "module_parameter",
    )
    assert candidates(module.Residual, module)[0].expression == "Residual(fn=torch.nn.Identity())"
    diffusion = candidates(module.Diffusion, module)[0].expression
    assert diffusion == "Diffusion(model=Unet(dim=64), image_size=32)"
    with torch.device("meta"):
        assert isinstance(evaluate_call(diffusion, module.Diffusion, module).model, module.Unet)


def test_a_module_parameter_may_get_a_class_the_file_imports_from_the_project(tmp_path: Any) -> None:
    load_module(
        tmp_path,
        """
        import torch.nn as nn

        class Denoiser(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.self_condition = False
                self.lin = nn.Linear(dim, dim)

            def forward(self, x):
                return self.lin(x)
        """,
        "denoiser_home",
    )
    module = load_module(
        tmp_path,
        """
        import torch.nn as nn
        from denoiser_home import Denoiser as Net

        class Elucidated(nn.Module):
            def __init__(self, net, *, image_size):
                super().__init__()
                assert not net.self_condition
                self.net = net

            def forward(self, x):
                return self.net(x)
        """,
        "elucidated_user",
    )
    assert candidates(module.Elucidated, module)[0].expression == "Elucidated(net=Net(dim=64), image_size=32)"


def test_the_candidates_are_the_same_every_time(tmp_path: Any) -> None:
    source = """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self, in_channels, out_channels, stride, width):
                super().__init__()

            def forward(self, x):
                return x
    """
    module = load_module(tmp_path, source, "same_every_time")
    assert candidates(module.Net, module) == candidates(module.Net, module)


FORWARDING_SOURCE = """
    import torch.nn as nn

    class Layers(nn.Module):
        def __init__(self, dim, depth=None, heads=8, causal=False, **kwargs):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

    class Encoder(Layers):  # x-transformers: every parameter is the parent's
        def __init__(self, **kwargs):
            assert "causal" not in kwargs
            super().__init__(causal=False, **kwargs)

    class Deeper(Encoder):  # two forwarding constructors, one inherited
        pass

    class Block(Layers):
        def __init__(self, width, *, depth=1, **kw):
            Layers.__init__(self, width * 2, depth=depth, **kw)

    class Scaled(nn.Linear):  # `*args` alone: the parent's positional parameters, in order
        def __init__(self, *args, scale=1.0):
            super().__init__(*args)

    class Swallows(Layers):  # `**kwargs` goes nowhere: nothing of the parent's is open
        def __init__(self, **kwargs):
            super().__init__(64)

    def build_encoder():
        return Encoder(dim=128, depth=2, rotary=True)
"""


def test_parameters_forwarded_to_the_parent_are_the_parents(tmp_path: Any) -> None:
    """Issue 20: a constructor that passes `**kwargs` (or `*args`) on to its parent's needs
    what the parent needs, less what the forwarding call gives it: `Encoder(**kwargs)` needs
    `dim`, given as a keyword; `causal` is the call's own, `heads` keeps its default."""
    from atenlint.capture.constructor_args import constructor_parameters

    module = load_module(tmp_path, FORWARDING_SOURCE, "forwarding_args")

    def shown(cls: type) -> list[str]:
        return [f"{p.kind.name}:{p.name}" + ("" if p.default is p.empty else "=") for p in constructor_parameters(cls)]

    layers_tail = ["KEYWORD_ONLY:depth=", "KEYWORD_ONLY:heads=", "VAR_KEYWORD:kwargs"]
    assert shown(module.Encoder) == ["KEYWORD_ONLY:dim", *layers_tail]
    assert shown(module.Deeper) == shown(module.Encoder)
    # `Layers.__init__(self, width * 2, depth=depth, **kw)` gives `dim` and `depth` itself.
    assert shown(module.Block) == [
        "POSITIONAL_OR_KEYWORD:width",
        "KEYWORD_ONLY:depth=",
        "KEYWORD_ONLY:heads=",
        "KEYWORD_ONLY:causal=",
        "VAR_KEYWORD:kwargs",
    ]
    assert shown(module.Scaled)[:3] == [
        "POSITIONAL_ONLY:in_features",
        "POSITIONAL_ONLY:out_features",
        "POSITIONAL_ONLY:bias=",
    ]
    assert shown(module.Scaled)[-1] == "KEYWORD_ONLY:scale="
    assert shown(module.Swallows) == ["VAR_KEYWORD:kwargs"]

    assert [c.expression for c in candidates(module.Encoder, module)] == [
        "Encoder(dim=128, depth=2)",  # the call site in the file, then the name rules
        "Encoder(dim=64)",
        "Encoder(dim=32)",
    ]
    assert candidates(module.Scaled, module)[0].expression == "Scaled(64, 64)"
    assert candidates(module.Swallows, module) == []
    with torch.device("meta"):
        built = evaluate_call(candidates(module.Deeper, module)[0].expression, module.Deeper, module)
    assert built.proj.in_features == 64
    # A call site's keywords bind to the parent's parameters (`rotary` to its `**kwargs`).
    assert [s.arguments for s in call_sites(module.Encoder, module)] == [{"dim": "128", "depth": "2"}]


# -- the build -------------------------------------------------------------------------------

BUILD_SOURCE = """
import torch.nn as nn


class Picky(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        if heads != 4:
            raise ValueError("only four heads")  # the first profile's 8 fails, the second's 4 builds
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class Never(nn.Module):
    def __init__(self, dim):
        super().__init__()
        raise ValueError("no guess builds this")

    def forward(self, x):
        return x
"""


def test_build_keeps_the_first_candidate_that_builds_and_records_it(tmp_path: Any) -> None:
    module = load_module(tmp_path, BUILD_SOURCE, "build_picky")
    instance = build(module.Picky, module, None, {}, infer_arguments=True)
    assert instance.proj.weight.device.type == "meta" and instance.proj.in_features == 32
    record = last_build()
    assert record is not None and record.arguments == "Picky(dim=32, heads=4)"
    assert record.missing == ["dim", "heads"]


def test_build_without_inference_or_with_no_guess_that_builds_needs_arguments(tmp_path: Any) -> None:
    module = load_module(tmp_path, BUILD_SOURCE, "build_never")
    with pytest.raises(BuildFailure) as plain:
        build(module.Picky, module, None, {})
    assert plain.value.kind == "arguments" and plain.value.missing == ["dim", "heads"]
    with pytest.raises(BuildFailure) as guessed:
        build(module.Never, module, None, {}, infer_arguments=True)
    assert guessed.value.kind == "arguments" and guessed.value.missing == ["dim"]
    assert "inferred argument sets" in guessed.value.message


def test_a_constructor_forwarding_kwargs_is_built_with_the_parents_parameters(tmp_path: Any) -> None:
    """Issue 20: `Encoder(**kwargs)` needs its parent's `dim`: it is built with a guess for it,
    and without inference it is reported as needing it (not as a meta failure)."""
    module = load_module(tmp_path, FORWARDING_SOURCE, "forwarding_build")
    instance = build(module.Deeper, module, None, {}, infer_arguments=True)
    assert instance.proj.in_features == 64
    record = last_build()
    assert record is not None and record.arguments == "Deeper(dim=64)" and record.missing == ["dim"]
    with pytest.raises(BuildFailure) as plain:
        build(module.Encoder, module, None, {})
    assert plain.value.kind == "arguments" and plain.value.missing == ["dim"]


def test_a_configured_init_is_never_replaced_by_a_guess(tmp_path: Any) -> None:
    module = load_module(tmp_path, BUILD_SOURCE, "build_configured")
    instance = build(module.Picky, module, "Picky(dim=16, heads=4)", {}, infer_arguments=True)
    assert instance.proj.in_features == 16
    record = last_build()
    assert record is not None and record.arguments is None


# -- the capture -----------------------------------------------------------------------------


def _capture_source() -> str:
    missing = mps_missing()
    return textwrap.dedent(f"""
        import torch
        import torch.nn as nn


        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                assert dim % heads == 0
                self.heads = heads
                self.qkv = nn.Linear(dim, dim * 3)

            def forward(self, x):
                b, n, d = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(b, n, self.heads, d // self.heads).transpose(1, 2)
                k = k.view(b, n, self.heads, d // self.heads).transpose(1, 2)
                y = (q @ k.transpose(-2, -1)).softmax(-1)
                return {missing.call.call("y")}


        class Opaque:
            pass


        class Unscriptable(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x: Opaque):
                return self.proj(x.value)


        class Never(nn.Module):
            def __init__(self, dim):
                super().__init__()
                raise ValueError("no guess builds this")

            def forward(self, x):
                return x
    """).lstrip()


def _capture(tmp_path: Any, infer: bool = True) -> dict[str, Any]:
    path = tmp_path / "guessed_args.py"
    path.write_text(_capture_source())
    request: dict[str, Any] = {
        "path": str(path),
        "module": "guessed_args",
        "roots": [str(tmp_path)],
        "overlays": {},
        "classes": {"Attention": {}, "Unscriptable": {}, "Never": {}},
        "devices": ["cpu", "mps"],
        "views": ["dispatch", "export", "script"],
        "infer_inputs": infer,
    }
    return {c["qualname"]: c for c in file_capture.capture_file(request)["classes"]}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _capture(tmp_path_factory.mktemp("guessed_args"))


def test_a_class_needing_dim_and_heads_is_traced_and_says_its_arguments_were_inferred(
    captured: dict[str, Any],
) -> None:
    attention = captured["Attention"]
    assert attention["status"] == "ok" and attention["capture"] == "trace"
    assert attention["arguments_inferred"] == "Attention(dim=64, heads=8)"
    assert attention["inputs_inferred"] == "(torch.randn(2, 16, 64),)"
    assert "build_error" not in attention
    missing_op = mps_missing().op.split(".")[0]
    ops = {entry["op"].split(".")[0] for entry in attention["ops"]}
    assert missing_op in ops  # the op the traced graph reaches is kept


def test_a_guess_torchscript_refuses_is_reported_as_not_built(captured: dict[str, Any]) -> None:
    """No inputs could be inferred and TorchScript cannot compile the guessed build: that may
    be the guess's doing, so it is reported as before inference (not built, read from source)."""
    unscriptable = captured["Unscriptable"]
    assert unscriptable["status"] == "build_failed" and unscriptable["capture"] == "static"
    assert unscriptable["build_error"]["kind"] == "arguments" and unscriptable["build_error"]["missing"] == ["dim"]
    for key in ("script_error", "arguments_inferred", "build", "inputs_inferred"):
        assert key not in unscriptable, key


def test_a_class_no_guess_builds_is_reported_as_today(captured: dict[str, Any]) -> None:
    never = captured["Never"]
    assert never["status"] == "build_failed" and never["capture"] == "static"
    assert never["build_error"]["kind"] == "arguments" and never["build_error"]["missing"] == ["dim"]
    assert "arguments_inferred" not in never


def test_without_inference_constructor_arguments_are_not_guessed(tmp_path: Any) -> None:
    attention = _capture(tmp_path, infer=False)["Attention"]
    assert attention["status"] == "build_failed" and attention["build_error"]["kind"] == "arguments"
    assert "arguments_inferred" not in attention
