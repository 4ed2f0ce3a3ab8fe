"""The fix catalog: one declarative entry per rewrite or remedy.

Read `model.Rewrite` for what each field means. Every entry here has golden fixtures
(`tests/fixes/fixtures/<id>*.in.py` -> `.out.py`), an equivalence test that runs the
original and the rewrite on CPU over random inputs (`tests/fixes/test_equivalence.py`),
and a self-consistency test (atenlint finds nothing at the rewritten call for the
entry's targets); `tests/fixes/test_catalog.py` fails when one is missing.

`torch_versions` says, per target, in which torch releases the entry is offered: where
the original overloads lack a kernel there and the replacement's overloads have one.
For MPS the bounds come from `targets/data/mps_history.json` (the MPS kernels of each
torch release since 2.0, read from each wheel's native_functions.yaml) and
`test_catalog.py` checks them against it; a target without a range is not limited.

Order matters: for one finding, fixes are offered in catalog order, and `--fix` applies
the first exact one.
"""

from __future__ import annotations

from .model import CONFIG, EXPLAIN, REWRITE, SUPPRESS, Condition, Remedy, Rewrite

# The SVD, eigh and eig kernels (each overload the dispatcher and the CPU-fallback warning name).
_LINALG_DECOMPOSITION_OPS = (
    "aten::_linalg_svd.U",
    "aten::_linalg_svd",
    "aten::linalg_svd",
    "aten::linalg_svd.U",
    "aten::_linalg_eigh.eigenvalues",
    "aten::_linalg_eigh",
    "aten::linalg_eig",
    "aten::linalg_eig.out",
)
_ROUND_TRIP_WHY = (
    "runs the op on the CPU on purpose: the input goes to the CPU with `.cpu()` and the result "
    "comes back with `.to(<input>.device)`. That is what PYTORCH_ENABLE_MPS_FALLBACK=1 does behind "
    "your back; written out, it needs no environment variable, raises no warning, and the copy "
    "to and from the GPU is visible where it costs"
)
_ROUND_TRIP_EQUIVALENCE = (
    "identical results (the same CPU kernel the fallback runs); the test checks bitwise "
    "equality, dtype and shape on CPU"
)

_INTERPOLATE = (
    "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
    "recompute_scale_factor=None, antialias=False"
)
# Both filters give each output a weighted average of nearby inputs (weights summing to 1),
# so two outputs differ by at most (sum |w| + sum |v|) / 2 times the input's range.
_ANTIALIAS_EQUIVALENCE = (
    "equal to float round-off (bilinear, no size reduced) and within the stated bound of the "
    "input's range otherwise, over float32/float64 images of several sizes, up and down"
)

REWRITES: tuple[Rewrite, ...] = (
    Rewrite(
        id="take-flat-index",
        title="Index the flattened tensor",
        targets=("mps", "coreml"),
        ops=("aten::take", "aten::take.out"),
        functions=("torch.take",),
        methods=("take",),
        signature="input, index",
        template="{input}.reshape(-1)[{index}]",
        exact=True,
        why="`take` reads the tensor as if it were 1-D; `reshape(-1)` and advanced indexing gather the same "
        "elements into the index's shape (negative indices count from the end in both)",
        equivalence="bitwise equal over float32/float64/int64 inputs of 0-4 dimensions and random (also "
        "negative) indices of several shapes",
        torch_versions={"mps": ">=2.0,<2.15"},
    ),
    Rewrite(
        id="put-index-put",
        title="Write through the flattened tensor",
        targets=("mps", "coreml", "executorch", "onnx"),
        ops=("aten::put_", "aten::put", "aten::put.out"),
        functions=("torch.put",),
        methods=("put",),
        signature="input, index, source, accumulate=False",
        template="{input}.reshape(-1).index_put(({index}.reshape(-1),), {source}.reshape(-1), "
        "{accumulate}).reshape({input}.shape)",
        exact=True,
        why="`put` writes `source` into the tensor read as 1-D; `index_put` on the flattened tensor does the "
        "same (also with accumulate=True) and reshaping gives back the input's shape",
        equivalence="bitwise equal (accumulate=False, distinct and negative indices) or within float round-off, "
        "rtol and atol 1e-6 float32, 1e-14 float64 (accumulate=True, repeated indices: the summation "
        "order may differ) over float32/float64 inputs of 1-3 dimensions",
        torch_versions={"mps": ">=2.0,<2.15"},
    ),
    Rewrite(
        id="put-inplace-copy-index-put",
        title="Write through the flattened tensor in place",
        targets=("mps",),
        ops=("aten::put_",),
        methods=("put_",),
        signature="input, index, source, accumulate=False",
        template="{input}.copy_({input}.reshape(-1).index_put(({index}.reshape(-1),), {source}.reshape(-1), "
        "{accumulate}).reshape({input}.shape))",
        exact=True,
        why="the same as `put-index-put`, copied back into the tensor in place (`copy_` returns it, as "
        "`put_` does), so it also works on non-contiguous tensors",
        equivalence="bitwise equal result, in-place update and identity of the returned tensor (accumulate=False, "
        "on a transposed, non-contiguous view), float round-off as for put with accumulate=True, over "
        "float32/float64 inputs of several shapes",
        torch_versions={"mps": ">=2.0,<2.15"},
    ),
    Rewrite(
        id="heaviside-where",
        title="Write the step function with `where`",
        targets=("mps", "coreml", "xla"),
        ops=("aten::heaviside.out", "aten::heaviside"),
        functions=("torch.heaviside",),
        methods=("heaviside",),
        signature="input, values, *, out=None",
        template="{torch}.where({input} == 0, {values}, ({input} > 0).to({input}.dtype))",
        when=(Condition("absent", ("out",)),),
        exact=True,
        why="heaviside is `values` where the input is 0, 1 where it is positive and 0 elsewhere (NaN "
        "included); `where` with two comparisons says exactly that and broadcasts the same way",
        equivalence="bitwise equal over float32/float64/int64 inputs with zeros, negative zeros and NaN, "
        "broadcast values",
        torch_versions={"mps": ">=2.0,<2.15"},
    ),
    Rewrite(
        id="logspace-pow-linspace",
        title="Raise the base to a `linspace`",
        targets=("mps", "xla"),
        ops=("aten::logspace.out", "aten::logspace"),
        functions=("torch.logspace",),
        signature="start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, "
        "requires_grad=False, pin_memory=False",
        template="{torch}.pow({base}, {torch}.linspace({start}, {end}, {steps}[?, dtype={dtype}?]"
        "[?, layout={layout}?][?, device={device}?][?, pin_memory={pin_memory}?]))",
        when=(
            Condition("absent", ("out",)),
            Condition("literal", ("requires_grad", False)),
            Condition("float_dtype", ("dtype",)),
        ),
        exact=True,
        why="logspace is base ** linspace(start, end, steps) by definition; linspace and pow with a scalar "
        "base have MPS kernels",
        equivalence="relative error within 8 ulp of the dtype (float32, float64, float16, bfloat16) over "
        "random start/end/steps/base",
        torch_versions={"mps": ">=2.1,<2.15"},
    ),
    Rewrite(
        id="log-ndtr-erfcx",
        title="Compute log Φ(x) from `erfcx` and `log1p`",
        targets=("mps",),
        ops=("aten::special_log_ndtr.out", "aten::special_log_ndtr"),
        functions=("torch.special.log_ndtr",),
        signature="input, *, out=None",
        template="{torch}.where({input} < -1, "
        "{torch}.log({torch}.special.erfcx(-{input}.clamp(max=-1.0) * 0.7071067811865476) / 2)"
        " - {input}.clamp(max=-1.0) ** 2 / 2, "
        "{torch}.log1p(-{torch}.special.erfc({input}.clamp(min=-1.0) * 0.7071067811865476) / 2))",
        when=(Condition("absent", ("out",)),),
        exact=True,
        why="the same two-branch formula torch's own kernel uses: below -1, log(erfcx(-x/√2)/2) - x²/2 (no "
        "underflow far in the left tail); above, log1p(-erfc(x/√2)/2). Each branch's input is clamped to "
        "its side so the branch not taken never produces inf or NaN (which would poison gradients)",
        equivalence="relative error within 8 ulp (float32, float64, and integers, which promote alike) over "
        "[-40, 10], random normals and the branch point -1, with ±inf and NaN mapped alike",
        torch_versions={"mps": ">=2.11"},
    ),
    Rewrite(
        id="pdist-cdist-triu",
        title="Take the upper triangle of `cdist`",
        targets=("mps",),
        ops=("aten::_pdist_forward", "aten::pdist"),
        functions=("torch.pdist", "torch.nn.functional.pdist"),
        signature="input, p=2.0",
        template='{torch}.cdist({input}, {input}, p={p}, compute_mode="donot_use_mm_for_euclid_dist")'
        "[{torch}.ones({input}.shape[0], {input}.shape[0], dtype={torch}.bool, "
        "device={input}.device).triu(1)]",
        exact=True,
        why="pdist is the strictly upper triangle of the pairwise-distance matrix in row-major order, which "
        "is the order a boolean mask selects in; `donot_use_mm_for_euclid_dist` keeps cdist on the "
        "direct difference formula pdist uses (the matmul shortcut loses precision)",
        equivalence="equal within float round-off (rtol 1e-5 and atol 1e-6 float32, 1e-12 float64) for p in "
        "{0, 1, 1.5, 2, 3, inf} over 0-12 rows of 1-7 features, repeated rows included",
        torch_versions={"mps": ">=2.0"},
    ),
    Rewrite(
        id="adaptive-avg-pool3d-avg-pool3d",
        title="Average over fixed windows with `avg_pool3d`",
        targets=("mps", "coreml", "onnx"),
        ops=(
            "aten::_adaptive_avg_pool3d",
            "aten::adaptive_avg_pool3d",
            "aten::adaptive_avg_pool3d.out",
            "aten::_adaptive_avg_pool3d.out",
        ),
        functions=("torch.nn.functional.adaptive_avg_pool3d",),
        modules=("torch.nn.AdaptiveAvgPool3d",),
        signature="input, output_size",
        module_signature="output_size",
        template="{F}.avg_pool3d({input}, {kernel})",
        derive={"kernel": "adaptive_pool_kernel_3d", "size": "traced_spatial_size_3d"},
        only_while="only for {size} inputs, the traced size: at other sizes the output shape changes",
        exact=True,
        why="when every output size divides the input size, each adaptive window is the fixed block "
        "input // output, which avg_pool3d with that kernel (and the same stride) averages. Offered only "
        "when the input's shape is known (a trace capture)",
        equivalence="equal within float round-off (rtol and atol 1e-6 float32, 1e-14 float64: the window sums "
        "may add in another order) over 4-D and 5-D inputs with dividing output sizes (None keeps a "
        "size); refused for sizes that do not divide",
        torch_versions={"mps": ">=2.9"},
    ),
    Rewrite(
        id="adaptive-max-pool3d-max-pool3d",
        title="Take maxima over fixed windows with `max_pool3d`",
        targets=("mps", "coreml"),
        ops=("aten::adaptive_max_pool3d.out", "aten::adaptive_max_pool3d"),
        functions=("torch.nn.functional.adaptive_max_pool3d",),
        modules=("torch.nn.AdaptiveMaxPool3d",),
        signature="input, output_size, return_indices=False",
        module_signature="output_size, return_indices=False",
        template="{F}.max_pool3d({input}, {kernel})",
        derive={"kernel": "adaptive_pool_kernel_3d", "size": "traced_spatial_size_3d"},
        only_while="only for {size} inputs, the traced size: at other sizes the output shape changes",
        when=(Condition("literal", ("return_indices", False)),),
        exact=True,
        why="as for the average: dividing sizes make the adaptive windows fixed blocks, and max_pool3d "
        "propagates NaN the same way. Offered only when the input's shape is known",
        equivalence="bitwise equal over 4-D and 5-D inputs with NaN, dividing output sizes",
        torch_versions={"mps": ">=2.9"},
    ),
    Rewrite(
        id="special-ndtri-erfinv",
        title="Use `erfinv` for the normal quantile (approximate in the tails)",
        targets=("mps", "xla"),
        ops=("aten::special_ndtri.out", "aten::special_ndtri"),
        functions=("torch.special.ndtri",),
        signature="input, *, out=None",
        template="{torch}.erfinv(2 * {input} - 1) * {math}.sqrt(2.0)",
        when=(Condition("absent", ("out",)),),
        exact=False,
        approximation="Φ⁻¹(p) = √2·erfinv(2p − 1) exactly, but 2p − 1 rounds away p's low bits near 0: the "
        "absolute error is at most 2·ε/φ(Φ⁻¹(p)) + 4·ε·(1 + |Φ⁻¹(p)|) (ε the dtype's machine "
        "epsilon, φ the normal density) — below 1e-5 for p in [1e-3, 1 − 1e-3] in float32, about "
        "3e-5 at p = 1e-4 and 3e-3 at p = 1e-6; 1e-13 at p = 1e-5 in float64. At or below p = ε/8 "
        "(1.5e-8 in float32, 2.8e-17 in float64) 2p − 1 rounds to −1 and the result is −inf "
        "where ndtri is finite. ±inf at 0 and 1 and NaN outside [0, 1], as ndtri",
        why="erfinv has an MPS kernel; ndtri (Cephes rational approximations) does not",
        equivalence="absolute error within the stated bound over random, grid and log-spaced p in [0, 1] "
        "(float32, float64); −inf exactly where p ≤ ε/8; identical ±inf/NaN at and outside the ends",
        torch_versions={"mps": ">=2.1"},
    ),
    Rewrite(
        id="interpolate-bilinear-without-antialias",
        title="Resample without antialiasing (approximate when downsampling)",
        targets=("mps",),
        ops=("aten::_upsample_bilinear2d_aa.out", "aten::_upsample_bilinear2d_aa", "aten::_upsample_bilinear2d_aa.vec"),
        functions=("torch.nn.functional.interpolate",),
        signature=_INTERPOLATE,
        drop=("antialias",),
        when=(Condition("literal", ("antialias", True)), Condition("literal", ("mode", "bilinear"))),
        exact=False,
        approximation="equal to float round-off when no output size is smaller than the input's (antialiasing "
        "only widens the filter when downsampling); when downsampling, the plain filter aliases: "
        "both filters average nearby inputs with non-negative weights, so an output differs by "
        "at most the input's range (max − min)",
        why="MPS has plain bilinear resampling (upsample_bilinear2d) from torch 2.0 but the antialiased "
        "kernel only from 2.7",
        equivalence=_ANTIALIAS_EQUIVALENCE,
        torch_versions={"mps": ">=2.0,<2.7"},
    ),
    Rewrite(
        id="interpolate-bicubic-without-antialias",
        title="Resample without antialiasing (approximate when downsampling)",
        targets=("mps",),
        ops=("aten::_upsample_bicubic2d_aa.out", "aten::_upsample_bicubic2d_aa", "aten::_upsample_bicubic2d_aa.vec"),
        functions=("torch.nn.functional.interpolate",),
        signature=_INTERPOLATE,
        drop=("antialias",),
        when=(Condition("literal", ("antialias", True)), Condition("literal", ("mode", "bicubic"))),
        exact=False,
        approximation="differs also when upsampling: antialiased bicubic uses the cubic kernel with a = −0.5, "
        "the plain one a = −0.75; when downsampling the plain filter also aliases. Both average "
        "nearby inputs with weights summing to 1 whose absolute sums are at most 1.9 (plain) and "
        "1.6 (antialiased) in 2-D, so an output differs by at most twice the input's range "
        "(max − min)",
        why="MPS has plain bicubic resampling (upsample_bicubic2d) from torch 2.6 but the antialiased "
        "kernel only from 2.8",
        equivalence=_ANTIALIAS_EQUIVALENCE,
        torch_versions={"mps": ">=2.6,<2.8"},
    ),
    Rewrite(
        id="linalg-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=(*_LINALG_DECOMPOSITION_OPS, "aten::linalg_matrix_exp", "aten::linalg_matrix_exp.out"),
        functions=(
            "torch.linalg.svdvals",
            "torch.linalg.eigvalsh",
            "torch.linalg.eigvals",
            "torch.linalg.matrix_exp",
            "torch.linalg.matrix_rank",
            "torch.linalg.cond",
            "torch.linalg.matrix_norm",
            "torch.linalg.norm",
        ),
        signature="A, *args, **kwargs",
        wrap={"A": "{A}.cpu()"},
        suffix=".to({A}.device)",
        when=(Condition("constant_except", ("A",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + "; torch has no MPS kernel for these decompositions (SVD, eigh and matrix_exp "
        "before 2.14, eig in any release)",
        equivalence=_ROUND_TRIP_EQUIVALENCE,
        torch_versions={"mps": ">=2.0"},
    ),
    Rewrite(
        id="linalg-decomposition-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=_LINALG_DECOMPOSITION_OPS,
        functions=("torch.linalg.svd", "torch.linalg.eigh", "torch.linalg.eig"),
        signature="A, *args, **kwargs",
        wrap={"A": "{A}.cpu()"},
        suffix=".to({A}.device)",
        fields=("U", "S", "Vh", "eigenvalues", "eigenvectors"),
        when=(Condition("constant_except", ("A",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + ". These return several tensors: offered where one of them is taken "
        "(`.S`, `.eigenvalues`, `[0]`), which is then moved back",
        equivalence=_ROUND_TRIP_EQUIVALENCE,
        torch_versions={"mps": ">=2.0"},
    ),
    Rewrite(
        id="lstsq-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=("aten::linalg_lstsq.out", "aten::linalg_lstsq", "aten::_linalg_svd.U"),
        functions=("torch.linalg.lstsq",),
        signature="A, B, *args, **kwargs",
        wrap={"A": "{A}.cpu()", "B": "{B}.cpu()"},
        suffix=".to({A}.device)",
        fields=("solution", "residuals", "rank", "singular_values"),
        when=(Condition("constant_except", ("A", "B")),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + ". Both matrices move; offered where one field of the result is taken",
        equivalence="the same CPU kernel; LAPACK's least squares is not bitwise reproducible from one call to "
        "the next, so the test allows float round-off (rtol 1e-5 float32, 1e-12 float64)",
        torch_versions={"mps": "<2.14"},
    ),
    Rewrite(
        id="mode-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=("aten::mode", "aten::mode.values"),
        functions=("torch.mode",),
        methods=("mode",),
        signature="input, *args, **kwargs",
        wrap={"input": "{input}.cpu()"},
        suffix=".to({input}.device)",
        fields=("values", "indices"),
        when=(Condition("constant_except", ("input",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + "; mode has no MPS kernel and no exact device formula (its tie-breaking is the "
        "CPU kernel's)",
        equivalence=_ROUND_TRIP_EQUIVALENCE,
        torch_versions={"mps": ">=2.0"},
    ),
    Rewrite(
        id="frexp-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=("aten::frexp.Tensor_out", "aten::frexp.Tensor"),
        functions=("torch.frexp",),
        methods=("frexp",),
        signature="input, *args, **kwargs",
        wrap={"input": "{input}.cpu()"},
        suffix=".to({input}.device)",
        fields=("mantissa", "exponent"),
        when=(Condition("constant_except", ("input",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY,
        equivalence=_ROUND_TRIP_EQUIVALENCE,
        torch_versions={"mps": "<2.15"},
    ),
    Rewrite(
        id="poisson-cpu-round-trip",
        title="Sample on the CPU explicitly",
        targets=("mps",),
        ops=("aten::poisson",),
        functions=("torch.poisson",),
        signature="input, generator=None",
        wrap={"input": "{input}.cpu()"},
        suffix=".to({input}.device)",
        when=(Condition("absent", ("generator",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + "; the samples come from the CPU generator, as they do under the fallback",
        equivalence="bitwise equal samples under the same CPU seed",
        torch_versions={"mps": "<2.14"},
    ),
    Rewrite(
        id="binomial-cpu-round-trip",
        title="Sample on the CPU explicitly",
        targets=("mps",),
        ops=("aten::binomial",),
        functions=("torch.binomial",),
        signature="count, prob, generator=None",
        wrap={"count": "{count}.cpu()", "prob": "{prob}.cpu()"},
        suffix=".to({count}.device)",
        when=(Condition("absent", ("generator",)),),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + "; the samples come from the CPU generator, as they do under the fallback",
        equivalence="bitwise equal samples under the same CPU seed",
        torch_versions={"mps": "<2.14"},
    ),
    Rewrite(
        id="adaptive-pool3d-cpu-round-trip",
        title="Run it on the CPU explicitly",
        targets=("mps",),
        ops=(
            "aten::_adaptive_avg_pool3d",
            "aten::adaptive_avg_pool3d",
            "aten::adaptive_avg_pool3d.out",
            "aten::_adaptive_avg_pool3d.out",
            "aten::adaptive_max_pool3d.out",
            "aten::adaptive_max_pool3d",
        ),
        functions=("torch.nn.functional.adaptive_avg_pool3d", "torch.nn.functional.adaptive_max_pool3d"),
        modules=("torch.nn.AdaptiveAvgPool3d", "torch.nn.AdaptiveMaxPool3d"),
        signature="input, output_size, return_indices=False",
        module_signature="output_size, return_indices=False",
        wrap={"input": "{input}.cpu()"},
        suffix=".to({input}.device)",
        when=(Condition("literal", ("return_indices", False)), Condition("constant_except", ("input",))),
        runs_on_cpu=True,
        exact=True,
        why=_ROUND_TRIP_WHY + "; when the input's shape is known and the output size divides it, the "
        "avg_pool3d/max_pool3d rewrites run on the GPU instead",
        equivalence=_ROUND_TRIP_EQUIVALENCE,
        torch_versions={"mps": ">=2.0"},
    ),
)

REMEDIES: tuple[Remedy, ...] = (
    Remedy(
        id="silence-mps-fallback-warning",
        title="Silence torch's runtime CPU-fallback warning",
        kind=SUPPRESS,
        targets=("mps",),
        codes=("MPS001", "MPS002"),
        builder="silence_fallback_warning",
        why='adds `warnings.filterwarnings("ignore", message=...)` for exactly the fallback warning of these '
        "overloads (torch words it \"The operator 'aten::X' is not currently supported on the MPS "
        'backend and will fall back to run on the CPU."; warnings filters match the start of the '
        "message, so no other warning is hidden). The op still runs on the CPU",
    ),
    Remedy(
        id="enable-mps-fallback",
        title="Explain PYTORCH_ENABLE_MPS_FALLBACK=1",
        kind=EXPLAIN,
        targets=("mps",),
        codes=("MPS001",),
        builder="explain_mps_fallback",
        why="without the variable, an op with no MPS kernel raises NotImplementedError; torch reads it once, "
        "when it loads its MPS backend (at `import torch`), so it must be set before that",
    ),
    Remedy(
        id="raise-onnx-opset",
        title="Export at the opset that has this op",
        kind=CONFIG,
        targets=("onnx",),
        codes=("ONNX002",),
        builder="raise_onnx_opset",
        why="the exporter implements the op from a later opset than the one exported at: export with "
        '`opset_version=N` and tell atenlint (`targets = ["onnx:N"]`)',
    ),
    Remedy(
        id="print-when-not-compiling",
        title="Print only when not compiling",
        kind=REWRITE,
        targets=("compile",),
        codes=("COMPILE001", "COMPILE002"),
        builder="guard_print",
        why="puts the `print(...)` statement under `if not torch.compiler.is_compiling():`. Dynamo traces the "
        "branch taken while it compiles, where the condition is False, so it never meets `print` and keeps one "
        "graph; run eagerly, the print runs as before. What the module computes is unchanged (offered only when "
        "the printed arguments call nothing that writes: no in-place method, no assignment expression)",
    ),
    Remedy(
        id="select-with-where",
        title="Select with torch.where",
        kind=REWRITE,
        targets=("compile",),
        codes=("COMPILE001", "COMPILE002"),
        builder="select_with_where",
        why="replaces a Python branch on a tensor's value that only picks one of two values (`if p: y = A` / "
        "`else: y = B`; `if p: y = A` with `y` bound before; `if p: return A` then `return B`; `A if p else B`) "
        "with `torch.where(p, A, B)`, which Dynamo keeps in the graph. "
        "torch.where computes both sides, so it is offered only where both compute nothing but a value "
        "(elementwise torch functions and Tensor methods, arithmetic: no in-place method, module call, "
        "indexing or random op) and the test is a boolean tensor; it then picks every element of the chosen "
        "side without arithmetic. The source does not show the sides' shapes and dtypes: where they differ, "
        "torch.where broadcasts and promotes instead. Gradients reach only the chosen side, but the side not "
        "taken contributes zero times its derivative, which is NaN where that derivative is infinite "
        "(`sqrt`, `log` at 0)",
    ),
    Remedy(
        id="branch-with-cond",
        title="Branch with torch.cond",
        kind=REWRITE,
        targets=("compile",),
        codes=("COMPILE001", "COMPILE002"),
        builder="branch_with_cond",
        why="turns a Python `if`/`else` on a tensor's value, whose branches both return or both set the same "
        "names (or an `if` ending in `return` and the statements after it, ending in `return`), into "
        "`torch.cond(p, true_fn, false_fn)` with each branch as a nested function that reads the "
        "enclosing names directly; Dynamo keeps both branches in one graph. Only the chosen branch runs. "
        "torch.cond traces each branch with Dynamo even when run eagerly, and raises unless both return tensors "
        "of one shape, dtype and device that are not an input (or a view of one), and neither mutates an input, "
        "an attribute or a module's buffers (BatchNorm in training). Offered only where the source shows no "
        "mutation, print or in-place op in either branch; the shapes and dtypes it cannot show",
        # What torch.cond accepts (closures, no operands; eager tracing) was checked on torch 2.13-2.15
        # (tests/fixes/test_compile_fixes_cond.py); earlier releases are untested, so not offered there.
        torch_versions={"compile": ">=2.13"},
    ),
    Remedy(
        id="capture-item-scalars",
        title="Explain how Dynamo keeps `.item()` in the graph",
        kind=EXPLAIN,
        targets=("compile",),
        codes=("COMPILE001", "COMPILE002"),
        builder="explain_item_capture",
        why="Dynamo keeps a Python number out of a tensor in the graph only with "
        "`torch._dynamo.config.capture_scalar_outputs = True` (process-wide)",
    ),
)

ENTRIES = REWRITES + REMEDIES
