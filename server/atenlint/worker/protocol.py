"""The worker protocol: every message between the parent (`pool.py`, `engine.py`) and
the worker process (`main.py`), and the structures an analysis answers with, defined once.

JSON lines, one message a line. The parent sends requests; the worker answers each with
zero or more partial messages (`analyse` only: the dispatcher-view answer, ready before the
slower export views) followed by exactly one reply or error reply of the same id. The first
request of every worker is `hello`; its answer carries `protocol`, the version the worker
speaks, and the parent refuses a worker whose version is not `PROTOCOL_VERSION` (one clear
diagnostic, not a crash on a field that moved).

The answer structures are TypedDicts so the capture code keeps building plain dicts (they
cross a process boundary as JSON anyway) while both ends and mypy agree on their shape.
Validation (`check_*`) is shallow where depth would cost time on large call trees: it checks
the fields the reader relies on, and raises `ProtocolError` naming the field that is wrong.

Standard library only: the worker imports this before torch, and never anything else.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# Bump on any change a reader of the other side would misread (a renamed or retyped field,
# a new message kind); adding an optional field a reader ignores needs no bump.
PROTOCOL_VERSION = 2

METHODS = ("hello", "analyse", "static", "loaded_packages", "target_data", "shutdown")
Method = Literal["hello", "analyse", "static", "loaded_packages", "target_data", "shutdown"]


class ProtocolError(Exception):
    """A message that does not have the shape this protocol version defines."""


# -- call trees and sites ------------------------------------------------------------------


class LibraryFacts(TypedDict, total=False):
    """What an installed library registered for one of its (non-aten) ops."""

    kernels: list[str]  # dispatch keys with a kernel ("MPS", "CUDA", ...)
    platform: str
    cuda_build: bool
    onnx_opsets: list[int] | None  # None: the registry could not be read


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


class _CapturedOpRequired(TypedDict):
    op: str
    trees: dict[str, CallTree | None]  # view ("dispatch", "jit", "export", ...) -> tree
    sites: list[Site]  # outermost first


class CapturedOp(_CapturedOpRequired, total=False):
    """One captured call of an analysed class."""

    phases: list[str]  # "train" | "eval"
    args: dict[str, Any]
    conditional: bool
    devices: list[str]
    facts: dict[str, Any]


class _ClassAnswerRequired(TypedDict):
    qualname: str
    name: str
    module: str  # dotted: module.qualname
    status: str  # "ok" | "build_failed" | "script_failed" | "static" | "import_failed"
    ops: list[CapturedOp]


class ClassAnswer(_ClassAnswerRequired, total=False):
    """What the worker found for one module class."""

    key: str  # the name the user imports the class by (pyproject keys)
    capture: str  # "trace" | "script" | "static"
    covered: list[str]  # the views the trace gave
    fallback: dict[str, str]  # view -> "script" | "static"
    build: str
    moved_to_meta: list[str]
    build_error: dict[str, Any]
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


class ImportFailure(TypedDict, total=False):
    """What stopped the import of the analysed file."""

    type: str
    message: str
    line: int | None
    site: Site | None
    package: str | None
    trace: str
    refused: bool  # a sandbox refusal (its own diagnostic), not a failed import


class _FileAnswerRequired(TypedDict):
    classes: list[ClassAnswer]


class FileAnswer(_FileAnswerRequired, total=False):
    """The answer to `analyse` and `static`: one file's classes."""

    path: str
    module: str
    imported: list[str]  # the user's files the import pulled in
    import_error: ImportFailure
    seconds: float
    refusals: list[dict[str, Any]]
    # The dispatcher view of every class only (a partial message): judged by the device
    # targets while the export views are still being captured.
    partial: bool
    # torchcompat.degradations(): {capability, message, reason, torch} per capability this
    # torch lacks (a private API it moved), met so far in this worker.
    torch_degraded: list[dict[str, str]]


# -- hello -----------------------------------------------------------------------------------


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
    # What contains the analysed code (confine.Support.as_json() and "fork": a fresh
    # process per file): {"platform", "arch", "landlock_abi", "seccomp", "kernel", "fork",
    # "missing": [why a layer is absent, in words]}. Absent from an older worker.
    containment: dict[str, Any]


# -- messages --------------------------------------------------------------------------------


class _RequestRequired(TypedDict):
    method: str


class Request(_RequestRequired, total=False):
    id: int
    params: dict[str, Any]


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


def request(request_id: int, method: str, params: dict[str, Any]) -> Request:
    return {"id": request_id, "method": method, "params": params}


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
    "CallTree",
    "CapturedOp",
    "ClassAnswer",
    "ErrorInfo",
    "FileAnswer",
    "Hello",
    "ImportFailure",
    "LibraryFacts",
    "Message",
    "Method",
    "Partial",
    "ProtocolError",
    "Reply",
    "Request",
    "Site",
    "WorkerError",
    "check_captured_op",
    "check_class_answer",
    "check_file_answer",
    "check_hello",
    "check_message",
    "check_request",
    "error_reply",
    "partial",
    "reply",
    "request",
]
