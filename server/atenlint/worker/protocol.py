"""The worker protocol: every message between the parent (`pool.py`, `engine.py`) and
the worker process (`main.py`), and the structures an analysis answers with, defined once.

JSON lines, one message a line. The parent sends requests; the worker answers each with
zero or more partial messages (`analyse` only: the dispatcher-view answer, ready before the
slower export views) followed by exactly one reply or error reply of the same id. The first
request of every worker is `hello`; its answer carries `protocol`, the version the worker
speaks, and the parent refuses a worker whose version is not `PROTOCOL_VERSION` (one clear
diagnostic, not a crash on a field that moved).

Requests and answers are TypedDicts: they cross the process boundary as JSON anyway, and
both ends and mypy agree on their shape. The parent builds each request with one constructor
(`analyse_params`, `static_params`), the worker reads it through `check_*_params`, and
capture/ builds its answers as these records (`captured_op` for every captured call), so a
key written or read wrong on either side is a mypy error. Validation (`check_*`) is shallow
where depth would cost time on large call trees: it checks the fields the reader relies on,
and raises `ProtocolError` naming the field that is wrong. The words the records use (view
names, capture kinds, statuses) are `vocabulary.py`'s.

Standard library only: the worker imports this (and vocabulary.py) before torch, and
never anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from .vocabulary import Capture, Status

# Bump on any change a reader of the other side would misread (a renamed or retyped field,
# a new message kind); adding an optional field a reader ignores needs no bump.
PROTOCOL_VERSION = 3  # 3: the `warm` request

METHODS = ("hello", "warm", "analyse", "static", "loaded_packages", "target_data", "shutdown")
Method = Literal["hello", "warm", "analyse", "static", "loaded_packages", "target_data", "shutdown"]


# A value that survives JSON (the user's factory options).
JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


class ProtocolError(Exception):
    """A message that does not have the shape this protocol version defines."""


# -- call trees and sites ------------------------------------------------------------------


class LibraryFacts(TypedDict, total=False):
    """What an installed library registered for one of its (non-aten) ops."""

    kernels: list[str]  # dispatch keys with a kernel ("MPS", "CUDA", ...)
    platform: str
    cuda_build: bool
    onnx_opsets: list[int] | None  # None: the registry could not be read


class _DelegateFactsRequired(TypedDict):
    delegated: bool  # the partitioner took it (every node of it at this site)


class DelegateFacts(_DelegateFactsRequired, total=False):
    """What an ExecuTorch delegate's partitioner made of a call's edge-program node(s)
    (capture/delegate_view.py)."""

    reasons: list[str]  # the partitioner's own words for leaving it to the CPU
    quantized_only: bool  # an XNNPACK config takes this op only in a quantized pattern
    nodes: int  # how many nodes of the op the site made (1 when absent)
    taken: int  # ... and how many of them the partitioner took
    # The delegate's backend cannot convert a node the partitioner took (its own words, Core
    # ML's coremltools conversion): to_edge_transform_and_lower fails there.
    not_converted: str


class _CallTreeRequired(TypedDict):
    op: str  # "aten::name.overload" (or "namespace::name")


class CallTree(_CallTreeRequired, total=False):
    """One node of a call tree: the op and what it decomposes into (None: not expanded,
    a backend kernel or a graph node the toolchain converts as is)."""

    calls: list[CallTree] | None
    undecomposed: bool  # a composite the decomposer could not expand
    decomposable: bool  # ... though a decomposition exists for it
    via: str  # "default" | "extra": export decomposition; "trace": what torch.jit.trace records instead of this op
    graph: bool  # a node of a toolchain's own graph
    library: LibraryFacts
    delegate: DelegateFacts  # ExecuTorch delegate views: what the partitioner made of the node(s)


class _SiteRequired(TypedDict):
    file: str
    line: int  # 1-based


class Site(_SiteRequired, total=False):
    """One source position on a captured call's stack."""

    col: int  # 0-based byte column
    span_lines: int
    end_col: int | None
    exact: bool
    hint: list[str]
    library: bool  # inside an installed library, not the user's code
    text: str


class ErrorInfo(TypedDict, total=False):
    """Why a step failed (trace, script, graph view), and where."""

    message: str
    site: Site | None
    view: str
    details: str
    type: str
    toolchain_fails: bool  # the real toolchain fails the same way (not a gap of atenlint's fake tensors)
    inputs_inferred: str  # the front end failed on inputs atenlint guessed (this expression)


class BuildError(TypedDict, total=False):
    """Why a class could not be built (capture/loader.py's BuildFailure)."""

    message: str
    missing: list[str]  # constructor parameters without defaults
    signature: str  # the constructor's signature as the user wrote it
    kind: str  # "arguments" | "factory" | "missing_package" | ...
    package: str | None  # the package to install (kind "missing_package")
    site: Site | None


class _CapturedOpRequired(TypedDict):
    op: str
    trees: dict[str, CallTree | None]  # view ("dispatch", "jit", "export", ...) -> tree
    sites: list[Site]  # outermost first


class CapturedOp(_CapturedOpRequired, total=False):
    """One captured call of an analysed class."""

    phases: list[str]  # "train" | "eval"
    args: dict[str, JsonValue]  # the call's constant arguments, as JSON
    conditional: bool
    devices: list[str]
    facts: CallFacts


class CallFacts(TypedDict, total=False):
    """What a trace saw of one call, over every run of it (dtype and rank rules, fix
    conditions); a value the runs disagree on is None."""

    dtypes_in: list[str]
    dtypes_out: list[str]
    max_dim: int
    guessed: bool  # runs after a tensor value the trace had to guess (`.item()`)
    complex_unsupported: bool  # complex tensors in an op whose MPS kernel lacks them
    float64_origin: bool  # makes a float64 tensor from no float64 input
    float64_first_use: bool  # first use of a float64 tensor made outside forward
    arg_shapes: dict[str, JsonValue] | None  # schema argument name -> concrete shape


def captured_op(
    op: str,
    sites: list[Site],
    trees: dict[str, CallTree | None],
    *,
    conditional: bool,
    phases: list[str] | None = None,
    devices: list[str] | None = None,
    args: dict[str, JsonValue] | None = None,
    facts: CallFacts | None = None,
) -> CapturedOp:
    """The one way the worker makes a captured call's record (script, trace, graph and
    static captures alike)."""
    out: CapturedOp = {
        "op": op,
        "sites": sites,
        "trees": trees,
        "args": args if args is not None else {},
        "phases": phases if phases is not None else [],
        "devices": devices if devices is not None else [],
        "conditional": conditional,
    }
    if facts is not None:
        out["facts"] = facts
    return out


def seen_in(entry: CapturedOp, phase: str | None = None, device: str | None = None) -> None:
    """Record on `entry` that the call was reached in `phase` ("train" | "eval") and on
    `device`, once each."""
    if phase is not None and phase not in entry.setdefault("phases", []):
        entry["phases"].append(phase)
    if device is not None and device not in entry.setdefault("devices", []):
        entry["devices"].append(device)


class _ClassAnswerRequired(TypedDict):
    qualname: str
    name: str
    module: str  # dotted: module.qualname
    status: Status
    ops: list[CapturedOp]


class GraphBreak(TypedDict, total=False):
    """One place torch._dynamo splits the graph (the compile target), as Dynamo reports it."""

    reason: str  # Dynamo's own reason, first line (the headline)
    details: str  # the rest of Dynamo's text (explanation, hint), trimmed
    site: Site | None  # the innermost frame of the user's code on Dynamo's user stack
    stack: list[Site]  # the user's frames, outermost first
    # Dynamo skipped the whole frame after it (a break inside a loop): the function runs
    # eagerly with no graph, and `explain` counts nothing (capture/dynamo_view.py)
    skipped_frame: bool


class InductorFallback(TypedDict, total=False):
    """An aten op Inductor runs as its eager kernel rather than generated code (the compile target)."""

    op: str  # the op Inductor lowers (after its decompositions): "aten._adaptive_avg_pool3d.default"
    called: str  # the op the graph dispatched, which decomposed to it (the same when none)
    devices: list[str]  # the devices whose Inductor backend has no lowering for it ("cpu", "cuda")
    why: str  # "no lowering", "registered fallback", or the code generator feature it lacks
    site: Site | None  # the user's line of the graph node


class RecompileHazard(TypedDict, total=False):
    """A guard Dynamo installed on a value that, when it changes, makes torch.compile recompile."""

    kind: str  # "scalar": a Python number argument Dynamo specialised the graph on
    name: str  # the argument of forward
    value: str  # its value in this run (repr)
    guard: str  # Dynamo's own guard: "L['scale'] CONSTANT_MATCH"
    site: Site | None  # the user's line


class CompileAnswer(TypedDict, total=False):
    """The compile view of one class: torch._dynamo on real CPU tensors, eager backend."""

    breaks: list[GraphBreak]
    graphs: int  # how many graphs Dynamo compiled (breaks + 1 when every break splits one)
    error: ErrorInfo  # Dynamo could not run the class at all (the view says nothing then)
    fullgraph: bool  # torch.compile(fullgraph=True) captures it (only run when there are breaks)
    fullgraph_error: ErrorInfo  # where and why fullgraph=True raises
    source: bool  # read from the source (no inputs): only what is certain
    fallbacks: list[InductorFallback]  # the ops Inductor would run eagerly (capture/inductor_fallbacks.py)
    recompiles: list[RecompileHazard]  # guards Dynamo installed that recompile on other values


class ClassAnswer(_ClassAnswerRequired, total=False):
    """What the worker found for one module class."""

    key: str  # the name the user imports the class by (pyproject keys)
    capture: Capture
    covered: list[str]  # the views the trace gave
    fallback: dict[str, str]  # view -> "script" | "static"
    build: str
    moved_to_meta: list[str]
    build_error: BuildError
    script_error: ErrorInfo
    trace_error: ErrorInfo
    graph_errors: list[ErrorInfo]
    trace_notes: list[Any]
    static_error: str
    submodules: list[str]
    unresolved_calls: list[Any]
    seconds: float
    # No inputs were configured: the class was traced with inputs atenlint inferred from its
    # code (capture/infer_inputs.py); the expression used.
    inputs_inferred: str
    # Nothing configured says how to build the class and its constructor needs arguments: it
    # was built with arguments atenlint inferred (capture/constructor_args.py); the call used.
    arguments_inferred: str
    compile: CompileAnswer  # the compile target's view (capture/dynamo_view.py)


class ImportFailure(TypedDict, total=False):
    """What stopped the import of the analysed file."""

    type: str
    message: str
    line: int | None
    site: Site | None
    package: str | None
    trace: str
    refused: bool  # a sandbox refusal (its own diagnostic), not a failed import
    # The import succeeded once these packages of the user's were stood in by bare package
    # modules, their __init__.py not run: it needs `package`, which is not installed.
    stood_in: list[str]


class Refusal(TypedDict, total=False):
    """One action the sandbox refused (worker/sandbox.py's `Refusal.as_json()`): ATL012."""

    kind: str  # "process" | "network" | "write" | "signal" | "file"
    action: str  # what the code tried, for the message: "run `pip install x`"
    phase: str  # "import" | "build" | "analyse"
    file: str | None  # the innermost user file on the stack (None: library code only)
    line: int | None  # 1-based line in `file`
    analysed_line: int | None  # 1-based line in the analysed file that led to it
    count: int


class _FileAnswerRequired(TypedDict):
    classes: list[ClassAnswer]


class FileAnswer(_FileAnswerRequired, total=False):
    """The answer to `analyse` and `static`: one file's classes."""

    path: str
    module: str
    imported: list[str]  # the user's files the import pulled in
    import_error: ImportFailure
    seconds: float
    refusals: list[Refusal]
    # The dispatcher view of every class only (a partial message): judged by the device
    # targets while the export views are still being captured.
    partial: bool
    # torchcompat.degradations(): {capability, message, reason, torch} per capability this
    # torch lacks (a private API it moved), met so far in this worker.
    torch_degraded: list[dict[str, str]]


# -- hello -----------------------------------------------------------------------------------


class Containment(TypedDict, total=False):
    """What contains the analysed code: `confine.Support.as_json()` and `fork`."""

    platform: str
    arch: str
    landlock_abi: int  # 0: no Landlock
    seccomp: bool
    seatbelt: bool  # macOS
    kernel: bool  # the kernel confines it (Landlock and seccomp, or Seatbelt)
    fork: bool  # a fresh process per file
    missing: list[str]  # why a layer is absent, in words


class _HelloRequired(TypedDict):
    protocol: int
    torch: str
    python: str


class Hello(_HelloRequired, total=False):
    torch_full: str
    torch_dir: str
    native_yaml: str | None
    executable: str
    pid: int
    registered_kernels: dict[str, list[str]]
    import_seconds: float
    sandbox: bool
    run_dir: str
    isolated: bool
    torch_degraded: list[dict[str, str]]  # torchcompat.degradations(): capabilities this torch lacks
    containment: Containment  # absent from an older worker


# -- requests --------------------------------------------------------------------------------
# Built on the parent's side by the constructors below (one place each), read by the worker
# through `check_analyse_params` / `check_static_params`: a key written or read wrong on
# either side is a mypy error, a malformed message a ProtocolError naming the field.


class ClassRequest(TypedDict, total=False):
    """How to build and feed one class: pyproject.toml's `[tool.atenlint.modules]` entry,
    then the class's `# atenlint:` comment (which wins)."""

    key: str  # the name the user imports the class by (pyproject keys, factory hooks)
    init: str  # an expression (or `pkg.mod:function`) returning an instance
    inputs: str  # ... returning forward()'s argument(s)
    kwargs: str  # ... returning forward()'s keyword arguments
    options: dict[str, JsonValue]  # passed to factory functions as `config`
    factories: str  # a file of init_/inputs_/kwargs_<Class> functions
    base_dir: str  # what relative factory paths are relative to


class GraphOptions(TypedDict, total=False):
    """What the worker needs to decompose an exported program as each export toolchain
    does, read from the installed packages by the parent (capture/graphs.py)."""

    onnx_export_ops: list[str]  # the overloads the dynamo ONNX registry implements
    executorch_decompositions: dict[str, str]  # ExecuTorch's changes to the core-ATen table
    compile_fullgraph: bool  # the compile target's `fullgraph` setting: Dynamo's nopython verdict too


class _FileParamsRequired(TypedDict):
    path: str  # absolute
    module: str  # the dotted name the file is imported as


class FileParams(_FileParamsRequired, total=False):
    """What both per-file methods (`analyse`, `static`) read."""

    roots: list[str]  # import roots (the project, `src/`, siblings)
    skip: list[str]  # qualnames the user asked to skip
    devices: list[str]  # the targets' devices ("mps", "cuda", "cpu")
    views: list[str]  # the call-tree views the targets judge (vocabulary.py)


class AnalyseParams(FileParams, total=False):
    """`analyse`: import the file in the worker and capture every class."""

    overlays: dict[str, str]  # path -> the editor's unsaved text, imported instead of the disk's
    classes: dict[str, ClassRequest]  # qualname -> how to build it
    infer_inputs: bool | int  # trace classes with inferred inputs: true, false, or at most this many a file
    graph_options: GraphOptions
    partial: bool  # send the dispatcher view first (set by the pool when it has a handler)
    # The dispatcher view's answer is wanted as soon as possible (the editor's squiggles): the
    # worker warms only that view before forking the file's child. Without it (the CLI, which
    # keeps the partial answer only for a file that fails after it) every view is warmed first.
    fast_first: bool


class StaticParams(FileParams, total=False):
    """`static`: read the classes from source, never import the file."""

    text: str | None  # the file's text (None: read from disk)
    classes: list[str]  # qualnames to read (empty: every module class)


class TargetDataParams(TypedDict, total=False):
    versions_only: bool  # just the exporters' versions (the cache key), not their tables


class NoParams(TypedDict):
    """`hello`, `loaded_packages`: the method takes no parameters."""


class WarmParams(TypedDict):
    """`warm`: the views the configured targets judge, in the order to warm them (the
    dispatcher view first: the fast targets' squiggles need only it). Sent once the worker
    is up; answered at once, the views are warmed while no request waits."""

    views: list[str]


class WarmAnswer(TypedDict):
    """The worker's views: warmed (inherited by every analysis it forks from now on), and
    asked for but not yet warmed, in the order they will be."""

    warmed: list[str]
    pending: list[str]


# What the parent sends as a request's `params`: one record per method.
RequestParams = AnalyseParams | StaticParams | WarmParams | TargetDataParams | NoParams


def warm_params(views: list[str]) -> WarmParams:
    return {"views": list(dict.fromkeys(views))}


def analyse_params(
    path: str,
    module: str,
    *,
    roots: list[str],
    skip: list[str],
    devices: list[str],
    views: list[str],
    classes: dict[str, ClassRequest],
    overlays: dict[str, str],
    infer_inputs: bool | int,
    graph_options: GraphOptions | None = None,
) -> AnalyseParams:
    out: AnalyseParams = {
        "path": path,
        "module": module,
        "roots": roots,
        "skip": skip,
        "devices": devices,
        "views": views,
        "overlays": overlays,
        "classes": classes,
        "infer_inputs": infer_inputs,
    }
    if graph_options:
        out["graph_options"] = graph_options
    return out


def static_params(
    path: str,
    module: str,
    *,
    text: str | None,
    classes: list[str],
    roots: list[str],
    skip: list[str],
    devices: list[str],
    views: list[str],
) -> StaticParams:
    return {
        "path": path,
        "module": module,
        "text": text,
        "classes": classes,
        "roots": roots,
        "skip": skip,
        "devices": devices,
        "views": views,
    }


# -- messages --------------------------------------------------------------------------------


class _RequestRequired(TypedDict):
    method: str


class Request(_RequestRequired, total=False):
    id: int
    params: dict[str, object]  # one of the *Params records above, as JSON; checked by its method


class WorkerError(TypedDict, total=False):
    type: str
    message: str
    trace: str


class Reply(TypedDict, total=False):
    """The final answer to one request: `result`, or `error`; `recycle` asks the parent to
    replace this worker (state it could not reset)."""

    id: int
    result: Any
    recycle: str
    error: WorkerError


class Partial(TypedDict):
    """An early part of the answer to `analyse`, before its reply."""

    id: int
    partial: FileAnswer


Message = Reply | Partial


def request(request_id: int, method: str, params: Mapping[str, object]) -> Request:
    return {"id": request_id, "method": method, "params": dict(params)}


def reply(request_id: int | None, result: Any, recycle: str | None = None) -> Reply:
    out: Reply = {"result": result}
    if request_id is not None:
        out["id"] = request_id
    if recycle:
        out["recycle"] = recycle
    return out


def error_reply(request_id: int | None, kind: str, message: str, trace: str = "") -> Reply:
    out: Reply = {"error": {"type": kind, "message": message, "trace": trace}}
    if request_id is not None:
        out["id"] = request_id
    return out


def partial(request_id: int, answer: FileAnswer) -> Partial:
    return {"id": request_id, "partial": answer}


# -- validation ------------------------------------------------------------------------------


def _expect(value: object, kind: type | tuple[type, ...], where: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ProtocolError(f"{where}: expected {names}, got {type(value).__name__}")


def check_request(message: object) -> Request:
    """The worker's side: a request it can dispatch (unknown methods are the caller's error)."""
    _expect(message, dict, "request")
    assert isinstance(message, dict)
    _expect(message.get("method"), str, "request.method")
    if message["method"] not in METHODS:
        raise ProtocolError(f"request.method: unknown method {message['method']!r}")
    if "id" in message and message["id"] is not None:
        _expect(message["id"], int, "request.id")
    params = message.get("params")
    if params is not None:
        _expect(params, dict, "request.params")
    out: Request = {"method": message["method"], "params": params or {}}
    if isinstance(message.get("id"), int):
        out["id"] = message["id"]
    return out


def _check_file_params(params: object, where: str) -> dict[str, object]:
    _expect(params, dict, where)
    assert isinstance(params, dict)
    for name in ("path", "module"):
        _expect(params.get(name), str, f"{where}.{name}")
    for name in ("roots", "skip", "devices", "views"):
        if params.get(name) is not None:
            _expect(params[name], list, f"{where}.{name}")
    return params


def check_analyse_params(params: object) -> AnalyseParams:
    """The worker's side of `analyse`: the fields capture_file reads."""
    checked = _check_file_params(params, "analyse")
    for name, kinds in (
        ("overlays", dict),
        ("classes", dict),
        ("graph_options", dict),
        ("infer_inputs", (bool, int)),
        ("fast_first", bool),
    ):
        if checked.get(name) is not None:
            _expect(checked[name], kinds, f"analyse.{name}")
    classes = checked.get("classes")
    for qualname, entry in (classes if isinstance(classes, dict) else {}).items():
        _expect(entry, dict, f"analyse.classes.{qualname}")
    return checked  # type: ignore[return-value]  # checked above, field by field


def check_static_params(params: object) -> StaticParams:
    """The worker's side of `static`."""
    checked = _check_file_params(params, "static")
    if checked.get("text") is not None:
        _expect(checked["text"], str, "static.text")
    if checked.get("classes") is not None:
        _expect(checked["classes"], list, "static.classes")
    return checked  # type: ignore[return-value]  # checked above, field by field


def check_target_data_params(params: object) -> TargetDataParams:
    _expect(params, dict, "target_data")
    assert isinstance(params, dict)
    if params.get("versions_only") is not None:
        _expect(params["versions_only"], bool, "target_data.versions_only")
    return params  # type: ignore[return-value]  # checked above, field by field


def check_warm_params(params: object) -> WarmParams:
    """The worker's side of `warm`."""
    _expect(params, dict, "warm")
    assert isinstance(params, dict)
    _expect(params.get("views"), list, "warm.views")
    for view in params["views"]:
        _expect(view, str, "warm.views[]")
    return {"views": list(params["views"])}


def check_warm_answer(answer: object) -> WarmAnswer:
    """The parent's side of `warm`."""
    _expect(answer, dict, "warm answer")
    assert isinstance(answer, dict)
    for name in ("warmed", "pending"):
        _expect(answer.get(name), list, f"warm answer.{name}")
    return {"warmed": [str(v) for v in answer["warmed"]], "pending": [str(v) for v in answer["pending"]]}


def check_message(message: object) -> Message:
    """The parent's side: a reply, an error reply or a partial (their payloads are checked
    by `check_hello` / `check_file_answer` where their method is known)."""
    _expect(message, dict, "message")
    assert isinstance(message, dict)
    if "partial" in message:
        _expect(message.get("id"), int, "partial.id")
        _expect(message["partial"], dict, "partial.partial")
        return Partial(id=message["id"], partial=message["partial"])
    if "error" in message:
        _expect(message["error"], dict, "reply.error")
    elif "result" not in message:
        raise ProtocolError("reply: neither result, error nor partial")
    if "recycle" in message and message["recycle"] is not None:
        _expect(message["recycle"], str, "reply.recycle")
    checked: Reply = {}
    if "id" in message:
        checked["id"] = message["id"]
    if "result" in message:
        checked["result"] = message["result"]
    if message.get("recycle"):
        checked["recycle"] = message["recycle"]
    if "error" in message:
        checked["error"] = message["error"]
    return checked


def check_hello(hello: object) -> Hello:
    """The parent's side of `hello`: raises ProtocolError on a version mismatch."""
    _expect(hello, dict, "hello")
    assert isinstance(hello, dict)
    version = hello.get("protocol")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"the worker speaks protocol version {version if version is not None else '1 (unversioned)'},"
            f" this atenlint speaks {PROTOCOL_VERSION}: the worker runs another atenlint "
            f"installation's code; reinstall atenlint so both are the same version"
        )
    _expect(hello.get("torch"), str, "hello.torch")
    _expect(hello.get("python"), str, "hello.python")
    if hello.get("native_yaml") is not None:
        _expect(hello["native_yaml"], str, "hello.native_yaml")
    kernels = hello.get("registered_kernels")
    if kernels is not None:
        _expect(kernels, dict, "hello.registered_kernels")
    return hello  # type: ignore[return-value]  # checked above, field by field


def check_file_answer(answer: object, where: str = "answer") -> FileAnswer:
    """An `analyse`/`static` answer (final or partial): the fields the engine reads."""
    _expect(answer, dict, where)
    assert isinstance(answer, dict)
    classes = answer.get("classes", [])
    _expect(classes, list, f"{where}.classes")
    for index, cls in enumerate(classes):
        check_class_answer(cls, f"{where}.classes[{index}]")
    for name, kind in (("imported", list), ("refusals", list), ("import_error", dict), ("partial", bool)):
        if answer.get(name) is not None:
            _expect(answer[name], kind, f"{where}.{name}")
    if answer.get("seconds") is not None:
        _expect(answer["seconds"], (int, float), f"{where}.seconds")
    if "classes" not in answer:
        answer = dict(answer, classes=[])
    return answer  # type: ignore[return-value]  # checked above, field by field


def check_class_answer(cls: object, where: str) -> ClassAnswer:
    _expect(cls, dict, where)
    assert isinstance(cls, dict)
    for name in ("qualname", "name", "module", "status"):
        _expect(cls.get(name), str, f"{where}.{name}")
    ops = cls.get("ops")
    _expect(ops, list, f"{where}.ops")
    assert isinstance(ops, list)
    for index, op in enumerate(ops):
        check_captured_op(op, f"{where}.ops[{index}]")
    for name in ("build_error", "script_error", "trace_error", "fallback"):
        if cls.get(name) is not None:
            _expect(cls[name], dict, f"{where}.{name}")
    for name in ("graph_errors", "submodules", "covered"):
        if cls.get(name) is not None:
            _expect(cls[name], list, f"{where}.{name}")
    return cls  # type: ignore[return-value]  # checked above, field by field


def check_captured_op(op: object, where: str) -> CapturedOp:
    _expect(op, dict, where)
    assert isinstance(op, dict)
    _expect(op.get("op"), str, f"{where}.op")
    trees = op.get("trees")
    _expect(trees, dict, f"{where}.trees")
    assert isinstance(trees, dict)
    for view, tree in trees.items():
        if tree is not None:
            _expect(tree, dict, f"{where}.trees.{view}")
            _expect(tree.get("op"), str, f"{where}.trees.{view}.op")
    sites = op.get("sites")
    _expect(sites, list, f"{where}.sites")
    assert isinstance(sites, list)
    for index, site in enumerate(sites):
        _expect(site, dict, f"{where}.sites[{index}]")
        _expect(site.get("file"), str, f"{where}.sites[{index}].file")
        _expect(site.get("line"), int, f"{where}.sites[{index}].line")
    for name in ("phases", "devices"):
        if op.get(name) is not None:
            _expect(op[name], list, f"{where}.{name}")
    for name in ("args", "facts"):
        if op.get(name) is not None:
            _expect(op[name], dict, f"{where}.{name}")
    return op  # type: ignore[return-value]  # checked above, field by field


__all__ = [
    "METHODS",
    "PROTOCOL_VERSION",
    "AnalyseParams",
    "BuildError",
    "CallFacts",
    "CallTree",
    "CapturedOp",
    "ClassAnswer",
    "ClassRequest",
    "DelegateFacts",
    "ErrorInfo",
    "FileAnswer",
    "FileParams",
    "GraphOptions",
    "Hello",
    "ImportFailure",
    "JsonValue",
    "LibraryFacts",
    "Message",
    "Method",
    "Partial",
    "ProtocolError",
    "Refusal",
    "Reply",
    "Request",
    "Site",
    "StaticParams",
    "TargetDataParams",
    "WarmAnswer",
    "WarmParams",
    "WorkerError",
    "analyse_params",
    "captured_op",
    "check_analyse_params",
    "check_captured_op",
    "check_class_answer",
    "check_file_answer",
    "check_hello",
    "check_message",
    "check_request",
    "check_static_params",
    "check_target_data_params",
    "check_warm_answer",
    "check_warm_params",
    "error_reply",
    "partial",
    "reply",
    "request",
    "seen_in",
    "static_params",
    "warm_params",
]
