"""The static pass against the script capture on the foundation's golden workspaces:
where the mapping is unambiguous they must report the same calls and overloads. The
executed run does not infer inputs here (`infer-inputs = false`): a trace with guessed
shapes settles branches (the rank `mode="area"` picks a kernel by) that neither the
scripted graph nor the source can."""

from __future__ import annotations

import os

import pytest

from atenlint.config import SettingsResolver
from support import GOLDEN

FOUNDATION_CASES = [
    "adaptive_pool_arguments",
    "bad_inputs",
    "directives",
    "factory_config",
    "interpolate_branches",
    "library_attribution",
    "mps_op_classes",
    "relative_imports",
    "sibling_base",
    "src_layout",
    "structure",
    "supported_ops",
    "unicode_columns",
]
# What only one of them reports, and why.
EXPECTED_DIFFERENCES: dict = {
    # None. A class that cannot be built (factory_config's Decoder) is read from source in
    # the default mode too, and MultiheadAttention's CPU/CUDA fast path is never reported
    # for MPS by either capture.
}


def calls(engine, root, execute):
    engine.resolver = SettingsResolver(None, {"infer_inputs": False})
    report = engine.check_paths([root], jobs=1, execute=execute)
    return {
        (os.path.relpath(f.abs_path, root).replace(os.sep, "/"), f.range.start.line, tuple(f.ops))
        for f in report.findings
        if f.target
    }


@pytest.mark.parametrize("case", FOUNDATION_CASES)
def test_static_agrees_with_script(engine, case):
    root = os.path.join(GOLDEN, case)
    scripted, static = calls(engine, root, True), calls(engine, root, False)
    only_static, only_script = EXPECTED_DIFFERENCES.get(case, (set(), set()))
    assert static - scripted == only_static
    assert scripted - static == only_script
