"""Tool calls written as Python: ``f(a=1)``, ``[f(a=1), g(b="x")]``, ``brave_search.call(query="q")``.

Llama 3.1's built-in tools (after ``<|python_tag|>``), Llama 3.2's pythonic list and Llama 4's
``<|python_start|>...<|python_end|>`` write calls in Python syntax. Two pieces:

- ``PythonScanner`` finds, chunk by chunk, where such an expression ends: it tracks brackets and string
  literals (quotes, escapes, triple quotes) and reports ``done`` at the character that closes the outermost
  bracket, ``error`` at a closing bracket that matches nothing (or past ``MAX_PYTHON_DEPTH``). Each
  character is looked at once, so it is linear; it does not parse Python, it only finds the boundary.
- ``pythonic_calls`` converts the closed text with ``ast`` (never ``eval``): each call must have a name and
  keyword arguments whose values are literals JSON can spell; numbers keep their spelling when JSON allows
  it. One call that breaks the rules does not discard its siblings: it is returned apart, for the parser to
  report.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Literal

from .._tools import ToolCall

__all__ = ["MAX_PYTHON_DEPTH", "PYTHON_LIST_HEAD", "PythonScanner", "pythonic_calls"]

MAX_PYTHON_DEPTH = 128
"""Nesting of brackets in one Python call expression (past it the scan is an error, never recursion)."""
# A list of calls as it opens: "[", a dotted name, "(" (prose like "[see below]" fails at once).
PYTHON_LIST_HEAD = re.compile(r"\[[ \t\r\n]*[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*[ \t]*\(")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(")]}")
_STOP = re.compile(r"[()\[\]{}\"'#]")

PyStatus = Literal["more", "done", "error"]


class PythonScanner:
    """Find the end of one bracketed Python expression (a call or a list of calls). See the module docstring.

    The expression may start with a dotted name (``f(``, ``brave_search.call(``) or a ``[``; it ends when the
    first bracket opened closes.
    """

    __slots__ = ("_escape", "_quote", "_stack")

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._quote = ""  # the quote of the string being read: ', ", ''' or """
        self._escape = False

    def scan(self, text: str, i: int = 0) -> tuple[PyStatus, int]:
        """Consume ``text[i:]``: ``("done", j)`` (``j`` past the closing bracket), ``("error", j)``
        (``text[j]`` closes nothing or nests too deep), or ``("more", j)``: everything before ``j`` was
        consumed and the rest (at most two quote characters that may open or close a triple quote) waits."""
        n = len(text)
        stack = self._stack
        while i < n:
            if self._quote:
                i, held = self._in_string(text, i)
                if held:
                    return "more", i
                continue
            m = _STOP.search(text, i)
            if m is None:
                return "more", n
            j = m.start()
            c = text[j]
            if c == "#":  # a comment runs to the end of the line
                end = text.find("\n", j)
                if end < 0:
                    return "more", n
                i = end
                continue
            if c in "\"'":
                rest = text[j : j + 3]
                if len(rest) < 3 and rest == c * len(rest):
                    return "more", j  # '"' or '""' at the end: maybe the start of a triple quote
                self._quote = c * 3 if rest == c * 3 else c
                i = j + len(self._quote)
                continue
            if c in _OPEN:
                if len(stack) >= MAX_PYTHON_DEPTH:
                    return "error", j
                stack.append(_OPEN[c])
                i = j + 1
                continue
            # a closing bracket
            if not stack or stack[-1] != c:
                return "error", j
            stack.pop()
            if not stack:
                return "done", j + 1
            i = j + 1
        return "more", n

    def _in_string(self, text: str, i: int) -> tuple[int, bool]:
        """Advance inside a string literal; ``(index, held)``, held when the text ends with part of a closing
        triple quote."""
        quote, n = self._quote, len(text)
        while i < n:
            c = text[i]
            if self._escape:
                self._escape = False
                i += 1
            elif c == "\\":
                self._escape = True
                i += 1
            elif c == quote[0]:
                if text.startswith(quote, i):
                    self._quote = ""
                    return i + len(quote), False
                if len(quote) == 3 and quote.startswith(text[i:]):
                    return i, True
                i += 1
            elif c == "\n" and len(quote) == 1:
                self._quote = ""  # an unterminated one-line string: the ast parse will refuse it
                return i + 1, False
            else:
                i += 1
        return n, False


def _callee(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        # Llama's built-in tools: brave_search.call(query=...) names the tool "brave_search".
        base = _callee(node.value)
        if base is None:
            return None
        return base if node.attr == "call" else f"{base}.{node.attr}"
    return None


def _python_json(node: ast.expr, source: str) -> str | None:
    """The JSON text of a Python literal, numbers as written when JSON can spell them; ``None`` when the
    literal is not JSON (a set, bytes, a complex number, a non-string key, an infinite float)."""
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None or isinstance(v, bool):
            return {None: "null", True: "true", False: "false"}[v]
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, (int, float)):
            written = ast.get_source_segment(source, node) or ""
            if _JSON_NUMBER.fullmatch(written):
                return written
            try:
                return json.dumps(v, allow_nan=False)
            except ValueError:  # an infinite float written in a non-JSON spelling (1_0e999): no JSON
                return None
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = node.operand
        if not (isinstance(inner, ast.Constant) and type(inner.value) in (int, float)):
            return None
        text = _python_json(inner, source)
        if text is None or isinstance(node.op, ast.UAdd):
            return text
        return "-" + text  # the operand is a non-negative constant
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_python_json(e, source) for e in node.elts]
        return None if any(t is None for t in items) else "[" + ", ".join(str(t) for t in items) + "]"
    if isinstance(node, ast.Dict):
        parts = []
        for key, item in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            text = _python_json(item, source)
            if text is None:
                return None
            parts.append(f"{json.dumps(key.value, ensure_ascii=False)}: {text}")
        return "{" + ", ".join(parts) + "}"
    return None


def _one_call(node: ast.expr, source: str) -> ToolCall | None:
    if not isinstance(node, ast.Call) or node.args:
        return None
    name = _callee(node.func)
    if name is None:
        return None
    parts = []
    for kw in node.keywords:
        text = None if kw.arg is None else _python_json(kw.value, source)
        if text is None:
            return None
        parts.append(f"{json.dumps(kw.arg, ensure_ascii=False)}: {text}")
    return ToolCall(name=name, arguments="{" + ", ".join(parts) + "}")


def pythonic_calls(source: str) -> tuple[list[ToolCall], list[str]] | None:
    """The calls a Python expression spells, and the source of each item that is not a valid call.

    ``source`` is one call or a list (or tuple) of calls. Each call needs a name and keyword arguments with
    literal JSON-able values; an item that breaks the rules (``bad(x=b'z')``, a positional argument) is
    returned in the second list, its siblings are kept. ``None`` when the expression is not a call or a
    list with at least one call. Raises ``SyntaxError`` when the text is not a Python expression (the caller
    tells truncated from malformed).
    """
    source = source.strip()
    tree = ast.parse(source, mode="eval")
    listed = isinstance(tree.body, (ast.List, ast.Tuple))
    nodes = tree.body.elts if listed else [tree.body]  # type: ignore[attr-defined]
    calls: list[ToolCall] = []
    bad: list[str] = []
    for node in nodes:
        call = _one_call(node, source)
        if call is None:
            bad.append(ast.get_source_segment(source, node) or "")
        else:
            calls.append(call)
    if not calls:
        return None
    return calls, bad
