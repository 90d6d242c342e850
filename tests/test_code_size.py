"""A reader's size targets for the package, measured on its syntax tree.

No function of more than 70 statements or with a cyclomatic complexity above
25 (what a reviewer asks of a function: does it do one thing; counted on the
syntax tree, so that formatting, docstrings and comments cost nothing); an
algorithm's name written as a code literal in at most 3 modules (the backend
that owns it, and the few places that must name it).
"""

import ast
from pathlib import Path

import pytest

from sknw._sums import BACKENDS

PACKAGE = Path(__file__).resolve().parents[1] / "sknw"
MAX_STATEMENTS = 70
MAX_COMPLEXITY = 25
MAX_MODULES_PER_NAME = 3

_BRANCHES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.IfExp,
    ast.ExceptHandler,
    ast.With,
    ast.AsyncWith,
    ast.comprehension,
    ast.Assert,
    ast.match_case,
)


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _docstring_nodes(tree):
    """The string constants that are docstrings."""
    nodes = set()
    for node in ast.walk(tree):
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                nodes.add(body[0].value)
    return nodes


def complexity(node):
    """McCabe's cyclomatic complexity: 1 + branches + extra boolean operands."""
    total = 1
    for child in ast.walk(node):
        if isinstance(child, _BRANCHES):
            total += 1
        elif isinstance(child, ast.BoolOp):
            total += len(child.values) - 1
    return total


def statements(node):
    """Statements of a function's body, nested ones included (its docstring
    excluded)."""
    body = node.body
    docstring = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    total = sum(1 for child in ast.walk(node) if isinstance(child, ast.stmt))
    return total - 1 - int(docstring)


def _functions():
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
                yield name, statements(node), complexity(node)


def test_measures_on_a_known_function():
    source = (
        "def f(a, b):\n"
        '    """Doc."""\n'
        "    # a comment\n"
        "    if a and b:\n"
        "        return 1\n"
        "\n"
        "    return [x for x in a if x]\n"
    )
    (node,) = ast.parse(source).body
    assert statements(node) == 3  # if, its return, the last return
    # 1 + if + "and" + comprehension + its if (counted with it as one clause)
    assert complexity(node) == 4


def test_functions_are_short_and_simple():
    long = [(n, c) for n, c, _ in _functions() if c > MAX_STATEMENTS]
    complex_ = [(n, k) for n, _, k in _functions() if k > MAX_COMPLEXITY]
    assert not long, f"functions over {MAX_STATEMENTS} statements: {long}"
    assert not complex_, f"complexity over {MAX_COMPLEXITY}: {complex_}"


@pytest.mark.parametrize("name", list(BACKENDS))
def test_algorithm_names_are_written_in_few_modules(name):
    where = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        docs = _docstring_nodes(tree)
        if any(
            isinstance(node, ast.Constant) and node.value == name and node not in docs
            for node in ast.walk(tree)
        ):
            where.append(str(path.relative_to(PACKAGE.parent)))
    assert 1 <= len(where) <= MAX_MODULES_PER_NAME, where
