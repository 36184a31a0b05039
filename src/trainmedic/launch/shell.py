"""Just enough of bash to read a training launch script without running it.

Launch scripts build the command line from variables, `${VAR:-default}` defaults, `$((...))`
arithmetic, arrays (`ARGS=( ... )`, `ARGS+=( ... )`, `"${ARGS[@]}"`), multi-line strings and
`if` blocks over those variables. We interpret that subset statically: nothing is executed,
command substitutions `$(...)` become UNKNOWN, and an `if` we cannot decide takes its first
branch (noted). The result is the list of simple commands with their expanded argv.

A script is untrusted input, so every step is bounded: a value or array may not grow past
MAX_VALUE / MAX_ITEMS (`A="$A$A"` forty times), a script may expand MAX_EXPANSION characters in
all, arithmetic wraps to 64 bits as bash's does (a tower of powers stays small), `if`/`case`
nest at most MAX_NESTING deep, a script holds at most MAX_COMMANDS commands, and nesting deeper
than Python's stack is an error, not a traceback. Line numbers come from a table, not by
counting newlines from the top for every command.
"""

from __future__ import annotations

import ast
import bisect
import fnmatch
import operator
import re
from dataclasses import dataclass, field

from trainmedic.errors import UsageError

UNKNOWN = "\u27e8unknown\u27e9"  # a value the script computes at run time
MAX_VALUE = 1 << 20  # characters in one variable
MAX_ITEMS = 100_000  # items in one array
MAX_EXPANSION = 64 << 20  # characters all expansions of one script may produce
MAX_NESTING = 256  # open `if` / `case` blocks
MAX_COMMANDS = 200_000
_PLAIN_WORD = re.compile(r"[^\\ \t\r\n<#'\"`$;&|()]+")  # characters that are never special
_PLAIN_EXPAND = re.compile(r"[^\\'\"`$]+")
_PLAIN_DOUBLE = re.compile(r"[^\\`$]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_KEYWORDS_SKIP = {"then", "else", "do", "done", "{", "}", "esac", "in", "time", "!"}
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\2")
_DECLARE = {"export", "local", "declare", "readonly", "typeset"}


@dataclass
class Op:
    text: str  # && or ||


@dataclass
class CasePattern:
    patterns: list[str]  # raw words, matched like bash globs


@dataclass
class CaseEnd:
    """`;;`: the end of one `case` branch."""


@dataclass
class ArrayAssign:
    name: str
    append: bool
    items: list[str]


Token = str | Op | ArrayAssign | CasePattern | CaseEnd


@dataclass
class Command:
    line: int
    argv: list[str]


class ScriptSyntaxError(UsageError):
    """An unterminated quote or substitution."""


class Lexer:
    """Splits script text into simple commands of raw (unexpanded) words."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.ended_case_branch = False
        self.heredocs: list[tuple[str, bool]] = []
        self._newlines: list[int] | None = None

    def line_at(self, index: int) -> int:
        if self._newlines is None:  # built once: counting from the top each time is quadratic
            self._newlines = [m.start() for m in re.finditer("\n", self.s)]
        return bisect.bisect_left(self._newlines, index) + 1

    def commands(self) -> list[tuple[int, list[Token]]]:
        out: list[tuple[int, list[Token]]] = []
        expect_pattern: list[bool] = []  # one per open `case`: is a pattern due next?
        while self.i < self.n:
            if expect_pattern and expect_pattern[-1]:
                pattern = self._case_pattern()
                if pattern is None:
                    break
                if isinstance(pattern, CasePattern):
                    expect_pattern[-1] = False
                    out.append((self.line_at(self.i), [pattern]))
                    continue
                out.append((self.line_at(self.i), ["esac"]))
                expect_pattern.pop()
                continue
            start = self.i
            self.ended_case_branch = False
            tokens = self._read(array=False)
            if tokens and tokens[0] == "case":
                expect_pattern.append(True)
            elif tokens and tokens[0] == "esac" and expect_pattern:
                expect_pattern.pop()
            if tokens:
                out.append((self.line_at(start), tokens))
                if len(out) > MAX_COMMANDS:
                    raise ScriptSyntaxError(f"more than {MAX_COMMANDS} commands; not a launch "
                                            "script")
            if self.ended_case_branch and expect_pattern:
                out.append((self.line_at(start), [CaseEnd()]))
                expect_pattern[-1] = True
        return out

    def _case_pattern(self) -> CasePattern | str | None:
        """At a `case` pattern (`a|b)`): the pattern, or "esac", or None at end of text."""
        m = re.compile(r"(?:\s|#[^\n]*)*").match(self.s, self.i)
        self.i = m.end() if m else self.i
        if self.i >= self.n:
            return None
        if re.compile(r"esac\b").match(self.s, self.i):
            self.i += 4
            return "esac"
        end = self.s.find(")", self.i)
        if end < 0:
            raise ScriptSyntaxError(f"line {self.line_at(self.i)}: case pattern without )")
        raw = self.s[self.i : end].strip().lstrip("(")
        self.i = end + 1
        return CasePattern([p.strip() for p in raw.split("|")])

    def _skip_heredocs(self) -> None:
        """Skip the bodies of here-documents opened on the line just ended."""
        while self.heredocs:
            delimiter, strip_tabs = self.heredocs.pop(0)
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = self.s[self.i : end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break

    def _skip_comment_lines(self) -> None:
        """Lenient: comment-only lines inside a continued command are skipped."""
        while True:
            m = re.compile(r"[ \t]*#[^\n]*\n").match(self.s, self.i)
            if not m:
                return
            self.i = m.end()

    def _read(self, array: bool) -> list[Token]:
        """Read one command (or, with array=True, the items up to the closing parenthesis)."""
        s = self.s
        tokens: list[Token] = []
        word: str | None = None
        pieces: list[str] = []  # the current word is "".join(pieces) (no quadratic +=)

        def end_word() -> None:
            nonlocal word
            if word is not None:
                tokens.append("".join(pieces))
                word = None
                pieces.clear()

        def add(piece: str) -> None:
            nonlocal word
            word = ""
            pieces.append(piece)

        while self.i < self.n:
            c = s[self.i]
            if c == "\\":
                m = re.compile(r"\\[ \t]*(#[^\n]*)?\n").match(s, self.i)
                if m:  # continuation (also the lenient `\ # comment` form)
                    if m.end() - self.i > 2:
                        end_word()
                    self.i = m.end()
                    self._skip_comment_lines()
                    continue
                add(s[self.i : self.i + 2])
                self.i += 2
                continue
            if c in " \t\r":
                end_word()
                self.i += 1
                continue
            if c == "\n":
                end_word()
                self.i += 1
                self._skip_heredocs()
                if array:
                    continue
                return tokens
            if c == "<" and s.startswith("<<", self.i) and not s.startswith("<<<", self.i):
                m = _HEREDOC.match(s, self.i)
                if m:  # the body (after this line) is data, not commands
                    end_word()
                    self.heredocs.append((m.group(3), m.group(1) == "-"))
                    self.i = m.end()
                    continue
            if c == "#" and word is None:
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ScriptSyntaxError(f"line {self.line_at(self.i)}: unterminated ' quote")
                add(s[self.i : end + 1])
                self.i = end + 1
                continue
            if c == '"':
                end = self._scan_double(self.i)
                add(s[self.i : end])
                self.i = end
                continue
            if c == "`":
                end = self._scan_backtick(self.i)
                add(s[self.i : end])
                self.i = end
                continue
            if c == "$" and s[self.i + 1 : self.i + 2] in ("(", "{"):
                end = self._scan_dollar(self.i)
                add(s[self.i : end])
                self.i = end
                continue
            if array and c == ")":
                end_word()
                self.i += 1
                return tokens
            if c == "(" and word is not None and _ASSIGN.fullmatch("".join(pieces)):
                m = _ASSIGN.fullmatch("".join(pieces))
                assert m is not None
                self.i += 1
                items = self._read(array=True)
                tokens.append(ArrayAssign(m.group(1), bool(m.group(2)), [str(t) for t in items]))
                word = None
                pieces.clear()
                continue
            if c in ";&|()":
                two = s[self.i : self.i + 2]
                end_word()
                if two in ("&&", "||") and not array:
                    tokens.append(Op(two))
                    self.i += 2
                    continue
                if array:
                    self.i += 1
                    continue
                self.i += 2 if two in (";;", "|&") else 1
                if c in "()":
                    continue
                if two == ";;":
                    self.ended_case_branch = True
                return tokens
            plain = _PLAIN_WORD.match(s, self.i)
            add(plain.group() if plain else c)
            self.i = plain.end() if plain else self.i + 1
        end_word()
        if array:
            raise ScriptSyntaxError(f"line {self.line_at(self.n)}: unterminated array ( ... )")
        return tokens

    def _scan_double(self, i: int) -> int:
        s, j = self.s, i + 1
        while j < self.n:
            ch = s[j]
            if ch == "\\":
                j += 2
            elif ch == '"':
                return j + 1
            elif ch == "$" and s[j + 1 : j + 2] in ("(", "{"):
                j = self._scan_dollar(j)
            elif ch == "`":
                j = self._scan_backtick(j)
            else:
                j += 1
        raise ScriptSyntaxError(f"line {self.line_at(i)}: unterminated \" quote")

    def _scan_backtick(self, i: int) -> int:
        j = i + 1
        while j < self.n:
            if self.s[j] == "\\":
                j += 2
                continue
            if self.s[j] == "`":
                return j + 1
            j += 1
        raise ScriptSyntaxError(f"line {self.line_at(i)}: unterminated ` substitution")

    def _scan_dollar(self, i: int) -> int:
        """End index of `$(...)`, `$((...))` or `${...}` starting at i."""
        s = self.s
        open_ch = s[i + 1]
        close_ch = ")" if open_ch == "(" else "}"
        depth, j = 1, i + 2
        while j < self.n:
            ch = s[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "'" and open_ch == "(":
                end = s.find("'", j + 1)
                if end < 0:
                    break
                j = end + 1
                continue
            if ch == '"':
                j = self._scan_double(j)
                continue
            if ch == "$" and s[j + 1 : j + 2] in ("(", "{"):
                j = self._scan_dollar(j)
                continue
            if ch == open_ch:
                depth += 1
            elif ch == close_ch:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise ScriptSyntaxError(f"line {self.line_at(i)}: unterminated ${open_ch} ... {close_ch}")


# ---------------------------------------------------------------- expansion
_ARITH_OPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _arith(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return _int64(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _arith(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow):
            if right < 0 or right > 64:
                raise ValueError("exponent out of range")
            return _int64(pow(left, right, 1 << 64))
        return _int64(_ARITH_OPS[type(node.op)](left, right))
    raise ValueError("unsupported arithmetic")


def _int64(value: int) -> int:
    """bash's arithmetic is 64-bit signed and wraps: so does ours, and nothing grows."""
    if not isinstance(value, int):
        raise ValueError("not an integer")
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


@dataclass
class Shell:
    """Executes the static subset; `commands` collects every simple command's argv."""

    vars: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    exported: dict[str, str] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)
    _depth: int = 0
    _produced: int = 0  # characters produced by expansions so far (MAX_EXPANSION)

    # ---- expansion
    def lookup(self, name: str) -> str | None:
        if name in self.vars:
            return self.vars[name]
        if name in self.arrays:
            return self.arrays[name][0] if self.arrays[name] else ""
        return None

    def _param(self, body: str) -> list[str] | str:
        """The value of `${body}`: a string, or a list for `NAME[@]`."""
        if body.startswith("#"):
            name = body[1:]
            if name.endswith(("[@]", "[*]")):
                return str(len(self.arrays.get(name[:-3], [])))
            return str(len(self.lookup(name) or ""))
        if body in ("@", "*"):
            return list(self.positional)
        m = re.match(r"[A-Za-z_]\w*|\d+|[@*#?$!]", body)
        if not m:
            return UNKNOWN
        name, rest = m.group(0), body[m.end() :]  # positional parameters are never set
        if rest in ("[@]", "[*]"):
            if name in self.arrays:
                return list(self.arrays[name])
            value = self.vars.get(name)
            return [value] if value is not None else []
        idx = re.fullmatch(r"\[(\d+)\]", rest)
        if idx:
            items = self.arrays.get(name)
            if items is not None:
                k = int(idx.group(1))
                return items[k] if k < len(items) else ""
            return (self.vars.get(name, "")) if idx.group(1) == "0" else ""
        value = self.lookup(name)
        if not rest:
            return value or ""
        m2 = re.match(r"(:?)([-=+?])(.*)", rest, re.S)
        if not m2:
            return UNKNOWN if value is not None else ""
        colon, op, word = m2.groups()
        unset = value is None or (colon == ":" and value == "")
        if op in "-=":
            if unset:
                default = self.expand_string(word)
                if op == "=":
                    self.vars[name] = default
                return default
            return value or ""
        if op == "+":
            return "" if unset else self.expand_string(word)
        return value or ""

    def _arith_text(self, expr: str) -> str:
        def repl(m: re.Match[str]) -> str:
            value = self.lookup(m.group(1) or m.group(2) or m.group(3))
            return value.strip() if value and value.strip() else "0"

        expr = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\b", repl, expr)
        try:
            return str(_arith(ast.parse(expr.strip().replace("/", "//").replace("////", "//"),
                                        mode="eval").body))
        except (SyntaxError, ValueError, ZeroDivisionError, TypeError, RecursionError):
            return UNKNOWN

    def _dollar(self, raw: str, i: int) -> tuple[list[str] | str, int]:
        """Expand the `$...` at raw[i]; returns (value, index after it)."""
        value, end = self._dollar_value(raw, i)
        self._produced += len(value) if isinstance(value, str) else sum(map(len, value))
        if self._produced > MAX_EXPANSION:
            raise ScriptSyntaxError(f"the script expands to more than {MAX_EXPANSION >> 20} MiB "
                                    "of text; not a launch script")
        return value, end

    def _dollar_value(self, raw: str, i: int) -> tuple[list[str] | str, int]:
        nxt = raw[i + 1 : i + 2]
        if raw.startswith("$((", i):
            end = Lexer(raw)._scan_dollar(i)
            return self._arith_text(raw[i + 3 : end - 2]), end
        if nxt == "(":
            return UNKNOWN, Lexer(raw)._scan_dollar(i)
        if nxt == "{":
            end = Lexer(raw)._scan_dollar(i)
            return self._param(raw[i + 2 : end - 1]), end
        m = _NAME.match(raw, i + 1)
        if m:
            return self.lookup(m.group(0)) or "", m.end()
        if nxt.isdigit():
            return self.vars.get(nxt, ""), i + 2
        if nxt in "@*":
            return list(self.positional), i + 2
        if nxt in "#?$!-":
            return (str(len(self.positional)) if nxt == "#" else ""), i + 2
        return "$", i + 1

    def expand_word(self, raw: str) -> list[str]:
        """Bash word expansion: parameters, arithmetic, quote removal, field splitting."""
        fields: list[str] = []
        cur, has = "", False

        def push_split(value: str) -> None:
            nonlocal cur, has
            parts = value.split()
            if not parts:
                return
            if value[:1].isspace() and has:
                fields.append(cur)
                cur, has = "", False
            for k, part in enumerate(parts):
                if k > 0:
                    fields.append(cur)
                    cur = ""
                cur += part
                has = True
            if value[-1:].isspace():
                fields.append(cur)
                cur, has = "", False

        i, n = 0, len(raw)
        while i < n:
            c = raw[i]
            if c == "\\":
                if raw[i + 1 : i + 2] != "\n":
                    cur += raw[i + 1 : i + 2]
                    has = True
                i += 2
            elif c == "'":
                end = raw.find("'", i + 1)
                cur += raw[i + 1 : end]
                has = True
                i = end + 1
            elif c == '"':
                end = Lexer(raw)._scan_double(i)
                pieces = self._expand_double(raw[i + 1 : end - 1])
                cur += pieces[0]
                for piece in pieces[1:]:
                    fields.append(cur)
                    cur = piece
                has = True
                i = end
            elif c == "`":
                end = Lexer(raw)._scan_backtick(i)
                cur += UNKNOWN
                has = True
                i = end
            elif c == "$":
                value, i = self._dollar(raw, i)
                if isinstance(value, list):
                    for item in value:
                        push_split(" " + item + " ")
                else:
                    push_split(value)
            else:
                plain = _PLAIN_EXPAND.match(raw, i)
                cur += plain.group() if plain else c
                has = True
                i = plain.end() if plain else i + 1
        if has:
            fields.append(cur)
        return fields

    def _expand_double(self, inner: str) -> list[str]:
        """Inside double quotes: no splitting, except `"${A[@]}"` gives one field per item."""
        out = [""]
        i, n = 0, len(inner)
        while i < n:
            c = inner[i]
            if c == "\\" and inner[i + 1 : i + 2] in ('"', "\\", "$", "`", "\n"):
                if inner[i + 1] != "\n":
                    out[-1] += inner[i + 1]
                i += 2
            elif c == "`":
                out[-1] += UNKNOWN
                i = Lexer(inner)._scan_backtick(i)
            elif c == "$":
                value, i = self._dollar(inner, i)
                if isinstance(value, list):
                    if not value:
                        continue
                    out[-1] += value[0]
                    out.extend(value[1:])
                else:
                    out[-1] += value
            else:
                plain = _PLAIN_DOUBLE.match(inner, i)
                out[-1] += plain.group() if plain else c
                i = plain.end() if plain else i + 1
        return out

    def expand_string(self, raw: str) -> str:
        """Expansion without field splitting (assignments, defaults)."""
        return " ".join(self._expand_double_raw(raw))

    def _expand_double_raw(self, raw: str) -> list[str]:
        # An assignment value behaves like a double-quoted word, but keeps its own quoting.
        fields = []
        i, n, cur = 0, len(raw), ""
        while i < n:
            c = raw[i]
            if c == "'":
                end = raw.find("'", i + 1)
                end = n - 1 if end < 0 else end
                cur += raw[i + 1 : end]
                i = end + 1
            elif c == '"':
                end = Lexer(raw)._scan_double(i)
                cur += " ".join(self._expand_double(raw[i + 1 : end - 1]))
                i = end
            elif c == "\\":
                cur += raw[i + 1 : i + 2]
                i += 2
            elif c == "`":
                cur += UNKNOWN
                i = Lexer(raw)._scan_backtick(i)
            elif c == "$":
                value, i = self._dollar(raw, i)
                cur += " ".join(value) if isinstance(value, list) else value
            else:
                plain = _PLAIN_EXPAND.match(raw, i)
                cur += plain.group() if plain else c
                i = plain.end() if plain else i + 1
        fields.append(cur)
        return fields

    # ---- conditions
    def _test(self, words: list[str]) -> bool | None:
        negate = False
        while words and words[0] == "!":
            negate, words = not negate, words[1:]
        if not words:
            return None
        if words[0] in ("[", "[[", "test"):
            words = words[1:]
            if words and words[-1] in ("]", "]]"):
                words = words[:-1]
        else:
            return None
        while words and words[0] == "!":
            negate, words = not negate, words[1:]
        result = self._test_expr(words)
        return None if result is None else (result != negate)

    @staticmethod
    def _test_expr(w: list[str]) -> bool | None:
        if any(UNKNOWN in x for x in w):
            return None
        if len(w) == 1:
            return w[0] != ""
        if len(w) == 2:
            if w[0] == "-z":
                return w[1] == ""
            if w[0] == "-n":
                return w[1] != ""
            return None
        if len(w) == 3:
            a, op, b = w
            if op in ("=", "=="):
                return fnmatch.fnmatchcase(a, b)
            if op == "!=":
                return not fnmatch.fnmatchcase(a, b)
            ops = {"-eq": operator.eq, "-ne": operator.ne, "-lt": operator.lt,
                   "-le": operator.le, "-gt": operator.gt, "-ge": operator.ge}
            if op in ops:
                try:
                    return ops[op](int(a), int(b))
                except ValueError:
                    return None
        return None

    def _condition(self, tokens: list[Token]) -> bool | None:
        result: bool | None = None
        pending = "&&"
        first = True
        for segment, op in _segments(tokens):
            words = [w for raw in segment if isinstance(raw, str) for w in self.expand_word(raw)]
            value = self._test(words)
            if first:
                result, first = value, False
            elif pending == "&&":
                result = False if result is False or value is False else (
                    None if result is None or value is None else True)
            else:
                result = True if result is True or value is True else (
                    None if result is None or value is None else False)
            pending = op or pending
        return result

    # ---- execution
    def run(self, text: str, base_line: int = 0) -> None:
        stack: list[list] = []  # if: [active, taken]; case: [active, taken, word, parent]
        for line, tokens in Lexer(text).commands():
            line += base_line
            first = tokens[0]
            if isinstance(first, CasePattern | CaseEnd):
                self._case_branch(first, stack)
                continue
            head = first if isinstance(first, str) else ""
            if head in ("case", "esac"):
                self._case(head, tokens[1:], stack, line)
                continue
            if head in ("if", "elif", "else", "fi"):
                self._branch(head, tokens[1:], stack, line)
                if head != "else":
                    continue
                tokens = tokens[1:]
            if not all(frame[0] for frame in stack):
                continue
            while tokens and isinstance(tokens[0], str) and tokens[0] in _KEYWORDS_SKIP:
                tokens = tokens[1:]
            if not tokens:
                continue
            for segment, _op in _segments(tokens):
                self._simple(segment, line)

    def _branch(self, head: str, cond: list[Token], stack: list[list], line: int) -> None:
        if head == "fi":
            if stack:
                stack.pop()
            return
        enclosing = stack[:-1] if head in ("elif", "else") else stack
        parent = all(frame[0] for frame in enclosing)
        if head == "else":
            if stack:
                stack[-1][0] = parent and not stack[-1][1]
            return
        if head == "elif" and stack and stack[-1][1]:
            stack[-1][0] = False
            return
        if head == "if" and len(stack) >= MAX_NESTING:
            raise ScriptSyntaxError(f"line {line}: blocks nest more than {MAX_NESTING} deep")
        value = self._condition(cond) if parent else False
        if value is None:
            self.notes.append(f"line {line}: could not decide an `if`; took its branch")
            value = True
        if head == "if":
            stack.append([value, value])
        elif stack:
            stack[-1][0] = value
            stack[-1][1] = value

    def _case(self, head: str, rest: list[Token], stack: list[list], line: int) -> None:
        if head == "esac":
            if stack:
                stack.pop()
            return
        if len(stack) >= MAX_NESTING:
            raise ScriptSyntaxError(f"line {line}: blocks nest more than {MAX_NESTING} deep")
        parent = all(frame[0] for frame in stack)
        word = self.expand_string(rest[0]) if rest and isinstance(rest[0], str) else UNKNOWN
        if UNKNOWN in word and parent:
            self.notes.append(f"line {line}: `case` on a run-time value; took its first branch")
        # frame: [active, taken, word, parent active]
        stack.append([False, not parent, word, parent])

    def _case_branch(self, token: CasePattern | CaseEnd, stack: list[list]) -> None:
        if not stack or len(stack[-1]) != 4:
            return
        frame = stack[-1]
        if isinstance(token, CaseEnd) or frame[1]:
            frame[0] = False
            return
        word = frame[2]
        hit = UNKNOWN in word or any(
            fnmatch.fnmatchcase(word, self.expand_string(p)) for p in token.patterns
        )
        frame[0] = frame[1] = hit

    def _simple(self, segment: list[Token], line: int) -> None:
        words = list(segment)
        declare = False
        while words and isinstance(words[0], str) and words[0] in _DECLARE:
            declare, words = True, words[1:]
            while words and isinstance(words[0], str) and words[0].startswith("-"):
                words = words[1:]
        while words:
            tok = words[0]
            if isinstance(tok, ArrayAssign):
                items = [f for raw in tok.items for f in self.expand_word(raw)]
                if tok.append:
                    self.arrays.setdefault(tok.name, []).extend(items)
                else:
                    self.arrays[tok.name] = items
                if len(self.arrays[tok.name]) > MAX_ITEMS:
                    raise ScriptSyntaxError(f"line {line}: array {tok.name} grows past "
                                            f"{MAX_ITEMS} items; not a launch script")
                self.vars.pop(tok.name, None)
                words = words[1:]
                continue
            if isinstance(tok, Op):
                return
            if not isinstance(tok, str):  # a case pattern where a command was due: no command
                break
            m = _ASSIGN.match(tok)
            if not m:
                if declare and _NAME.fullmatch(tok):
                    words = words[1:]
                    continue
                break
            name, value = m.group(1), self.expand_string(tok[m.end() :])
            if m.group(2):
                if name in self.arrays:
                    self.arrays[name].append(value)
                    words = words[1:]
                    continue
                value = self.vars.get(name, "") + value
            if len(value) > MAX_VALUE:
                raise ScriptSyntaxError(f"line {line}: {name} grows past {MAX_VALUE >> 20} MiB; "
                                        "not a launch script")
            self.vars[name] = value
            self.arrays.pop(name, None)
            if declare:
                self.exported[name] = value
            words = words[1:]
        if declare or not words:
            return
        argv = [f for raw in words if isinstance(raw, str) for f in self.expand_word(raw)]
        if not argv:
            return
        if argv[0] == "eval" and self._depth < 4:
            self._depth += 1
            try:
                self.run(" ".join(argv[1:]), base_line=line - 1)
            finally:
                self._depth -= 1
            return
        if argv[0] == "unset":
            for name in argv[1:]:
                self.vars.pop(name, None)
                self.arrays.pop(name, None)
            return
        self.commands.append(Command(line, argv))


def _segments(tokens: list[Token]) -> list[tuple[list[Token], str | None]]:
    """Split a command at && / ||: [(words, operator that follows)]."""
    out: list[tuple[list[Token], str | None]] = []
    cur: list[Token] = []
    for tok in tokens:
        if isinstance(tok, Op):
            out.append((cur, tok.text))
            cur = []
        else:
            cur.append(tok)
    out.append((cur, None))
    return [(seg, op) for seg, op in out if seg]


def interpret(
    text: str, env: dict[str, str] | None = None, argv: list[str] | None = None
) -> Shell:
    """Run the static interpreter over a script; `env` seeds variables (not os.environ) and
    `argv` the positional parameters ($1, ${10}, "$@")."""
    positional = list(argv or [])
    variables = dict(env or {})
    variables.update({str(k): value for k, value in enumerate(positional, 1)})
    shell = Shell(vars=variables, positional=positional)
    try:
        shell.run(text)
    except RecursionError:
        raise ScriptSyntaxError("substitutions nest too deep; not a launch script") from None
    return shell
