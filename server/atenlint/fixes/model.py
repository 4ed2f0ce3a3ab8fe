"""The shape of a catalog entry: what it applies to, when, what it writes, how exact it is.

Entries are plain data (see `catalog.py`); the code that reads them lives in the other
modules of this package. `check_catalog` says what is wrong with an entry, so a typo in
the catalog fails a test rather than silently never offering a fix.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field

from ..python_parse import parse_module
from ..versions import satisfies, valid_spec

REWRITE, SUPPRESS, EXPLAIN, CONFIG = "rewrite", "suppress", "explain", "config"
KINDS = (REWRITE, SUPPRESS, EXPLAIN, CONFIG)

# Module placeholders a template may use; each is spelled the way the file imports it.
MODULES = {"torch": "torch", "F": "torch.nn.functional", "math": "math"}

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z_0-9]*)\}")
_OPTIONAL = re.compile(r"\[\?(.*?)\?\]", re.DOTALL)


@dataclass(frozen=True)
class Parameter:
    name: str
    default: str | None  # the default's source text; None: required
    keyword_only: bool = False


@dataclass(frozen=True)
class Signature:
    """A Python parameter list, as torch documents the call (`"input, index"`).

    `*args` / `**kwargs` mark arguments the rewrite passes through untouched."""

    parameters: tuple[Parameter, ...]
    extra_positional: bool = False
    extra_keywords: bool = False

    @staticmethod
    @functools.cache
    def parse(text: str) -> Signature:
        source = f"def _({text}): pass"
        function = parse_module(source).body[0]
        assert isinstance(function, ast.FunctionDef)
        spec = function.args
        positional = spec.posonlyargs + spec.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        parameters = [
            Parameter(a.arg, ast.get_source_segment(source, d) if d is not None else None)
            for a, d in zip(positional, defaults)
        ]
        parameters += [
            Parameter(a.arg, ast.get_source_segment(source, d) if d is not None else None, True)
            for a, d in zip(spec.kwonlyargs, spec.kw_defaults)
        ]
        return Signature(tuple(parameters), spec.vararg is not None, spec.kwarg is not None)

    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def get(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)


@dataclass(frozen=True)
class Condition:
    """A named check on the call (see `conditions.CHECKS`) with its parameters."""

    check: str
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        return f"{self.check}({', '.join(map(repr, self.args))})"


@dataclass(frozen=True)
class Rewrite:
    """Replace a call that a target cannot run with one that it can.

    Two ways to write the replacement:
    - `template`: the whole call becomes this text. `{param}` is the user's own source text
      for that argument (or the signature's default), `{torch}`/`{F}`/`{math}` the module as
      the file spells it, `{name}` a value from `derive`; `[?...?]` is kept only when every
      argument inside it was written in the call.
    - `wrap` + `suffix` (+ `drop`): keep the call as written, rewrite only some arguments
      (`{"A": "{A}.cpu()"}`), append `suffix` after the call (after the named field for
      calls that return several tensors), and delete the keyword arguments in `drop`.
    """

    id: str
    title: str
    targets: tuple[str, ...]
    ops: tuple[str, ...]  # the overloads a finding must be about (all of its ops among these)
    signature: str  # the function form's parameters; a method's receiver is the first
    exact: bool
    why: str  # what the rewrite computes and why it runs where the original does not
    equivalence: str  # how the tests check it, and the tolerance
    functions: tuple[str, ...] = ()  # canonical names: "torch.take", "torch.nn.functional.pdist"
    methods: tuple[str, ...] = ()  # Tensor methods: "take" for x.take(i)
    modules: tuple[str, ...] = ()  # nn.Module classes called as self.<attr>(input)
    module_signature: str = ""  # the module class's constructor parameters
    template: str | None = None
    wrap: dict[str, str] = field(default_factory=dict)
    suffix: str = ""
    drop: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # for calls returning a named tuple: the fields a suffix may follow
    when: tuple[Condition, ...] = ()
    derive: dict[str, str] = field(default_factory=dict)  # placeholder -> derivation name (conditions.DERIVATIONS)
    approximation: str | None = None  # how an inexact rewrite differs, with its bound
    # Per target, the torch releases it is offered for (">=2.0,<2.15"); "*" for any other target.
    torch_versions: dict[str, str] = field(default_factory=dict)
    runs_on_cpu: bool = False  # the rewrite deliberately runs the op on the CPU (a round trip)
    kind: str = REWRITE
    # A rewrite that bakes in a fact of the example inputs (a window computed from the traced
    # input size) is only right while that fact holds: it says so in its title (this text,
    # with `{derived}` names filled in), is never preferred, and `--fix` applies it only with
    # `--unsafe-fixes`.
    only_while: str | None = None

    @property
    def parsed_signature(self) -> Signature:
        return Signature.parse(self.signature)

    @property
    def parsed_module_signature(self) -> Signature | None:
        return Signature.parse(self.module_signature) if self.modules else None


@dataclass(frozen=True)
class Remedy:
    """Not a rewrite: silence the warning, explain the environment, change configuration."""

    id: str
    title: str
    kind: str
    targets: tuple[str, ...]
    codes: tuple[str, ...]  # the rule codes it answers
    builder: str  # the function in remedies.py that builds it
    why: str
    exact: bool = True  # it does not change what the code computes
    torch_versions: dict[str, str] = field(default_factory=dict)


def placeholders(template: str) -> list[str]:
    return _PLACEHOLDER.findall(template)


def optional_groups(template: str) -> list[str]:
    return _OPTIONAL.findall(template)


Entry = Rewrite | Remedy


def check_entry(entry: Entry, known_checks: set[str], known_derivations: set[str]) -> list[str]:
    """What is wrong with one entry (empty: well-formed)."""
    problems: list[str] = []
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9_]+)*", entry.id):
        problems.append("id must be lower-case words joined by '-'")
    if not entry.targets:
        problems.append("no targets")
    if not entry.title:
        problems.append("no title")
    if entry.kind not in KINDS:
        problems.append(f"unknown kind {entry.kind!r}")
    for target, spec in entry.torch_versions.items():
        if target != "*" and target not in entry.targets:
            problems.append(f"torch_versions names {target!r}, which is not one of the targets")
        if not valid_spec(spec):
            problems.append(f"torch_versions {spec!r} is not a list of comparisons like '>=2.4,<2.15'")
    if isinstance(entry, Remedy):
        if not entry.codes:
            problems.append("a remedy needs the rule codes it answers")
        return problems
    if not entry.ops or not all(op.startswith("aten::") for op in entry.ops):
        problems.append("ops must be aten overloads")
    if not (entry.functions or entry.methods or entry.modules):
        problems.append("applies to no call (functions, methods or modules)")
    if entry.exact == bool(entry.approximation):
        problems.append("an exact entry has no approximation; an approximate one must say how it differs")
    if not entry.why or not entry.equivalence:
        problems.append("why and equivalence must be written")
    if (entry.template is None) == (not entry.wrap and not entry.suffix and not entry.drop):
        problems.append("give either a template or wrap/suffix/drop")
    try:
        signature = entry.parsed_signature
        module_signature = entry.parsed_module_signature
    except SyntaxError as error:
        return problems + [f"signature does not parse: {error.msg}"]
    names = set(signature.names())
    if module_signature is not None:
        if not set(names) - set(module_signature.names()):
            problems.append("a module form needs a call parameter the constructor does not take (its input)")
        names |= set(module_signature.names())
    known = names | set(MODULES) | set(entry.derive)
    texts = [entry.template or "", entry.suffix, *entry.wrap.values()]
    for text in texts:
        for name in placeholders(text):
            if name not in known:
                problems.append(f"placeholder {{{name}}} is neither a parameter, a module nor derived")
    for name in list(entry.wrap) + list(entry.drop):
        if name not in names:
            problems.append(f"{name!r} is not a parameter")
    for name, derivation in entry.derive.items():
        if derivation not in known_derivations:
            problems.append(f"unknown derivation {derivation!r}")
    for condition in entry.when:
        if condition.check not in known_checks:
            problems.append(f"unknown condition {condition.check!r}")
    if entry.fields and not entry.suffix:
        problems.append("fields only matter with a suffix")
    for name in placeholders(entry.only_while or ""):
        if name not in entry.derive:
            problems.append(f"only_while names {{{name}}}, which is not derived")
    return problems


def offered_in(entry: Entry, target: str, version: str) -> bool:
    """Whether the entry is offered for `target` ("onnx:17" counts as "onnx") on torch `version`."""
    family = target.split(":")[0]
    spec = entry.torch_versions.get(family, entry.torch_versions.get("*"))
    return spec is None or satisfies(spec, version)
