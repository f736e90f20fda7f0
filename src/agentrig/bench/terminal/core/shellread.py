"""Reading one line of a shell script as the shell splits it: the commands it runs, and which of
them the script lets fail.

``units(line)`` splits a (logical) line into its *pipelines* — what ``;``, ``&&``, ``||``, ``&``,
``(``/``)`` and the compound keywords (``if … then``, ``while … do``, ``else``, ``fi`` …) separate
— each with the words of its commands as the shell would pass them (quotes removed, variables
left as written), redirections (``2>/dev/null``, ``>&2``, ``<<EOF``) taken out, and where it sits:

- ``tolerated``: the script goes on whatever the pipeline's exit status — it is followed by ``||``
  in its list (``cargo add regex || true``, ``pip3 install x || pip install x``), it is an
  ``if``/``elif``/``while``/``until`` condition, or it is negated with ``!``;
- ``nested``: it runs inside a command substitution (``$(…)``, backquotes) or a ``bash -c``/``sh
  -c`` string of another command — read for what it fetches, never rewritten;
- ``start``/``end``: where it is in the line (top-level pipelines only), so that a caller can
  replace just it.

Quoted text is data (``echo "npm install"`` runs ``echo``), a ``#`` that starts a word ends the
line. The reader never raises: an unbalanced quote ends the line as the shell would fail it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_OPERATORS = ("||", "&&", ";;", "|&", ";", "|", "&", "(", ")")
_REDIRECTS = ("&>>", "<<<", "<<-", "&>", ">>", "<<", "<>", ">|", ">&", "<&", ">", "<")
_CONDITION = {"if", "elif", "while", "until"}
_BODY = {"then", "do", "else"}
_SKIP = {"fi", "done", "esac", "{", "}", "time"}


@dataclass
class Unit:
    """One pipeline: its commands' words, its text (words joined, `` | `` between commands)."""

    commands: list[list[str]]
    tolerated: bool = False
    nested: bool = False
    start: int = 0
    end: int = 0
    subs: list[str] = field(default_factory=list)  # the command substitutions in its words

    @property
    def text(self) -> str:
        return " | ".join(" ".join(words) for words in self.commands)


@dataclass
class _Tok:
    kind: str  # "word" / "op"
    value: str
    start: int
    end: int
    nested: list[str] = field(default_factory=list)  # command substitutions inside the word


def _balanced(s: str, i: int, open_: str, close: str) -> int:
    """The index just past the `close` matching the `open_` at s[i] (quotes inside skipped)."""
    depth, j = 0, i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"" and open_ != c:
            k = s.find(c, j + 1)
            j = len(s) if k < 0 else k + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(s)


def _tokens(line: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(line)
    word: list[str] | None = None
    nested: list[str] = []
    start = 0
    skip_next_word = False

    def end_word(at: int) -> None:
        nonlocal word, nested, skip_next_word
        if word is not None:
            if skip_next_word:  # a redirection's target
                skip_next_word = False
                if toks and toks[-1].kind == "redirect":
                    toks[-1].end = at
            else:
                toks.append(_Tok("word", "".join(word), start, at, nested))
        word, nested = None, []

    while i < n:
        c = line[i]
        if c in " \t\r\n":
            end_word(i)
            i += 1
            continue
        if word is None and c == "#":
            break
        if c in "<>" or (c == "&" and line[i + 1:i + 2] == ">"):
            if word is not None and ("".join(word).isdigit() or word == []):
                word, nested = None, []  # the file descriptor in front of it (2>/dev/null)
            else:
                end_word(i)
            op = next(o for o in _REDIRECTS if line.startswith(o, i))
            toks.append(_Tok("redirect", op, i, i + len(op)))
            i += len(op)
            if op in (">&", "<&") and i < n and (line[i].isdigit() or line[i] == "-"):
                while i < n and (line[i].isdigit() or line[i] == "-"):
                    i += 1
                toks[-1].end = i
                continue
            skip_next_word = True
            continue
        op = next((o for o in _OPERATORS if line.startswith(o, i)), None)
        if op is not None and not (op == "(" and word is not None):
            end_word(i)
            toks.append(_Tok("op", op, i, i + len(op)))
            i += len(op)
            continue
        if word is None:
            word, start = [], i
        if c == "\\":
            word.append(line[i + 1:i + 2])
            i += 2
        elif c == "'":
            k = line.find("'", i + 1)
            k = n if k < 0 else k
            word.append(line[i + 1:k])
            i = k + 1
        elif c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                if line[j] == "\\":
                    word.append(line[j + 1:j + 2])
                    j += 2
                    continue
                if line.startswith("$(", j) and not line.startswith("$((", j):
                    k = _balanced(line, j + 1, "(", ")")
                    nested.append(line[j + 2:k - 1])
                    word.append(line[j:k])
                    j = k
                    continue
                word.append(line[j])
                j += 1
            i = j + 1
        elif line.startswith("$((", i):
            k = _balanced(line, i + 1, "(", ")")
            word.append(line[i:k])
            i = k
        elif line.startswith("$(", i):
            k = _balanced(line, i + 1, "(", ")")
            nested.append(line[i + 2:k - 1])
            word.append(line[i:k])
            i = k
        elif line.startswith("${", i):
            k = _balanced(line, i + 1, "{", "}")
            word.append(line[i:k])
            i = k
        elif c == "`":
            k = line.find("`", i + 1)
            k = n if k < 0 else k
            nested.append(line[i + 1:k])
            word.append(line[i:k + 1])
            i = k + 1
        else:
            word.append(c)
            i += 1
    end_word(n)
    return toks


def units(line: str, *, _nested: bool = False, _depth: int = 0) -> list[Unit]:
    """The pipelines of `line` in order (see the module docstring); nested ones after their host."""
    out: list[Unit] = []
    lst: list[tuple[Unit, str | None]] = []  # the current and-or list: (pipeline, connector after it)
    pipe: list[list[str]] = []
    words: list[str] = []
    subs: list[str] = []  # command substitutions met in the current pipeline
    condition = negated = False
    first = last = None

    def end_command() -> None:
        nonlocal words
        if words:
            pipe.append(words)
        words = []

    def end_pipeline(connector: str | None) -> None:
        nonlocal pipe, negated, first, last, subs
        end_command()
        if pipe:
            unit = Unit(commands=pipe, tolerated=condition or negated, nested=_nested,
                        start=first if first is not None else 0, end=last if last is not None else 0, subs=subs)
            lst.append((unit, connector))
        pipe, negated, first, last, subs = [], False, None, None, []

    def end_list() -> None:
        end_pipeline(None)
        for k, (unit, _) in enumerate(lst):
            if any(conn == "||" for _, conn in lst[k:]):
                unit.tolerated = True
            out.append(unit)
        lst.clear()

    for tok in _tokens(line):
        if tok.kind == "redirect":
            last = tok.end
            continue
        if tok.kind == "op":
            if tok.value in ("|", "|&"):
                end_command()
            elif tok.value in ("&&", "||"):
                end_pipeline(tok.value)
            else:
                end_list()
            continue
        subs.extend(tok.nested)
        if not words and not pipe:  # command position of a new pipeline
            if tok.value in _CONDITION:
                end_list()
                condition = True
                continue
            if tok.value in _BODY:
                end_list()
                condition = False
                continue
            if tok.value in _SKIP:
                continue
            if tok.value == "!":
                negated = True
                continue
        if not words and tok.value in _SKIP | _BODY:
            continue
        if first is None:
            first = tok.start
        last = tok.end
        words.append(tok.value)
    end_list()
    if _depth < 4:  # what runs inside: command substitutions and `bash -c '…'` (as guarded as their host)
        for unit in list(out):
            inner = list(unit.subs)
            for cmd in unit.commands:
                if cmd[0].rsplit("/", 1)[-1] in ("bash", "sh", "dash") and "-c" in cmd[1:-1]:
                    inner.append(cmd[cmd.index("-c") + 1])
            for text in inner:
                for sub in units(text, _nested=True, _depth=_depth + 1):
                    sub.tolerated = sub.tolerated or unit.tolerated
                    out.append(sub)
    return out
