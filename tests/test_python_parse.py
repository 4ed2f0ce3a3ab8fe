"""Every parse in the package goes through the one locked entry point (CPython #106905)."""

from __future__ import annotations

import ast
import pathlib
import threading

from atenlint import python_parse

PACKAGE = pathlib.Path(python_parse.__file__).parent


def _direct_parse_calls(tree: ast.AST) -> list[int]:
    """Lines of ``ast.parse(...)`` or ``compile(..., flags=ast.PyCF_ONLY_AST)`` calls."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        calls_ast_parse = (
            isinstance(func, ast.Attribute)
            and func.attr == "parse"
            and isinstance(func.value, ast.Name)
            and func.value.id == "ast"
        )
        asks_for_a_tree = any(
            "PyCF_ONLY_AST" in ast.unparse(argument) for argument in [*node.args, *(k.value for k in node.keywords)]
        )
        if calls_ast_parse or asks_for_a_tree:
            lines.append(node.lineno)
    return lines


def test_the_scan_sees_a_direct_parse():
    assert _direct_parse_calls(
        ast.parse("import ast\nast.parse('x')\ncompile('x', 'f', 'exec', ast.PyCF_ONLY_AST)\n")
    ) == [2, 3]


def test_no_module_parses_outside_the_locked_entry_point():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "python_parse.py":
            continue
        lines = _direct_parse_calls(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if lines:
            offenders[str(path.relative_to(PACKAGE))] = lines
    assert offenders == {}


def test_threads_parsing_at_once_get_the_same_trees_as_one_thread():
    source = "\n".join(f"def f{i}(a, b=[1, (2, 3)]):\n    return [x for x in range({i}) if x % 2]" for i in range(200))
    expected = ast.dump(ast.parse(source))
    results: list[str] = []
    errors: list[BaseException] = []

    def parse_repeatedly() -> None:
        try:
            for _ in range(20):
                results.append(ast.dump(python_parse.parse_module(source)))
        except BaseException as error:  # noqa: BLE001 - the test reports any failure
            errors.append(error)

    threads = [threading.Thread(target=parse_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results == [expected] * 80
