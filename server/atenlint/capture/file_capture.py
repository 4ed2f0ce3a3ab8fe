"""One file, captured: import it, build each nn.Module class on meta, script it, list its ops.

The result is plain JSON-able data (the worker's answer); everything about targets,
ranges and messages happens in the parent. Runs inside the worker.
"""

from __future__ import annotations

import linecache
import os
import time
import traceback
from typing import Any, Optional


from .decompose import UNKNOWN
from .paths import is_library_file
from .loader import BuildFailure, build, import_file, module_classes, user_import_context
from .script import ScriptFailure, decomposed, script, script_ops


def capture_file(request: dict) -> dict:
    """Answer an `analyse` request: {path, module, roots, overlays, classes: {qualname: {init}}}."""
    started = time.perf_counter()
    path = request["path"]
    answer: dict[str, Any] = {"path": path, "module": request["module"], "classes": [], "imported": []}
    with user_import_context(request.get("roots", []), request.get("overlays", {}), answer["imported"]):
        try:
            module = import_file(request["module"], path)
        except BaseException as error:  # noqa: BLE001 - SystemExit and friends at import are findings too
            if isinstance(error, KeyboardInterrupt):
                raise
            answer["import_error"] = _import_error(error, path)
            answer["seconds"] = time.perf_counter() - started
            return answer
        config = request.get("classes", {})
        candidates = list(config) + list(request.get("candidates", []))
        skip = set(request.get("skip", ()))
        devices = tuple(request.get("devices") or ("cpu",))
        views = tuple(request.get("views") or ("dispatch",))
        for qualname, cls in module_classes(module, candidates):
            if qualname not in skip:
                answer["classes"].append(capture_class(qualname, cls, module, config.get(qualname, {}), devices,
                                                       views))
    answer["seconds"] = time.perf_counter() - started
    return answer


def _import_error(error: BaseException, path: str) -> dict:
    frames = traceback.extract_tb(error.__traceback__)
    in_file = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    if line is None and in_file:
        line = in_file[-1].lineno
    return {"type": type(error).__name__, "message": str(error) or type(error).__name__,
            "line": line, "trace": "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:]}


def capture_class(qualname: str, cls: type, module: Any, config: dict, devices: tuple[str, ...],
                  views: tuple[str, ...] = ("dispatch",)) -> dict:
    result: dict[str, Any] = {"qualname": qualname, "name": cls.__name__,
                              "module": f"{module.__name__}.{qualname}", "status": "ok", "ops": []}
    started = time.perf_counter()
    try:
        instance = build(cls, module, config.get("init"))
    except BuildFailure as failure:
        result.update(status="build_failed", build_error=failure.as_json())
        return result
    if config.get("inputs"):
        # With example inputs, tracing sees the path really taken, with dtypes and shapes.
        traced = _trace_class(result, instance, module, config["inputs"], devices, views)
        if traced is not None:
            result["seconds"] = time.perf_counter() - started
            return traced
    try:
        scripted = script(instance)
    except ScriptFailure as failure:
        result.update(status="script_failed", script_error=failure.as_json())
        return _static_fallback(result, cls, module, devices, views)
    captured = script_ops(scripted, devices)
    result["unresolved_calls"] = captured.unresolved_calls
    result["submodules"] = captured.submodules
    merged: dict[tuple, dict] = {}
    for call in captured.ops:
        args = _json_args(call.known)
        key = (call.op, call.sites, repr(args))
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = {
                "op": call.op,
                "args": args,
                "sites": [dict(site.as_json(), library=is_library_file(site.file)) for site in call.sites],
                "phases": [],
                "devices": [],
                "conditional": True,
                "trees": {view: decomposed(call.op, call.known, view) for view in views},
            }
        entry["conditional"] = entry["conditional"] and call.conditional
        phase = "train" if call.training else "eval"
        for key_name, value in (("phases", phase), ("devices", call.device)):
            if value not in entry[key_name]:
                entry[key_name].append(value)
    result["ops"] = list(merged.values())
    result["seconds"] = time.perf_counter() - started
    return result


def _trace_class(result: dict, instance: Any, module: Any, expression: str, devices: tuple,
                 views: tuple) -> Optional[dict]:
    """The class captured by running forward on fake tensors, or None (with `trace_error`
    set) when the inputs or the forward pass fail; scripting is tried next."""
    from .trace import TraceFailure, build_inputs, trace_ops

    try:
        inputs = build_inputs(expression, module)
    except Exception as error:  # noqa: BLE001 - the user's expression is wrong: say so
        result["trace_error"] = {"message": f"the inputs expression `{expression}` raised "
                                            f"{type(error).__name__}: {error}", "site": None}
        return None
    try:
        traced = trace_ops(instance, inputs, with_export="export" in views)
    except TraceFailure as failure:
        result["trace_error"] = failure.as_json()
        return None
    merged: dict[tuple, dict] = {}
    for op in traced:
        facts = {"dtypes_in": op.dtypes_in, "dtypes_out": op.dtypes_out, "max_dim": op.max_dim,
                 "float64_origin": op.float64_origin, "float64_first_use": op.float64_first_use,
                 "complex_unsupported": op.complex_unsupported, "arg_shapes": op.arg_shapes,
                 "guessed": op.guessed}
        key = (op.op, op.sites)
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = {
                "op": op.op, "args": {}, "phases": [], "devices": list(devices), "conditional": True,
                "sites": [dict(site.as_json(), library=is_library_file(site.file)) for site in op.sites],
                "trees": {view: (op.export if view == "export" else op.dispatch) or decomposed(op.op, {}, view)
                          for view in views},
                "facts": {},
            }
        entry["conditional"] = False  # a trace saw it run
        _merge_facts(entry["facts"], facts)
        phase = "train" if op.training else "eval"
        if phase not in entry["phases"]:
            entry["phases"].append(phase)
    result.update(ops=list(merged.values()), capture="trace")
    return result


def _merge_facts(into: dict, facts: dict) -> None:
    for key, value in facts.items():
        if isinstance(value, dict) or (key in into and into[key] is None and not isinstance(value, bool)):
            # Shapes hold only when every run of the call agrees on them.
            into[key] = value if into.get(key, value) == value else None
        elif isinstance(value, list):
            into[key] = sorted(set(into.get(key, [])) | set(value))
        elif isinstance(value, bool):
            into[key] = into.get(key, False) or value
        else:
            into[key] = max(into.get(key, 0), value)


def _static_fallback(result: dict, cls: type, module: Any, devices: tuple, views: tuple) -> dict:
    """TorchScript cannot compile the class: read its source instead (never runs it again)."""
    from .static import static_class_from_text

    path = getattr(module, "__file__", None)
    try:
        text = "".join(linecache.getlines(path)) if path else ""
        if not text:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        static = static_class_from_text(path, text, module.__name__, result["qualname"], devices, views)
    except Exception as error:  # noqa: BLE001 - the script failure stays the finding
        result["static_error"] = f"{type(error).__name__}: {error}"
        return result
    result["ops"] = static["ops"]
    result["submodules"] = static.get("submodules", [])
    result["capture"] = "static"
    return result


def _json_args(known: dict[str, Any]) -> dict[str, Any]:
    """The constant arguments of a call, where JSON can hold them (for fix conditions)."""
    out = {}
    for name, value in known.items():
        if value is UNKNOWN:
            continue
        if _jsonable(value):
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return not (isinstance(value, float) and value != value)
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    return False
