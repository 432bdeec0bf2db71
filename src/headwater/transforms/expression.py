"""A small, safe expression language for Debezium's scripting SMTs (Filter, ContentBasedRouter).

Debezium evaluates `condition` / `topic.expression` with a JSR-223 engine (Groovy, GraalJS).
Headwater runs no foreign code: it parses the common subset of both languages itself and
evaluates the tree over the record.  Anything outside the subset is refused when the
configuration is read, with the position of the problem.

Supported: the variables `value`, `key`, `topic`, `valueSchema`, `keySchema`, `header`
(header name -> {value, schema}); literals (numbers, 'text', "text", true, false, null);
member access `a.b`, `a?.b`, `a['b']`, `a.get('b')` (and Struct getters such as
`getString('b')`, `getInt32('b')`); string methods startsWith, endsWith, contains, matches,
toUpperCase, toLowerCase, equals, length/size; operators `! - * / % + < <= > >= == != === !==
&& || ?:` with their usual precedence.  Member access on null is an error (as Groovy's
NullPointerException and JavaScript's TypeError are), except through `?.`.
"""

from __future__ import annotations

import re
from typing import Any

from headwater.connect.record import ConnectRecord, TransformError, java_string


class ExpressionError(ValueError):
    """The expression is outside the supported subset (message says where)."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>\d+(?:\.\d+)?[lLdDfF]?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>===|!==|==|!=|<=|>=|&&|\|\||\?\.|[-+*/%<>!?:.()\[\],])
""", re.X)
_GETTERS = {"get", "getString", "getInt8", "getInt16", "getInt32", "getInt64", "getFloat32",
            "getFloat64", "getBoolean", "getBytes", "getStruct", "getArray", "getMap"}
_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "===": 3, "!==": 3, "<": 4, "<=": 4, ">": 4,
           ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
VARIABLES = ("value", "key", "topic", "valueSchema", "keySchema", "header")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(f"unexpected character {text[pos]!r} at {pos} in {text!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group(0), pos))
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        if value is not None and tok[1] != value:
            self.fail(f"expected '{value}'")
        self.i += 1
        return tok

    def fail(self, what: str) -> None:
        _, val, pos = self.peek()
        raise ExpressionError(f"{what} at {pos} ('{val or 'end'}') in {self.text!r}")

    def parse(self) -> Any:
        node = self.ternary()
        if self.peek()[0] != "end":
            self.fail("unsupported syntax")
        return node

    def ternary(self) -> Any:
        cond = self.binary(1)
        if self.peek()[1] == "?":
            self.take()
            yes = self.ternary()
            self.take(":")
            no = self.ternary()
            return ("?", cond, yes, no)
        return cond

    def binary(self, level: int) -> Any:
        left = self.unary()
        while True:
            op = self.peek()[1]
            prec = _BINARY.get(op) if self.peek()[0] == "op" else None
            if prec is None or prec < level:
                return left
            self.take()
            right = self.binary(prec + 1)
            left = ("bin", op, left, right)

    def unary(self) -> Any:
        tok = self.peek()
        if tok[1] in ("!", "-") and tok[0] == "op":
            self.take()
            return ("un", tok[1], self.unary())
        return self.postfix(self.primary())

    def primary(self) -> Any:
        kind, val, _ = self.take()
        if kind == "num":
            digits = val.rstrip("lLdDfF")
            return ("lit", float(digits) if "." in digits or val[-1] in "dDfF" else int(digits))
        if kind == "str":
            return ("lit", re.sub(r"\\(.)", r"\1", val[1:-1]))
        if kind == "name":
            if val in ("true", "false"):
                return ("lit", val == "true")
            if val == "null":
                return ("lit", None)
            if val not in VARIABLES:
                self.i -= 1
                self.fail(f"unknown variable '{val}' (known: {', '.join(VARIABLES)})")
            return ("var", val)
        if val == "(":
            node = self.ternary()
            self.take(")")
            return node
        self.i -= 1
        self.fail("expected a value")
        raise AssertionError  # pragma: no cover

    def postfix(self, node: Any) -> Any:
        while True:
            val = self.peek()[1]
            if val in (".", "?."):
                self.take()
                kind, name, _ = self.take()
                if kind != "name":
                    self.i -= 1
                    self.fail("expected a name")
                if self.peek()[1] == "(":
                    self.take()
                    args = []
                    while self.peek()[1] != ")":
                        args.append(self.ternary())
                        if self.peek()[1] == ",":
                            self.take()
                    self.take(")")
                    node = ("call", node, name, args, val == "?.")
                else:
                    node = ("get", node, ("lit", name), val == "?.")
            elif val == "[":
                self.take()
                index = self.ternary()
                self.take("]")
                node = ("get", node, index, False)
            else:
                return node


def parse(text: str) -> Any:
    return _Parser(text).parse()


def _member(obj: Any, name: Any, safe: bool) -> Any:
    if obj is None:
        if safe:
            return None
        raise TransformError(f"cannot read '{name}' of null")
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, list) and isinstance(name, int):
        return obj[name] if 0 <= name < len(obj) else None
    if isinstance(obj, (str, list)) and name in ("length", "size"):
        return len(obj)
    raise TransformError(f"cannot read '{name}' of {type(obj).__name__}")


def _call(obj: Any, name: str, args: list[Any], safe: bool) -> Any:
    if obj is None:
        if safe:
            return None
        raise TransformError(f"cannot call {name}() on null")
    if name in _GETTERS and len(args) == 1:
        return _member(obj, args[0], False)
    if isinstance(obj, str):
        if name == "startsWith":
            return obj.startswith(str(args[0]))
        if name == "endsWith":
            return obj.endswith(str(args[0]))
        if name in ("contains", "includes"):
            return str(args[0]) in obj
        if name == "matches":
            return re.fullmatch(str(args[0]), obj) is not None
        if name == "toUpperCase":
            return obj.upper()
        if name == "toLowerCase":
            return obj.lower()
    if name == "equals" and len(args) == 1:
        return _equal(obj, args[0])
    if name in ("length", "size") and not args and isinstance(obj, (str, list, dict)):
        return len(obj)
    raise TransformError(f"unsupported method {name}() on {type(obj).__name__}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    return bool(a == b)


def _truth(v: Any) -> bool:
    """Groovy truth: null, false, 0, '' and empty collections are false."""
    return bool(v)


def evaluate(node: Any, env: dict[str, Any]) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "var":
        return env[node[1]]
    if kind == "get":
        return _member(evaluate(node[1], env), evaluate(node[2], env), node[3])
    if kind == "call":
        return _call(evaluate(node[1], env), node[2], [evaluate(a, env) for a in node[3]],
                     node[4])
    if kind == "un":
        v = evaluate(node[2], env)
        if node[1] == "!":
            return not _truth(v)
        if not isinstance(v, (int, float)):
            raise TransformError(f"cannot negate {type(v).__name__}")
        return -v
    if kind == "?":
        return evaluate(node[2] if _truth(evaluate(node[1], env)) else node[3], env)
    op, left = node[1], evaluate(node[2], env)
    if op == "&&":
        return _truth(left) and _truth(evaluate(node[3], env))
    if op == "||":
        return _truth(left) or _truth(evaluate(node[3], env))
    right = evaluate(node[3], env)
    if op in ("==", "==="):
        return _equal(left, right)
    if op in ("!=", "!=="):
        return not _equal(left, right)
    if op == "+" and (isinstance(left, str) or isinstance(right, str)):
        return f"{java_string(left)}{java_string(right)}"
    if left is None or right is None:
        if op in ("<", "<=", ">", ">="):
            raise TransformError(f"cannot compare null with '{op}'")
        raise TransformError(f"null operand of '{op}'")
    try:
        if op == "<":
            return left < right
        if op == "<=":
            return left <= right
        if op == ">":
            return left > right
        if op == ">=":
            return left >= right
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            return left / right
        remainder = abs(left) % abs(right)  # Java/JS: the sign of the dividend
        return -remainder if left < 0 else remainder
    except (TypeError, ZeroDivisionError) as exc:
        raise TransformError(f"cannot evaluate '{op}': {exc}") from None


def record_env(record: ConnectRecord) -> dict[str, Any]:
    """The variables Debezium binds for a record."""
    return {
        "value": record.value, "key": record.key, "topic": record.topic,
        "valueSchema": record.value_schema, "keySchema": record.key_schema,
        "header": {h.key: {"value": h.value, "schema": h.schema} for h in record.headers},
    }
