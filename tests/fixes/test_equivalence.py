"""Every rewrite computes what the original computed: both run on CPU over seeded sweeps
of shapes, dtypes and values (edge values included), and must agree within the entry's
stated tolerance.

The rewritten code is produced by the real fix pipeline (a finding at the call, the
catalog's template, the edits applied to the source), so these tests check the templates
as written in the catalog, not a hand copy of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
import torch
from fixes_support import BY_ID, apply_text, finding_for_call, fixes_of

from atenlint.fixes.attach import explain_refusal
from atenlint.fixes.callsite import FileContext
from atenlint.sourcetext import SourceText

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
FLOATS = (torch.float32, torch.float64)


@dataclass(frozen=True)
class Case:
    entry: str
    source: str  # defines f(...); the prelude is added
    call: str  # the call in `source` to rewrite
    inputs: Callable[[torch.Generator], Iterator[dict]]
    check: Callable[[object, object, dict], None]
    data_for: Callable[[dict], dict] | None = None  # finding data that depends on the inputs
    data: dict = field(default_factory=dict)  # finding data (a torch release inside the entry's range)
    seeded: bool = False  # random sampling: reseed the global generator before each call
    refused_when: Callable[[dict], bool] | None = None  # inputs for which no fix may be offered
    ops: list | None = None

    @property
    def id(self) -> str:
        return f"{self.entry}:{self.call}"


def rewrite(case: Case, data: dict | None = None) -> str | None:
    """The source with the case's call rewritten (None: the entry refuses it)."""
    source = PRELUDE + case.source
    finding = finding_for_call(
        source, case.call, case.entry, data={**case.data, **(data or {})}, **({"ops": case.ops} if case.ops else {})
    )
    fixes = [f for f in fixes_of(source, finding) if f["id"] == case.entry]
    if not fixes:
        print(explain_refusal(BY_ID[case.entry], finding, FileContext.build(SourceText(source, finding.abs_path))))
        return None
    return apply_text(source, fixes[0])


def compiled(source: str) -> Callable:
    namespace: dict = {}
    exec(compile(source, "<rewritten>", "exec"), namespace)  # noqa: S102 - runs the rewritten code under test
    return namespace["f"]


# -- comparisons -----------------------------------------------------------------------


def _pairs(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            yield from _pairs(x, y)
    else:
        yield a, b


def identical(a, b, inputs) -> None:
    for x, y in _pairs(a, b):
        if isinstance(x, torch.Tensor):
            assert x.dtype == y.dtype and x.shape == y.shape and x.device == y.device
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)
        else:
            assert x == y


def ulps(count: int) -> Callable:
    """Relative error within `count` units of the dtype's epsilon (and the same specials)."""

    def check(a, b, inputs) -> None:
        for x, y in _pairs(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            eps = torch.finfo(x.dtype).eps
            torch.testing.assert_close(x, y, rtol=count * eps, atol=0, equal_nan=True)

    return check


def round_off(rtol32: float, rtol64: float, atol32: float = 0.0, atol64: float = 0.0) -> Callable:
    def check(a, b, inputs) -> None:
        for x, y in _pairs(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            single = x.dtype in (torch.float32, torch.float16, torch.bfloat16)
            torch.testing.assert_close(
                x, y, rtol=rtol32 if single else rtol64, atol=atol32 if single else atol64, equal_nan=True
            )

    return check


# -- inputs ----------------------------------------------------------------------------


def _tensor(shape, dtype, generator, low=-3.0, high=3.0):
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low).to(dtype)
    return torch.randint(int(low) * 3, int(high) * 3 + 1, shape, generator=generator, dtype=dtype)


def take_inputs(generator) -> Iterator[dict]:
    for dtype in (torch.float32, torch.float64, torch.int64):
        for shape in ((), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2)):
            x = _tensor(shape, dtype, generator)
            numel = max(x.numel(), 1)
            for index_shape in ((), (7,), (2, 3)):
                yield {"x": x, "i": torch.randint(-numel, numel, index_shape, generator=generator)}


def put_inputs(accumulate: bool):
    def inputs(generator) -> Iterator[dict]:
        for dtype in FLOATS:
            for shape in ((6,), (3, 4), (2, 3, 4)):
                x = _tensor(shape, dtype, generator)
                count = min(5, x.numel())
                if accumulate:
                    i = torch.randint(-x.numel(), x.numel(), (2, count), generator=generator)  # repeats
                else:
                    i = torch.randperm(x.numel(), generator=generator)[:count] - x.numel() * (count % 2)
                yield {"x": x, "i": i, "s": _tensor(i.shape, dtype, generator)}

    return inputs


def put_inplace_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for shape in ((3, 4), (5, 2)):
            x = _tensor(shape, dtype, generator)
            i = torch.randperm(x.numel(), generator=generator)[:4]
            yield {"x": x, "i": i, "s": _tensor((4,), dtype, generator)}


def heaviside_inputs(generator) -> Iterator[dict]:
    special = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-30, -1e-30])
    for dtype in (torch.float32, torch.float64, torch.int64):
        for shape, value_shape in (((7,), ()), ((3, 7), (7,)), ((2, 3, 4), (3, 1)), ((4, 1), (1, 5))):
            x = _tensor(shape, dtype, generator, -2, 2)
            if dtype.is_floating_point and x.numel() >= special.numel():
                x.view(-1)[: special.numel()] = special.to(dtype)
            yield {"x": x, "v": _tensor(value_shape, dtype, generator)}


def logspace_inputs(generator) -> Iterator[dict]:
    for _ in range(12):
        start, end = (torch.rand(2, generator=generator, dtype=torch.float64) * 8 - 4).tolist()
        steps = int(torch.randint(1, 60, (), generator=generator))
        base = float(torch.rand((), generator=generator, dtype=torch.float64) * 8.5 + 1.5)
        yield {"s": start, "e": end, "n": steps, "b": base}
    yield {"s": 0, "e": 3, "n": 4, "b": 10.0}
    yield {"s": 2, "e": -2, "n": 5, "b": 2}


def log_ndtr_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        yield {"x": torch.linspace(-40, 10, 2001, dtype=dtype)}
        yield {"x": torch.randn(4, 50, generator=generator, dtype=torch.float64).mul(5).to(dtype)}
        yield {
            "x": torch.tensor(
                [-1.0, -1.0 - 1e-7, -0.999, 0.0, -0.0, 38.0, float("inf"), -float("inf"), float("nan")], dtype=dtype
            )
        }
    yield {"x": torch.tensor([-50, -3, -1, 0, 2, 9])}  # integers promote to float like log_ndtr


def pdist_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for rows in (0, 1, 2, 5, 12):
            for features in (1, 3, 7):
                x = _tensor((rows, features), dtype, generator)
                if rows > 3:
                    x[3] = x[1]  # a zero distance
                for q in (0.0, 1.0, 1.5, 2.0, 3.0, float("inf")):
                    yield {"x": x, "q": q}


def pool3d_inputs(with_nan: bool):
    def inputs(generator) -> Iterator[dict]:
        for dtype in FLOATS:
            for shape in ((3, 4, 8, 6), (2, 3, 4, 8, 6), (1, 2, 6, 6, 6)):
                x = _tensor(shape, dtype, generator)
                if with_nan:
                    x.view(-1)[int(torch.randint(0, x.numel(), (), generator=generator))] = float("nan")
                yield {"x": x}

    return inputs


def pool_shape_data(inputs: dict) -> dict:
    return {"arg_shapes": {"self": list(inputs["x"].shape)}}


def not_dividing(*output_size):
    def refused(inputs: dict) -> bool:
        return any(out is not None and size % out for size, out in zip(inputs["x"].shape[-3:], output_size))

    return refused


def ndtri_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        yield {"p": torch.rand(5000, generator=generator, dtype=torch.float64).to(dtype)}
        yield {"p": torch.linspace(0, 1, 10001, dtype=dtype)}
        yield {"p": torch.logspace(-30, -1, 300, dtype=dtype)}
        yield {"p": 1 - torch.logspace(-7, -1, 300, dtype=dtype)}
        yield {"p": torch.tensor([0.0, 1.0, -0.1, 1.1, float("nan"), 0.5], dtype=dtype)}


def ndtri_bound(a, b, inputs) -> None:
    """|rewrite - ndtri| <= 2·eps/φ(z) + 4·eps·(1 + |z|), z = ndtri(p); -inf exactly below
    p = eps/8, where 2p - 1 rounds to -1 (at the tie it rounds to even: -1 too); other
    specials identical."""
    assert a.dtype == b.dtype and a.shape == b.shape
    p = inputs["p"]
    eps = torch.finfo(a.dtype).eps
    underflow = (p > 0) & (p <= eps / 8)
    assert bool((b[underflow] == -float("inf")).all())
    assert not bool(torch.isinf(b[(p > eps / 8) & (p < 1)]).any())
    a, b = a[~underflow], b[~underflow]
    finite = torch.isfinite(a)
    torch.testing.assert_close(a[~finite], b[~finite], rtol=0, atol=0, equal_nan=True)
    z = a[finite].double()
    density = torch.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    bound = 2 * eps / density + 4 * eps * (1 + z.abs())
    error = (b[finite].double() - z).abs()
    assert bool((error <= bound).all()), f"worst excess {float((error / bound).max()):.3f} of the bound"


def interpolate_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for size_in, size_out in (
            ((8, 8), (16, 16)),
            ((8, 8), (13, 11)),
            ((16, 16), (8, 8)),
            ((17, 9), (5, 4)),
            ((9, 9), (9, 9)),
            ((6, 12), (12, 5)),
        ):
            yield {"x": _tensor((2, 3, *size_in), dtype, generator), "size": list(size_out)}


def within_range(factor: float, bilinear: bool) -> Callable:
    """Outputs differ by at most `factor` times each image's range (max - min); with
    bilinear and no size reduced, by float round-off only."""

    def check(a, b, inputs) -> None:
        assert a.dtype == b.dtype and a.shape == b.shape
        x = inputs["x"]
        spread = (x.amax(dim=(-2, -1)) - x.amin(dim=(-2, -1)))[..., None, None]
        eps = torch.finfo(x.dtype).eps
        if bilinear and all(o >= i for o, i in zip(inputs["size"], x.shape[-2:])):
            assert bool(((a - b).abs() <= 16 * eps * spread).all())
        else:
            assert bool(((a - b).abs() <= factor * spread + 16 * eps * spread).all())

    return check


def matrices(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for shape in ((3, 3), (2, 4, 4), (5, 5)):
            a = _tensor(shape, dtype, generator)
            yield {"a": a, "sym": a + a.mT}


def lstsq_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for rows, cols, rhs in ((6, 3, 2), (4, 4, 1), (2, 8, 5, 3)[:3]):
            yield {"a": _tensor((rows, cols), dtype, generator), "b": _tensor((rows, rhs), dtype, generator)}


def labels_inputs(generator) -> Iterator[dict]:
    for shape in ((9,), (4, 7), (3, 2, 5)):
        yield {"x": torch.randint(0, 3, shape, generator=generator)}
        yield {"x": _tensor(shape, torch.float32, generator).round()}


def frexp_inputs(generator) -> Iterator[dict]:
    for dtype in (torch.float16, torch.float32, torch.float64):
        x = _tensor((40,), dtype, generator, -1e3, 1e3)
        x[:6] = torch.tensor([0.0, -0.0, 1.0, 0.5, float("inf"), float("nan")], dtype=dtype)
        yield {"x": x}


def rate_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for shape, scale in (((50,), 20.0), ((4, 6), 0.5), ((3, 2, 2), 500.0)):
            yield {"r": torch.rand(shape, generator=generator, dtype=dtype) * scale}


def binomial_inputs(generator) -> Iterator[dict]:
    for dtype in FLOATS:
        for shape, top in (((40,), 30), ((5, 6), 3), ((2, 2, 3), 1000)):
            yield {
                "n": torch.randint(0, top, shape, generator=generator).to(dtype),
                "q": torch.rand(shape, generator=generator, dtype=dtype),
            }


POOL_MODULE = (
    "class Head(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.pool = nn.{cls}({size})\n\n"
    "    def forward(self, x):\n"
    "        return self.pool(x)\n\n\n"
    "def f(x):\n"
    "    return Head()(x)\n"
)

CASES = [
    Case("take-flat-index", "def f(x, i):\n    return torch.take(x, i)\n", "torch.take(x, i)", take_inputs, identical),
    Case("take-flat-index", "def f(x, i):\n    return x.take(i)\n", "x.take(i)", take_inputs, identical),
    Case(
        "take-flat-index",
        "def f(x, i):\n    return torch.take(input=x * 1, index=i + 0)\n",
        "torch.take(input=x * 1, index=i + 0)",
        take_inputs,
        identical,
    ),
    Case(
        "put-index-put",
        "def f(x, i, s):\n    return x.put(i, s)\n",
        "x.put(i, s)",
        put_inputs(False),
        identical,
        ops=["aten::put_"],
    ),
    Case(
        "put-index-put",
        "def f(x, i, s):\n    return torch.put(x, i, s, accumulate=True)\n",
        "torch.put(x, i, s, accumulate=True)",
        put_inputs(True),
        round_off(1e-6, 1e-14, 1e-6, 1e-14),
        ops=["aten::put_"],
    ),
    Case(
        "put-inplace-copy-index-put",
        "def f(x, i, s):\n    base = x.clone()\n    y = base.t()\n    r = y.put_(i, s)\n    return r, y, base, r is y\n",
        "y.put_(i, s)",
        put_inplace_inputs,
        identical,
    ),
    Case(
        "put-inplace-copy-index-put",
        "def f(x, i, s):\n    y = x.clone()\n    y.put_(i, s, accumulate=True)\n    return y\n",
        "y.put_(i, s, accumulate=True)",
        put_inplace_inputs,
        round_off(1e-6, 1e-14, 1e-6, 1e-14),
    ),
    Case(
        "heaviside-where",
        "def f(x, v):\n    return torch.heaviside(x, v)\n",
        "torch.heaviside(x, v)",
        heaviside_inputs,
        identical,
    ),
    Case("heaviside-where", "def f(x, v):\n    return x.heaviside(v)\n", "x.heaviside(v)", heaviside_inputs, identical),
    *[
        Case(
            "logspace-pow-linspace",
            f"def f(s, e, n, b):\n    return torch.logspace(s, e, n, base=b{dtype})\n",
            f"torch.logspace(s, e, n, base=b{dtype})",
            logspace_inputs,
            ulps(8),
        )
        for dtype in (
            "",
            ", dtype=torch.float32",
            ", dtype=torch.float64",
            ", dtype=torch.float16",
            ", dtype=torch.bfloat16",
        )
    ],
    Case(
        "logspace-pow-linspace",
        "def f(s, e, n, b):\n    return torch.logspace(s, e, n)\n",
        "torch.logspace(s, e, n)",
        logspace_inputs,
        ulps(8),
    ),
    Case(
        "log-ndtr-erfcx",
        "def f(x):\n    return torch.special.log_ndtr(x)\n",
        "torch.special.log_ndtr(x)",
        log_ndtr_inputs,
        ulps(8),
    ),
    Case(
        "pdist-cdist-triu",
        "def f(x, q):\n    return F.pdist(x, q)\n",
        "F.pdist(x, q)",
        pdist_inputs,
        round_off(1e-5, 1e-12, 1e-6, 1e-12),
    ),
    Case(
        "pdist-cdist-triu",
        "def f(x, q):\n    return torch.pdist(x)\n",
        "torch.pdist(x)",
        pdist_inputs,
        round_off(1e-5, 1e-12, 1e-6, 1e-12),
    ),
    *[
        Case(
            "adaptive-avg-pool3d-avg-pool3d",
            "def f(x):\n    return F.adaptive_avg_pool3d(x, " + text + ")\n",
            "F.adaptive_avg_pool3d(x, " + text + ")",
            pool3d_inputs(False),
            round_off(1e-6, 1e-14, 1e-6, 1e-14),
            data_for=pool_shape_data,
            refused_when=not_dividing(*size),
        )
        for text, size in (("(2, 4, 2)", (2, 4, 2)), ("(1, None, 3)", (1, None, 3)), ("2", (2, 2, 2)))
    ],
    Case(
        "adaptive-avg-pool3d-avg-pool3d",
        POOL_MODULE.format(cls="AdaptiveAvgPool3d", size="(2, 2, 3)"),
        "self.pool(x)",
        pool3d_inputs(False),
        round_off(1e-6, 1e-14, 1e-6, 1e-14),
        data_for=pool_shape_data,
        refused_when=not_dividing(2, 2, 3),
    ),
    *[
        Case(
            "adaptive-max-pool3d-max-pool3d",
            "def f(x):\n    return F.adaptive_max_pool3d(x, " + text + ")\n",
            "F.adaptive_max_pool3d(x, " + text + ")",
            pool3d_inputs(True),
            identical,
            data_for=pool_shape_data,
            refused_when=not_dividing(*size),
        )
        for text, size in (("(2, 4, 2)", (2, 4, 2)), ("(None, 1, 3)", (None, 1, 3)))
    ],
    Case(
        "adaptive-max-pool3d-max-pool3d",
        POOL_MODULE.format(cls="AdaptiveMaxPool3d", size="output_size=2"),
        "self.pool(x)",
        pool3d_inputs(True),
        identical,
        data_for=pool_shape_data,
        refused_when=not_dividing(2, 2, 2),
    ),
    Case(
        "special-ndtri-erfinv",
        "def f(p):\n    return torch.special.ndtri(p)\n",
        "torch.special.ndtri(p)",
        ndtri_inputs,
        ndtri_bound,
    ),
    Case(
        "interpolate-bilinear-without-antialias",
        'def f(x, size):\n    return F.interpolate(x, size=size, mode="bilinear", antialias=True)\n',
        'F.interpolate(x, size=size, mode="bilinear", antialias=True)',
        interpolate_inputs,
        within_range(1.0, bilinear=True),
        ops=["aten::_upsample_bilinear2d_aa.vec"],
        data={"torch": "2.6.0"},
    ),
    Case(
        "interpolate-bicubic-without-antialias",
        'def f(x, size):\n    return F.interpolate(x, size, None, "bicubic", False, antialias=True)\n',
        'F.interpolate(x, size, None, "bicubic", False, antialias=True)',
        interpolate_inputs,
        within_range(2.0, bilinear=False),
        ops=["aten::_upsample_bicubic2d_aa.vec"],
        data={"torch": "2.7.0"},
    ),
    *[
        Case("linalg-cpu-round-trip", f"def f(a, sym):\n    return {call}\n", call, matrices, identical)
        for call in (
            "torch.linalg.svdvals(a)",
            'torch.linalg.eigvalsh(sym, UPLO="U")',
            "torch.linalg.eigvals(a)",
            "torch.linalg.matrix_exp(a)",
            "torch.linalg.matrix_rank(a, hermitian=False)",
            "torch.linalg.cond(a)",
            "torch.linalg.matrix_norm(a, ord=2)",
            "torch.linalg.norm(a, 2, (-2, -1))",
        )
    ],
    *[
        Case(
            "linalg-decomposition-cpu-round-trip",
            f"def f(a, sym):\n    return {call}.{field}\n",
            call,
            matrices,
            identical,
        )
        for call, field in (
            ("torch.linalg.eigh(sym)", "eigenvalues"),
            ('torch.linalg.eigh(sym, "U")', "eigenvectors"),
            ("torch.linalg.svd(a, full_matrices=False)", "S"),
            ("torch.linalg.eig(a)", "eigenvalues"),
        )
    ],
    Case(
        "linalg-decomposition-cpu-round-trip",
        "def f(a, sym):\n    return torch.linalg.svd(a)[2]\n",
        "torch.linalg.svd(a)",
        matrices,
        identical,
    ),
    Case(
        "lstsq-cpu-round-trip",
        "def f(a, b):\n    return torch.linalg.lstsq(a, b).solution\n",
        "torch.linalg.lstsq(a, b)",
        lstsq_inputs,
        round_off(1e-5, 1e-12, 1e-6, 1e-12),
    ),
    Case(
        "mode-cpu-round-trip",
        "def f(x):\n    return torch.mode(x, dim=-1).values\n",
        "torch.mode(x, dim=-1)",
        labels_inputs,
        identical,
    ),
    Case("mode-cpu-round-trip", "def f(x):\n    return x.mode(0)[1]\n", "x.mode(0)", labels_inputs, identical),
    Case(
        "frexp-cpu-round-trip",
        "def f(x):\n    return torch.frexp(x).mantissa\n",
        "torch.frexp(x)",
        frexp_inputs,
        identical,
    ),
    Case("frexp-cpu-round-trip", "def f(x):\n    return x.frexp()[1]\n", "x.frexp()", frexp_inputs, identical),
    Case(
        "poisson-cpu-round-trip",
        "def f(r):\n    return torch.poisson(r)\n",
        "torch.poisson(r)",
        rate_inputs,
        identical,
        seeded=True,
    ),
    Case(
        "binomial-cpu-round-trip",
        "def f(n, q):\n    return torch.binomial(n, q)\n",
        "torch.binomial(n, q)",
        binomial_inputs,
        identical,
        seeded=True,
    ),
    Case(
        "adaptive-pool3d-cpu-round-trip",
        POOL_MODULE.format(cls="AdaptiveAvgPool3d", size="(2, 3, 3)"),
        "self.pool(x)",
        pool3d_inputs(False),
        identical,
    ),
    Case(
        "adaptive-pool3d-cpu-round-trip",
        "def f(x):\n    return F.adaptive_max_pool3d(x, 3)\n",
        "F.adaptive_max_pool3d(x, 3)",
        pool3d_inputs(True),
        identical,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rewrite_computes_the_same(case):
    generator = torch.Generator().manual_seed(20240613)
    original = compiled(PRELUDE + case.source)
    fixed = None
    if case.data_for is None:
        source = rewrite(case)
        assert source is not None, f"{case.entry} was not offered for {case.call}"
        fixed = compiled(source)
    count = refused = 0
    for inputs in case.inputs(generator):
        rewritten = fixed
        if rewritten is None:
            source = rewrite(case, case.data_for(inputs))
            expect_refusal = case.refused_when is not None and case.refused_when(inputs)
            assert (source is None) == expect_refusal, f"offered={source is not None} for {inputs['x'].shape}"
            if source is None:
                refused += 1
                continue
            rewritten = compiled(source)
        if case.seeded:
            torch.manual_seed(count)
        expected = original(**inputs)
        if case.seeded:
            torch.manual_seed(count)
        actual = rewritten(**inputs)
        case.check(expected, actual, inputs)
        count += 1
    assert count >= 3 and count > refused


# Rewrites of a whole statement, not of one call: their equivalence test runs the module
# before and after the fix (same outputs on random inputs, and `fullgraph=True` compiles).
CHECKED_ELSEWHERE = {
    "print-when-not-compiling": "tests/fixes/test_compile_fixes.py",
    "select-with-where": "tests/fixes/test_compile_fixes_where.py",
    "branch-with-cond": "tests/fixes/test_compile_fixes_cond.py",
}


def test_every_rewrite_has_an_equivalence_case():
    covered = {case.entry for case in CASES} | set(CHECKED_ELSEWHERE)
    rewrites = {entry.id for entry in BY_ID.values() if entry.kind == "rewrite"}
    assert rewrites <= covered, f"no equivalence test for {sorted(rewrites - covered)}"
