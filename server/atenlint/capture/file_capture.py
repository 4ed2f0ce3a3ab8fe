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
from .loader import BuildFailure, build, import_file, last_build, module_classes, user_import_context
from .script import ScriptFailure, decomposed, script, script_ops


def capture_file(request: dict) -> dict:
    """Answer an `analyse` request: {path, module, roots, overlays, classes: {qualname: {init}}}.

    Never less than the static pass: when the file cannot be imported, every class of it
    is read from source instead (`capture: "static"`), and so is a class that cannot be built."""
    global _request_roots
    started = time.perf_counter()
    path = request["path"]
    answer: dict[str, Any] = {"path": path, "module": request["module"], "classes": [], "imported": []}
    _request_roots = list(request.get("roots", []))
    config = request.get("classes", {})
    candidates = list(config) + list(request.get("candidates", []))
    skip = set(request.get("skip", ()))
    devices = tuple(request.get("devices") or ("cpu",))
    views = tuple(request.get("views") or ("dispatch",))
    module = None
    with user_import_context(request.get("roots", []), request.get("overlays", {}), answer["imported"]):
        try:
            module = import_file(request["module"], path)
        except BaseException as error:  # noqa: BLE001 - SystemExit and friends at import are findings too
            if isinstance(error, KeyboardInterrupt):
                raise
            answer["import_error"] = _import_error(error, path, request.get("roots", []))
        if module is not None:
            for qualname, cls in module_classes(module, candidates):
                if qualname not in skip:
                    class_config = _with_factory_hooks(dict(config.get(qualname, {})), qualname)
                    captured = capture_class(qualname, cls, module, class_config, devices, views,
                                             request.get("graph_options"))
                    if class_config.get("key"):
                        captured["key"] = class_config["key"]
                    _drop_fast_paths_off_device(captured)
                    record = last_build()
                    if record is not None and record.cls is cls:
                        captured["build"] = record.path  # which build worked: meta, meta + moved, CPU
                        captured["moved_to_meta"] = record.moved[:10]
                    answer["classes"].append(captured)
    if module is None:
        answer["classes"] = _static_file(request, candidates, skip, devices, views, config)
    answer["seconds"] = time.perf_counter() - started
    return answer


def _drop_fast_paths_off_device(captured: dict) -> None:
    """MultiheadAttention's and TransformerEncoderLayer's fast paths run only on CPU and
    CUDA (torch checks the device first): a walk for MPS that could not decide the
    branch must not report them there."""
    from .static import CPU_CUDA_FAST_PATHS

    kept = []
    for entry in captured.get("ops", []):
        if entry.get("op") in CPU_CUDA_FAST_PATHS and "mps" in entry.get("devices", ()):
            entry["devices"] = [d for d in entry["devices"] if d != "mps"]
            if not entry["devices"]:
                continue
        kept.append(entry)
    if "ops" in captured:
        captured["ops"] = kept


_request_roots: list = []  # the roots of the file being captured, for the static pass to follow imports


def _with_factory_hooks(config: dict, qualname: str) -> dict:
    """A class with keyword inputs, or inputs from the factories file, is traced: give the
    trace path an inputs entry to start from (`()` when there are only keyword inputs)."""
    if config.get("inputs"):
        return config
    if config.get("factories"):
        from ..factories import class_hook_names
        from .building import load_factories_file

        try:
            hooks = load_factories_file(config["factories"])
        except Exception:  # noqa: BLE001 - the build reports a broken factories file
            return config
        name = class_hook_names("inputs", qualname)[0]
        if callable(getattr(hooks, name, None)):
            config["inputs"] = f"{config['factories']}:{name}"
            return config
        if callable(getattr(hooks, class_hook_names("kwargs", qualname)[0], None)):
            config["inputs"] = "()"
            return config
    if config.get("kwargs"):
        config["inputs"] = "()"
    return config


def _static_file(request: dict, candidates: list, skip: set, devices: tuple, views: tuple, config: dict) -> list:
    """Every class of a file that cannot be imported, read from its source."""
    from .static import static_capture

    overlays = request.get("overlays", {}) or {}
    path = request["path"]
    text = next((t for p, t in overlays.items() if os.path.abspath(p) == os.path.abspath(path)), None)
    try:
        static = static_capture({"path": path, "module": request["module"], "text": text,
                                 "classes": candidates, "skip": sorted(skip), "devices": list(devices),
                                 "views": list(views), "roots": request.get("roots", [])})
    except Exception as error:  # noqa: BLE001 - the import error stays the finding
        return [{"qualname": name, "name": name.split(".")[-1], "module": f"{request['module']}.{name}",
                 "status": "import_failed", "ops": [], "static_error": f"{type(error).__name__}: {error}"}
                for name in candidates if name not in skip]
    classes = static.get("classes", [])
    for cls in classes:
        cls.update(status="import_failed", capture="static")
        key = (config.get(cls["qualname"]) or {}).get("key")
        if key:
            cls["key"] = key
    return classes


def _import_error(error: BaseException, path: str, roots: Optional[list] = None) -> dict:
    """What stopped the import: the type and message, the line of this file that led
    there, and the user's own line where it failed (`site`, perhaps in another file);
    `package` when it is a package that is not installed."""
    from .building import missing_package

    frames = traceback.extract_tb(error.__traceback__)
    in_file = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    # A SyntaxError's line is in the file that failed to parse: this file's own line only
    # when that file is this one (an imported file's error is placed at the import here).
    same_file = isinstance(error, SyntaxError) and error.filename and \
        os.path.abspath(error.filename) == os.path.abspath(path)
    line = getattr(error, "lineno", None) if same_file else None
    if line is None and in_file:
        line = in_file[-1].lineno
    user_roots = tuple(os.path.abspath(r) + os.sep for r in (roots or []))
    site = None
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        site = {"file": os.path.abspath(error.filename), "line": error.lineno, "text": (error.text or "").strip()}
    for frame in reversed(frames):
        if site is not None:
            break
        filename = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or is_library_file(filename):
            continue
        if filename == os.path.abspath(path) or (user_roots and filename.startswith(user_roots)):
            site = {"file": filename, "line": frame.lineno, "text": (frame.line or "").strip()}
    return {"type": type(error).__name__, "message": str(error) or type(error).__name__,
            "line": line, "site": site, "package": missing_package(error, tuple(roots or ())),
            "trace": "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:]}


def capture_class(qualname: str, cls: type, module: Any, config: dict, devices: tuple[str, ...],
                  views: tuple[str, ...] = ("dispatch",), graph_options: Optional[dict] = None) -> dict:
    """One class: built, then captured for every view its targets judge (`graph_options`:
    the decomposition tables of the export toolchains, from their installed packages)."""
    result: dict[str, Any] = {"qualname": qualname, "name": cls.__name__,
                              "module": f"{module.__name__}.{qualname}", "status": "ok", "ops": []}
    if graph_options and graph_options.get("executorch_decompositions"):
        from .export_decompose import set_executorch_changes

        set_executorch_changes(graph_options["executorch_decompositions"])
    started = time.perf_counter()
    try:
        instance = build(cls, module, config.get("init"), config)
    except BuildFailure as failure:
        # Never less than the static pass: what cannot be built is read from its source.
        result.update(status="build_failed", build_error=failure.as_json())
        return _static_fallback(result, cls, module, devices, views)
    tree_views = tuple(v for v in views if v != SCRIPT_VIEW)
    if config.get("inputs"):
        # With example inputs, each toolchain's own front end captures the path really taken.
        traced = _trace_class(result, instance, module, config["inputs"], devices, tree_views, graph_options)
        if traced is not None:
            missing = tuple(v for v in tree_views if v not in traced.get("covered", ()))
            if missing or SCRIPT_VIEW in views:
                # A view the trace could not give (a fake-tensor gap) comes from the scripted
                # graph, never from nothing; the torchscript target always asks torch.jit.script.
                _script_into(traced, instance, cls, module, devices, missing, SCRIPT_VIEW in views)
            traced["seconds"] = time.perf_counter() - started
            return traced
    _script_into(result, instance, cls, module, devices, tree_views, True)
    result["seconds"] = time.perf_counter() - started
    return result


SCRIPT_VIEW = "script"  # not a tree: the torchscript target's verdict is whether torch.jit.script compiles


def _script_into(result: dict, instance: Any, cls: type, module: Any, devices: tuple, views: tuple,
                 record_failure: bool) -> None:
    """Add the scripted graph's calls for `views` to `result` (the source's, when
    TorchScript cannot compile the class); `record_failure`: keep the script error."""
    try:
        scripted = script(instance)
    except ScriptFailure as failure:
        if record_failure:
            if result.get("capture") == "trace":
                result["script_error"] = failure.as_json()  # the torchscript verdict; the trace stands
            else:
                result.update(status="script_failed", script_error=failure.as_json())
        if views:
            if result.get("capture") == "trace":
                scratch = _static_fallback(dict(result, ops=[]), cls, module, devices, views)
                result["ops"] += scratch.get("ops", [])
                result.setdefault("fallback", {}).update({v: "static" for v in views})
            else:
                _static_fallback(result, cls, module, devices, views)
        return
    if not views:
        return
    captured = script_ops(scripted, devices)
    result.setdefault("unresolved_calls", []).extend(captured.unresolved_calls)
    result["submodules"] = sorted(set(result.get("submodules", [])) | set(captured.submodules))
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
                "trees": {view: with_library_facts(decomposed(call.op, call.known, view)) for view in views},
            }
        entry["conditional"] = entry["conditional"] and call.conditional
        phase = "train" if call.training else "eval"
        for key_name, value in (("phases", phase), ("devices", call.device)):
            if value not in entry[key_name]:
                entry[key_name].append(value)
    result["ops"] = result.get("ops", []) + list(merged.values())
    if result.get("capture") == "trace":
        result.setdefault("fallback", {}).update({v: "script" for v in views})


def _trace_class(result: dict, instance: Any, module: Any, expression: str, devices: tuple,
                 views: tuple, graph_options: Optional[dict] = None) -> Optional[dict]:
    """The class captured with its example inputs, each view by its own front end: the
    dispatcher (fake tensors under a dispatch mode) for device backends, `torch.jit.trace`
    for the TorchScript-based converters, `torch.export` for the decomposed-graph ones.
    `covered` lists the views it gave; None (with `trace_error` set) when nothing could
    be traced, so scripting is tried next."""
    from .graphs import EXPORT_VIEWS, JIT_VIEWS, GraphFailure, GraphFailures, export_graph_ops, jit_graph_ops
    from .trace import TraceFailure, build_inputs, trace_ops

    try:
        inputs = build_inputs(expression, module)
    except Exception as error:  # noqa: BLE001 - the user's expression is wrong: say so
        result["trace_error"] = {"message": f"the inputs expression `{expression}` raised "
                                            f"{type(error).__name__}: {error}", "site": None}
        return None
    args = tuple(inputs) if isinstance(inputs, tuple) else (inputs,)
    kwargs = dict(getattr(inputs, "kwargs", None) or {})
    ops: list[dict] = []
    covered: list[str] = []
    failures: list[dict] = []
    if "dispatch" in views:
        try:
            traced, notes = trace_ops(instance, inputs)
        except TraceFailure as failure:
            failures.append(dict(failure.as_json(), view="dispatch"))
        else:
            ops += _dispatch_entries(traced, devices)
            covered.append("dispatch")
            if notes:
                result["trace_notes"] = notes
    for wanted, capture in (([v for v in views if v in JIT_VIEWS], jit_graph_ops),
                            ([v for v in views if v in EXPORT_VIEWS], export_graph_ops)):
        if not wanted:
            continue
        try:
            found = (capture(instance, args, kwargs, tuple(wanted), _real_inputs(expression, module, args, kwargs))
                     if capture is jit_graph_ops else capture(instance, args, kwargs, tuple(wanted), graph_options or {}))
        except GraphFailures as partial:  # some of these views were captured
            failures += [f.as_json() for f in partial.failures]
            failed = {f.view for f in partial.failures}
            ops += _graph_entries(partial.found)
            covered += [v for v in wanted if v not in failed]
            continue
        except GraphFailure as failure:
            failures.append(failure.as_json())
            continue
        except Exception as error:  # noqa: BLE001 - a gap of ours: that view falls back
            failures.append({"view": wanted[0], "message": f"{type(error).__name__}: {str(error)[:300]}",
                             "site": None})
            continue
        ops += _graph_entries(found)
        covered += wanted
    instance.eval()
    if not covered:
        first = failures[0] if failures else {"message": "nothing could be traced", "site": None}
        result["trace_error"] = {"message": first["message"], "site": first.get("site")}
        return None
    if failures:
        result["graph_errors"] = failures
    result.update(ops=ops, capture="trace", covered=covered)
    return result


def _real_inputs(expression: str, module: Any, meta_args: tuple, meta_kwargs: dict) -> Optional[tuple]:
    """The user's example inputs as real CPU tensors (for torch.jit.trace, which needs real
    values: `.item()` and masks then take their real path), or None when the expression
    cannot be evaluated off meta or would be too large (sized from the meta inputs)."""
    from .graphs import REAL_TENSOR_LIMIT_BYTES, _tensors_in
    from .loader import evaluate_inputs

    size = sum(t.numel() * t.element_size() for t in _tensors_in((meta_args, meta_kwargs)))
    if size > REAL_TENSOR_LIMIT_BYTES // 4:
        return None
    try:
        inputs = evaluate_inputs(expression, module)
    except Exception:  # noqa: BLE001 - zeros and noise of the same shapes stand in
        return None
    args = tuple(inputs) if isinstance(inputs, tuple) else (inputs,)
    if any(t.device.type != "cpu" for t in _tensors_in(args)):
        return None
    return args, dict(getattr(inputs, "kwargs", None) or {})


def _dispatch_entries(traced: list, devices: tuple) -> list[dict]:
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
                "trees": {"dispatch": with_library_facts(op.dispatch)},
                "facts": {},
            }
        entry["conditional"] = False  # a trace saw it run
        _merge_facts(entry["facts"], facts)
        phase = "train" if op.training else "eval"
        if phase not in entry["phases"]:
            entry["phases"].append(phase)
    return list(merged.values())


def _graph_entries(found: list) -> list[dict]:
    """A toolchain graph's nodes as captured calls: each one is already what that toolchain
    converts, so its tree is the node itself (the views share an entry where they agree)."""
    merged: dict[tuple, dict] = {}
    for node in found:
        key = (node.op, node.sites)
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = {
                "op": node.op, "args": {}, "phases": ["eval"], "devices": [], "conditional": False,
                "sites": [dict(site.as_json(), library=is_library_file(site.file)) for site in node.sites],
                "trees": {}, "facts": {},
            }
        leaf: dict = {"op": node.op, "calls": None, "graph": True}
        if node.library:
            leaf["library"] = node.library
        entry["trees"][node.view] = leaf
    return list(merged.values())


def with_library_facts(tree: Optional[dict]) -> Optional[dict]:
    """The tree with what an installed library registered for each of its (non-aten) ops
    (kernels per dispatch key, ONNX symbolics), so every target can judge them; a copy,
    since trees are cached."""
    if tree is None or not _has_library_op(tree):
        return tree
    from .graphs import library_facts

    def copy(node: dict) -> dict:
        out = dict(node)
        if not node["op"].startswith("aten::") and "::" in node["op"]:
            out["library"] = library_facts(node["op"])
        if node.get("calls"):
            out["calls"] = [copy(child) for child in node["calls"]]
        return out

    return copy(tree)


def _has_library_op(tree: dict) -> bool:
    if "::" in tree["op"] and not tree["op"].startswith(("aten::", "prim::")):
        return True
    return any(_has_library_op(child) for child in tree.get("calls") or ())


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
    """The class cannot be built or scripted: read its source instead (never runs it again)."""
    from .static import static_class_from_text

    path = getattr(module, "__file__", None)
    try:
        text = "".join(linecache.getlines(path)) if path else ""
        if not text:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        static = static_class_from_text(path, text, module.__name__, result["qualname"], devices, views,
                                        roots=_static_roots(path, module.__name__))
    except Exception as error:  # noqa: BLE001 - the build or script failure stays the finding
        result["static_error"] = f"{type(error).__name__}: {error}"
        return result
    result["ops"] = static["ops"]
    result["submodules"] = static.get("submodules", [])
    result["capture"] = "static"
    return result


def _static_roots(path: str, module_name: str) -> list:
    """Where the static pass looks for the project's modules: the folder the module's
    dotted name starts from, then the request's roots."""
    folder = os.path.dirname(os.path.abspath(path))
    depth = module_name.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    for _ in range(depth):
        folder = os.path.dirname(folder)
    return list(dict.fromkeys([folder] + [os.path.abspath(r) for r in _request_roots]))


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
