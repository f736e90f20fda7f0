"""The ``calculate`` tool's arithmetic, shared by the domains that offer it (airline, retail).

As tau2-bench: only digits, + - * / ( ) . and spaces; Python's own SyntaxError text for a bad
expression; the value rounded to 2 places. Unlike tau2's bare eval, huge exponents (9**9**9)
are refused instead of hanging the process.
"""

from __future__ import annotations

import ast

from .toolkit import ToolError

_CHARS = set("0123456789+-*/(). ")


def calculate(expression: str) -> str:
    if not all(ch in _CHARS for ch in expression):
        raise ToolError("Invalid characters in expression")
    tree = ast.parse(expression, filename="<string>", mode="eval")
    _check_powers(tree.body)
    return str(round(float(_eval(tree.body)), 2))


def _eval(node: ast.expr):
    return eval(compile(ast.Expression(node), "<string>", "eval"), {"__builtins__": None}, {})


def _check_powers(node: ast.AST) -> None:
    """Inner exponents are checked before an outer one is evaluated."""
    for child in ast.iter_child_nodes(node):
        _check_powers(child)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        exponent = _eval(node.right)
        if isinstance(exponent, (int, float)) and abs(exponent) > 10_000:
            raise ToolError("Exponent too large in expression")
