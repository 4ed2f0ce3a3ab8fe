"""What each rule code means, for formats that describe their rules (SARIF `tool.driver.rules`).

docs/rules.md (written from `RULES` by scripts/gen_rules_doc.py) documents each code under
its own anchor; `help_uri` points there.
A code not listed (a newer target) still gets a rule, described by its target.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..findings import rule_url


@dataclass(frozen=True)
class Rule:
    code: str
    name: str  # PascalCase, as SARIF's reportingDescriptor.name suggests
    description: str
    default_severity: str  # error | warning | information


_RULES = [
    Rule("ATL001", "SyntaxError", "Python cannot parse the file", "error"),
    Rule("ATL002", "ImportFailed", "importing the file raised", "warning"),
    Rule("ATL003", "CannotBuild", "a class could not be built: its constructor needs arguments", "information"),
    Rule(
        "ATL004",
        "ScriptFailed",
        "TorchScript cannot compile a class; it was analysed from its source only",
        "information",
    ),
    Rule(
        "ATL005",
        "Timeout",
        "importing or analysing the file used more processor time than `timeout` (or waited 10 times that)",
        "warning",
    ),
    Rule("ATL006", "WorkerCrashed", "the analysis worker died or ran out of memory", "warning"),
    Rule("ATL007", "Undecodable", "the file cannot be read or decoded", "warning"),
    Rule("ATL008", "TooLarge", "the file is larger than max-file-size", "information"),
    Rule("ATL009", "BadDirective", "an `# atenlint:` comment is not understood", "warning"),
    Rule("ATL010", "InvalidSettings", "the project's [tool.atenlint] settings are invalid", "error"),
    Rule("ATL011", "TraceFailed", "a class could not be traced with its example inputs", "warning"),
    Rule("ATL099", "InternalError", "atenlint failed while analysing the file", "warning"),
    Rule("MPS001", "NoMpsKernel", "an operator has no MPS kernel: it raises, or falls back to the CPU", "warning"),
    Rule("MPS002", "ForcedMpsFallback", "an operator always runs on the CPU on MPS", "warning"),
    Rule("MPS003", "NoMpsNorCpuKernel", "an operator has neither an MPS nor a CPU kernel", "error"),
    Rule("MPS010", "MpsFloat64", "MPS has no float64", "error"),
    Rule("MPS011", "MpsTooManyDims", "a tensor has more than 16 dimensions on MPS", "error"),
    Rule("MPS012", "MpsComplexUnsupported", "complex tensors passed to an op whose MPS kernel takes none", "error"),
    Rule("CUDA001", "NoCudaKernel", "an operator has no CUDA kernel", "error"),
    Rule("XLA001", "XlaCpuFallback", "an operator has no XLA lowering: it falls back to the CPU", "warning"),
    Rule("ONNX000", "OnnxExporterMissing", "the ONNX exporter's registry is not available", "information"),
    Rule("ONNX001", "OnnxUnsupported", "an operator cannot be exported to ONNX", "error"),
    Rule("ONNX002", "OnnxOpsetTooLow", "an operator needs a higher ONNX opset than the one exported at", "error"),
    Rule("ET001", "NotCoreAten", "an operator is not core ATen: ExecuTorch's to_edge rejects it", "error"),
    Rule("CORE001", "NotCoreAten", "an operator is not in core ATen after torch.export decomposition", "error"),
    Rule(
        "ET002",
        "NoPortableKernel",
        "an operator left to the CPU has no kernel in ExecuTorch's portable library: the program will not load",
        "error",
    ),
    Rule(
        "ET010", "DelegateLeavesToCpu", "an ExecuTorch delegate's partitioner leaves an operator to the CPU", "warning"
    ),
    Rule("ET011", "DelegateUnavailable", "an ExecuTorch delegate's partitioner cannot run here", "information"),
    Rule(
        "ET012",
        "DelegateNotJudged",
        "a class without example inputs gets no ExecuTorch delegate verdict",
        "information",
    ),
    Rule(
        "ET013",
        "DelegateCannotConvert",
        "an ExecuTorch delegate's partitioner takes a node its backend cannot convert: the lowering fails",
        "error",
    ),
    Rule("COREML000", "CoremltoolsMissing", "coremltools is not installed", "information"),
    Rule("COREML001", "CoremlUnsupported", "Core ML conversion has no converter for an operator", "error"),
    Rule("TRT001", "TensorrtGraphBreak", "Torch-TensorRT has no converter: a graph break", "warning"),
    Rule(
        "TRT002",
        "TensorrtConverterDeclines",
        "a Torch-TensorRT converter's capability validator declines the call's arguments: a graph break",
        "warning",
    ),
    Rule(
        "EXPORT001",
        "TorchExportFails",
        "the toolchain's own front end (torch.export, torch.jit.trace) fails on the class's code: a branch or "
        "size that depends on tensor values, or a call it cannot record (a warning when atenlint inferred the "
        "inputs it failed on)",
        "error",
    ),
    Rule("TS001", "TorchScriptFails", "torch.jit.script cannot compile the code", "error"),
    Rule(
        "COMPILE001",
        "DynamoGraphBreak",
        "torch.compile's Dynamo splits the graph here (an error with fullgraph = true)",
        "warning",
    ),
    Rule("COMPILE002", "GraphBreakFromSource", "read from source: a call that always breaks the graph", "warning"),
    Rule("COMPILE003", "DynamoDidNotRun", "Dynamo could not run the class with its example inputs", "information"),
    Rule(
        "COMPILE004",
        "InductorFallback",
        "Inductor has no lowering for this op on a device (cpu, cuda): torch.compile runs its eager kernel",
        "information",
    ),
    Rule(
        "COMPILE005",
        "DynamoRecompiles",
        "Dynamo specialised the graph on this Python number argument: another value compiles again",
        "information",
    ),
]
RULES = {rule.code: rule for rule in _RULES}


def rule_for(code: str, example_severity: str = "warning") -> Rule:
    known = RULES.get(code)
    if known is not None:
        return known
    prefix = code.rstrip("0123456789") or code
    return Rule(
        code,
        f"{prefix.capitalize()}{code[len(prefix) :]}",
        f"atenlint {prefix.lower()} target rule {code}",
        example_severity,
    )


def help_uri(code: str) -> str:
    return rule_url(code)
