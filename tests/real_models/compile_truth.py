"""What the real torch.compile does with one real-model file: its graph breaks, its fullgraph
verdict and the eager kernels Inductor falls back to on the CPU.

    python tests/real_models/compile_truth.py OUT.json MODEL.py [--no-inductor]

`MODEL.py` defines `Model` (default constructor, random weights) and `example_inputs()`.
Everything runs on real CPU tensors, in eval mode under `no_grad`, with Dynamo's state reset
before each step:

- `torch._dynamo.explain(model)(*inputs)`: each break's reason (its first line) and the
  frames of its user stack outside torch, site-packages and the standard library (the
  innermost is where a user reads it), plus the graph and break counts;
- `torch.compile(model, fullgraph=True, backend="eager")(*inputs)`: does it capture one
  graph, and if not, the reason and user frames of the error it raises;
- `torch.compile(model, backend="inductor")(*inputs)` (unless `--no-inductor`): every
  `ir.FallbackKernel` Inductor creates while lowering (an op it runs as its eager kernel),
  with Inductor's own code generation for the CPU. The FX graph cache is off, so each run
  lowers for real.

The runner never judges a break itself; the result file is rewritten after every step, so a
crash or a timeout keeps what finished.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import sys
import sysconfig
import time
import traceback
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch

_LIBRARY_ROOTS = tuple(
    {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")} | {os.path.dirname(torch.__file__)}
)
_THIS_FILE = os.path.abspath(__file__)


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:800]


def _headline(text: str) -> str:
    return (str(text).strip().splitlines() or [""])[0].strip()


def user_frames(frames) -> list[str]:
    """`path:line` of the frames (outermost first) outside torch, site-packages and the
    standard library."""
    out = []
    for frame in frames or ():
        path = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or path.startswith(_LIBRARY_ROOTS) or path == _THIS_FILE:
            continue
        out.append(f"{path}:{frame.lineno}")
    return out


def load(path: str):
    spec = importlib.util.spec_from_file_location(f"compile_model_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def explain(model, args) -> dict:
    torch._dynamo.reset()
    started = time.perf_counter()
    try:
        with _quiet():
            out = torch._dynamo.explain(model)(*args)
    finally:
        torch._dynamo.reset()
    breaks = []
    for reason in out.break_reasons:
        frames = user_frames(reason.user_stack)
        breaks.append({"reason": _headline(reason.reason), "frames": frames, "site": frames[-1] if frames else None})
    return {
        "graphs": out.graph_count,
        "graph_breaks": out.graph_break_count,
        "breaks": breaks,
        "seconds": round(time.perf_counter() - started, 2),
    }


def fullgraph(model, args) -> dict:
    torch._dynamo.reset()
    started = time.perf_counter()
    try:
        with _quiet():
            torch.compile(model, fullgraph=True, backend="eager")(*args)
        out: dict = {"ok": True}
    except Exception as error:  # noqa: BLE001 - Dynamo's Unsupported (or the model raised): the verdict
        stack = getattr(error, "real_stack", None)
        frames = user_frames(stack) if stack else user_frames(traceback.extract_tb(error.__traceback__))
        out = {"ok": False, "error": _short(error), "reason": _headline(str(error)), "frames": frames}
    finally:
        torch._dynamo.reset()
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def inductor_fallbacks(model, args) -> dict:
    """Every eager kernel Inductor's CPU lowering creates (`ir.FallbackKernel.create`)."""
    from torch._inductor import config, ir

    created: list[str] = []
    original = ir.FallbackKernel.create.__func__

    def spy(klass, kernel, *rest, **kwargs):
        created.append(str(kernel))
        return original(klass, kernel, *rest, **kwargs)

    torch._dynamo.reset()
    started = time.perf_counter()
    ir.FallbackKernel.create = classmethod(spy)
    try:
        with config.patch(compile_threads=1, fx_graph_cache=False), _quiet():
            torch.compile(model, backend="inductor")(*args)
        out: dict = {"ok": True}
    except Exception as error:  # noqa: BLE001 - recorded: the kernels created before it still count
        out = {"ok": False, "error": _short(error)}
    finally:
        ir.FallbackKernel.create = classmethod(original)
        torch._dynamo.reset()
    out["kernels"] = sorted(set(created))
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def run(path: str, out_path: str, inductor: bool) -> dict:
    module = load(path)
    result: dict = {"torch": torch.__version__}

    def save():
        with open(out_path, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)

    torch.manual_seed(0)
    model = module.Model().eval()
    torch.manual_seed(0)
    args = tuple(module.example_inputs())
    steps = [("explain", explain), ("fullgraph", fullgraph)]
    if inductor:
        steps.append(("inductor", inductor_fallbacks))
    with torch.no_grad():
        for key, step in steps:
            try:
                result[key] = step(model, args)
            except Exception:  # noqa: BLE001 - recorded; the comparison reports it
                result[key] = {"crashed": traceback.format_exc()[-1500:]}
            save()
    result["complete"] = True
    save()
    return result


def main() -> int:
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    out_path, path = arguments[0], arguments[1]
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            run(path, out_path, inductor="--no-inductor" not in sys.argv)
        except Exception:  # noqa: BLE001 - recorded, the comparison reports it
            with open(out_path, "w", encoding="utf-8") as handle:
                json.dump({"crashed": traceback.format_exc()[-2000:]}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
