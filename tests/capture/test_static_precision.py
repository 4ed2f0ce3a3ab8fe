"""Static pass precision: a method call is a tensor op only when the source says the
receiver is a tensor; code inference cannot reach is not judged for export targets; a
branch that an optional argument turns on is information; torch's CPU/CUDA-only fast
paths never show for MPS. Patterns re-typed from public model code."""

from __future__ import annotations

import textwrap

from atenlint.capture.static import static_capture


def capture(tmp_path, source, devices=("mps",), module="model"):
    path = tmp_path / f"{module}.py"
    path.write_text(textwrap.dedent(source).lstrip())
    return static_capture(
        {
            "path": str(path),
            "module": module,
            "roots": [str(tmp_path)],
            "devices": list(devices),
            "views": ["dispatch", "export"],
        }
    )


def ops_at(answer):
    """line -> {op: (phases, conditional)}"""
    out: dict = {}
    for cls in answer["classes"]:
        for op in cls["ops"]:
            line = op["sites"][0]["line"]
            phases, conditional = out.setdefault(line, {}).get(op["op"], (set(), True))
            out[line][op["op"]] = (phases | set(op["phases"]), conditional and op["conditional"])
    return out


def test_dict_numpy_and_user_objects_are_not_tensors(tmp_path):
    answer = capture(
        tmp_path,
        """
        from typing import Optional
        import numpy as np
        import torch
        from torch import nn

        class Posterior:
            def __init__(self, mean):
                self.mean = mean

            def mode(self):
                return self.mean

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            def forward(self, x, cache: Optional[dict] = None, grid=None, c=None):
                start = next(iter(cache.values())).shape[1] if cache else 0
                table = np.broadcast_to(np.arange(4), (2, 4))
                peak = table.max()
                if isinstance(c, Posterior):
                    c = c.mode()
                stats = {"a": 1}
                for value in stats.values():
                    pass
                return self.proj(x).double()
    """,
    )
    found = ops_at(answer)
    assert not any(
        op.startswith(("aten::values", "aten::broadcast_to", "aten::max", "aten::mode"))
        for ops in found.values()
        for op in ops
    ), found
    # the receiver that is a tensor still counts: a Linear's output, .double()
    assert any("aten::_to_copy" in ops or "aten::to" in " ".join(ops) for ops in found.values()), found


def test_tensors_the_source_vouches_for_are_judged(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn, Tensor

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("table", torch.zeros(4, 4))

            def forward(self, x: Tensor, y, z):
                '''
                Args:
                    z (Tensor): the scores
                '''
                a = x.mode()                     # annotated
                b = torch.ones(3).mode()          # a torch call's result
                w = y.view(-1)                    # only tensors have .view: y is one
                c = y.mode()
                d = self.table.mode()             # a registered buffer
                e = z.mode()                      # documented as a tensor
                if isinstance(z, torch.Tensor):
                    f = z.mode()
                return a, b, c, d, e, w
    """,
    )
    found = ops_at(answer)
    mode_lines = {line for line, ops in found.items() if any(op.startswith("aten::mode") for op in ops)}
    assert {14, 15, 17, 18, 19, 21} <= mode_lines, found


def test_unsure_receivers_stay_silent(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.encoder = encoder

            def forward(self, batch):
                posterior = self.encoder(batch)
                return posterior.mode()
    """,
    )
    assert not any(op.startswith("aten::mode") for ops in ops_at(answer).values() for op in ops)


def test_training_only_code_is_not_judged_for_export(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn

        class DropSample(nn.Module):
            def __init__(self, prob=0.1):
                super().__init__()
                self.prob = prob

            def forward(self, x):
                if self.prob == 0. or (not self.training):
                    return x
                keep = torch.zeros(x.shape[0], 1, 1, 1).uniform_() > self.prob
                return x * keep / (1 - self.prob)

        class SpecMask(nn.Module):
            def forward(self, spec):
                if self.training:
                    spec = spec * torch.rand(spec.shape[-1]).bernoulli_(0.9)
                return spec.log1p()
    """,
    )
    found = ops_at(answer)
    uniform = found[12]["aten::uniform_"]
    assert uniform[0] == {"train"}, found[12]
    bernoulli = next(v for k, v in found[18].items() if k.startswith("aten::bernoulli"))
    assert bernoulli[0] == {"train"}
    assert found[19]["aten::log1p"][0] == {"train", "eval"}


def test_optional_argument_branches_are_conditional(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        import torch.nn.functional as F
        from torch import nn

        def exists(val):
            return val is not None

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.out = nn.Linear(8, 4)

            def loss(self, logits, labels):
                return F.ctc_loss(logits, labels, torch.ones(1, dtype=torch.long), torch.ones(1, dtype=torch.long))

            def forward(self, x, labels=None, return_loss=False):
                logits = self.out(x)
                if return_loss:
                    return self.loss(logits, labels)
                wants = exists(labels)
                if not wants:
                    return logits.softmax(-1)
                return torch.linalg.svdvals(logits)
    """,
    )
    found = ops_at(answer)
    ctc = next(v for k, v in found[14].items() if "ctc" in k)
    assert ctc[1] is True  # only with return_loss=True: information
    assert all(conditional for _, conditional in found[23].values())  # only with labels given
    assert not any(conditional for _, conditional in found[22].values())  # the default path


def test_multihead_attention_fast_path_never_on_mps(tmp_path):
    source = """
        from torch import nn

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

            def forward(self, x):
                return self.mha(x, x, x)[0]
    """
    mps = ops_at(capture(tmp_path, source, devices=("mps",)))
    assert not any("_native_multi_head_attention" in op for ops in mps.values() for op in ops)


def test_containers_of_tensors_are_not_tensors(tmp_path):
    answer = capture(
        tmp_path,
        '''
        import torch
        from torch import nn

        class Criterion(nn.Module):
            def forward(self, outputs, targets):
                """
                Parameters:
                    outputs: dict of tensors, see the model's output
                    targets: list of dicts
                """
                kept = {k: v for k, v in outputs.items() if k != "aux"}
                device = next(iter(outputs.values())).device
                boxes = targets[0]["boxes"]
                return torch.as_tensor([len(targets)], device=device)
    ''',
        devices=("cpu",),
    )
    assert not any(op.startswith("aten::values") for ops in ops_at(answer).values() for op in ops)


def test_autograd_functions_are_not_module_classes(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn

        class Checkpointed(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return torch.linalg.svdvals(x)

        class Net(nn.Module):
            def forward(self, x):
                return x.relu()
    """,
    )
    assert [cls["qualname"] for cls in answer["classes"]] == ["Net"]


def _tree_ops(tree):
    yield tree
    for child in tree.get("calls") or ():
        yield from _tree_ops(child)


def test_export_views_judge_what_export_keeps(tmp_path):
    """Read from vit-pytorch's ats_vit / mpp: torch.export decomposes `pad_sequence` with its
    table's entry (pad, then scatter), not the kernel's `copy_` into slices, and
    functionalises the whole graph, so no in-place op is in an exported program (the real
    export agrees, below); the dynamo ONNX exporter decomposes `bucketize`, which its
    registry lacks, with its own table (torch.onnx.export of it succeeds), into ops a source
    read cannot see; an in-place call is the functional op in every export view."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from atenlint.targets.walk import unsupported

    path = tmp_path / "model.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence

            class Sampler(nn.Module):
                def forward(self, x: torch.Tensor, boundaries: torch.Tensor):
                    padded = pad_sequence([x[0], x[1, :2]], batch_first=True)
                    return torch.relu_(padded), torch.bucketize(x, boundaries)
            """
        ).lstrip()
    )
    answer = static_capture(
        {
            "path": str(path),
            "module": "model",
            "roots": [str(tmp_path)],
            "devices": [],
            "views": ["dispatch", "executorch-export", "onnx-export", "coreml-export"],
        }
    )
    trees = {op["op"]: op["trees"] for cls in answer["classes"] for op in cls["ops"]}
    pad, bucketize = trees["aten::pad_sequence"], trees["aten::bucketize.Tensor"]
    for view in ("executorch-export", "onnx-export"):
        inner = [node["op"] for node in _tree_ops(pad[view])]
        assert "aten::constant_pad_nd" in inner
        assert not [op for op in inner if op.split("::")[1].split(".")[0].endswith("_")], inner
    # The dispatcher does run the in-place copy: a device backend is judged on it.
    assert "aten::copy_" in [node["op"] for node in _tree_ops(pad["dispatch"])]
    # Core ML's export frontend reads the exported program as it is (no decomposition): the
    # functional op, as there.
    assert trees["aten::relu_"]["coreml-export"]["op"] == "aten::relu"
    assert unsupported(bucketize["onnx-export"], lambda op: False) == []
    assert unsupported(bucketize["executorch-export"], lambda op: False) == ["aten::bucketize.Tensor"]

    class Padding(torch.nn.Module):
        def forward(self, x):
            return pad_sequence([x[0], x[1, :2]], batch_first=True)

    exported = torch.export.export(Padding(), (torch.rand(2, 3, 4),)).run_decompositions()
    targets = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
    assert not [t for t in targets if t.split(".")[1].endswith("_")], targets
    assert "aten.constant_pad_nd.default" in targets
