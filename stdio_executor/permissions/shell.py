"""A real shell parse of a Bash command line, for matching it against permission rules.

Owns: turning one command line into its simple commands (through lists, pipelines,
subshells, groups, control flow, function bodies and command or process substitutions),
each with its words after quote removal where they are known before the command runs, and
the facts a permission decision needs: did the parser understand all of it, is it "plain"
(only lists, pipelines, subshells and groups), does it redirect output into a file.
Must not: decide anything. ``rules`` matches these facts against rules.

The parser is tree-sitter's bash grammar, imported on first use (~30 ms): a daemon whose
settings have no Bash rule never pays for it. What the parser reports is cross-checked
against the scheduler's own conservative lexer (``tools.bash_syntax``): a command line is
"plain" only when both read the same simple commands with the same words, so a divergence
between tree-sitter and bash (line continuations inside words, exotic syntax) can never turn
into an allow. A parse in which a word holds an unquoted blank or operator (tree-sitter
sometimes glues the next line's command into a word) is not trusted at all (``ok`` is
false). ``tests/permissions/test_shell_soundness.py`` checks both against bash itself.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["ParsedCommand", "SimpleCommand", "Word", "parse", "warm"]


class Word(msgspec.Struct, frozen=True):
    """One word of a simple command.

    ``text`` is the word after quote removal, or None when its value is only known when the
    command runs (a ``$VAR``, ``$(...)``, ``$'...'``, arithmetic...). ``expands`` says the
    text still holds unquoted glob or brace characters, so the shell turns it into other
    words (``*.py``, ``{a,b}``).
    """

    raw: str
    text: str | None
    expands: bool = False


class SimpleCommand(msgspec.Struct, frozen=True):
    words: tuple[Word, ...]  # argv, assignments excluded
    assignments: tuple[Word, ...] = ()  # ``NAME=value`` words before the program
    source: str = ""  # the command's text in the line

    @property
    def static(self) -> bool:
        """Every word (and assignment) is known without running anything."""
        return all(w.text is not None for w in (*self.assignments, *self.words))

    @property
    def name(self) -> str | None:
        """The program, when it is known and does not expand into other words."""
        if not self.words:
            return None
        first = self.words[0]
        return None if first.text is None or first.expands else first.text

    def argv(self) -> list[str] | None:
        if not self.static:
            return None
        return [w.text for w in self.words if w.text is not None]


class ParsedCommand(msgspec.Struct, frozen=True):
    commands: tuple[SimpleCommand, ...]
    # The parser read the whole line without an error or a missing token.
    ok: bool
    # Only lists, pipelines, subshells and { } groups, and the scheduler's lexer agrees.
    plain: bool
    # Some redirection sends output into a file (not /dev/null, not another descriptor).
    writes: bool
    problems: tuple[str, ...] = msgspec.field(default=())
    # The files output is redirected into (None: known only when it runs).
    targets: tuple[str | None, ...] = msgspec.field(default=())
    # The files input is redirected from (``< .env``, ``$(<.env)``; None: known at run time).
    reads: tuple[str | None, ...] = msgspec.field(default=())
    # Where bash may run a value as code (``evaluates``: an arithmetic expression, an array
    # subscript, ``${x@P}``...) and where the line holds a value that could spell code
    # (``data``: a command's output, input read at run time, file names, quoted text with
    # a ``$`` or a backquote). Only the two together run code no parser sees; see
    # ``_evaluation``.
    evaluates: str | None = None
    data: str | None = None


_lock = threading.Lock()
_parser: Parser | None = None


def _get_parser() -> Parser:
    global _parser
    if _parser is None:
        with _lock:
            if _parser is None:
                import tree_sitter_bash
                from tree_sitter import Language, Parser

                _parser = Parser(Language(tree_sitter_bash.language()))
    return _parser


def warm() -> None:
    """Load the parser ahead of the first Bash call that needs it (a background thread)."""
    _get_parser()


def parse(command: str) -> ParsedCommand:
    try:
        data = command.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape: not a command bash runs
        return ParsedCommand((), False, False, False, ("the command is not valid text",))
    tree = _get_parser().parse(data)
    walker = _Walker()
    walker.visit(tree.root_node)
    ok = not tree.root_node.has_error
    if not ok:
        walker.problems.append("the command does not parse")
    elif walker.unreadable is not None:
        ok = False
        walker.problems.append(walker.unreadable)
    elif _misread(tree.root_node):
        ok = False
        walker.problems.append("the parser read a separator as part of a word")
    plain = ok and walker.plain and _lexer_agrees(command, walker.commands)
    if ok and walker.plain and not plain:
        walker.problems.append("two shell parsers read the command differently")
    evaluates, spells = _evaluation(tree.root_node)
    return ParsedCommand(
        tuple(walker.commands),
        ok,
        plain,
        walker.writes,
        tuple(walker.problems),
        tuple(walker.targets),
        tuple(walker.reads),
        evaluates,
        spells,
    )


# Tests whose operands bash evaluates as arithmetic (`[[ b -gt 1 ]]`) or as a variable name
# with a subscript (`-v`): a value there is run as code if it holds `a[$(...)]`.
_EVALUATING_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R"})
# Builtins that take variable names as operands (a subscript in a name is evaluated).
_NAME_TAKERS = frozenset({"read", "mapfile", "readarray", "getopts", "wait", "unset"})
# ... and those that put input read at run time into variables.
_READS_INTO = frozenset({"read", "mapfile", "readarray", "getopts"})
_DECLARES = frozenset({"declare", "typeset", "local", "export", "readonly"})
# Variables whose value bash evaluates as arithmetic when it is assigned, however that is
# (`RANDOM=$v`, `read OPTIND`, `for RANDOM in ...`).
_ASSIGNED_AS_NUMBERS = frozenset({"RANDOM", "SRANDOM", "OPTIND", "HISTCMD"})
# An expression that refers to a value: a name, an expansion, a substitution. `$((1+2))`,
# `${a[0]}`, `${a[@]}` and `${x:1:2}` evaluate nothing but their own digits.
_REFERS = re.compile(r"[A-Za-z_$`]")
_DATA_CHARS = re.compile(r"[$`]|[<>]\(")
_FILE_GLOB = re.compile(r"[*?]|\[.*\]", re.DOTALL)


def _evaluation(root: Node) -> tuple[str | None, str | None]:
    """Where bash evaluates a value as code, and where the line holds a value that could
    spell code.

    Bash evaluates a variable's value as an arithmetic expression in `(( ))`, `$(( ))`,
    `let`, array subscripts, substring offsets and `[[ -eq ]]`, and an array subscript in
    such a value (`a[$(cmd)]`) runs `cmd`; `${x@P}` runs the `$(...)` in x; a variable
    name taken from a value (`${!x}`, `printf -v "$x"`, a nameref) has its subscript
    evaluated. So `b='a[$(curl x)]'; echo $((b))` runs curl though no parser sees a
    command there. Code can only be spelled by a value that holds `$` or a backquote:
    quoted text that contains one, a command's output, input read at run time, file names
    from a glob, or text decoded at run time (an ANSI-C string); the host's environment is
    trusted. The check is per line, not per variable: both halves anywhere in it count."""
    evaluates: str | None = None
    data: str | None = None
    stack = [root]
    while stack and (evaluates is None or data is None):
        node = stack.pop()
        kind = node.type
        why_eval: str | None = None
        why_data: str | None = None
        if kind in ("arithmetic_expansion", "c_style_for_statement", "subscript"):
            if _REFERS.search(_inner(node, kind)):
                why_eval = "an array subscript" if kind == "subscript" else "arithmetic"
        elif kind == "compound_statement" and node.children and node.children[0].type == "((":
            if _REFERS.search(_text(node)):
                why_eval = "arithmetic"
        elif kind == "expansion":
            why_eval = _evaluating_expansion(node)
        elif kind in ("variable_name", "word") and _text(node) in _ASSIGNED_AS_NUMBERS:
            parent = node.parent
            if parent is None or parent.type not in ("simple_expansion", "expansion"):
                why_eval = f"an assignment to {_text(node)}"
        elif kind == "test_operator" and _text(node) in _EVALUATING_TESTS:
            why_eval = f"a {_text(node)} test"
        elif kind in ("command", "declaration_command", "unset_command"):
            why_eval, why_data = _evaluating_command(node)
        elif kind in _SUBSTITUTIONS:
            why_data = "the output of a command"
        elif kind in ("ansi_c_string", "translated_string"):
            why_data = "a string decoded when the line runs"
        elif kind in ("raw_string", "string_content", "heredoc_body", "word"):
            raw = _text(node)
            if _DATA_CHARS.search(raw):
                why_data = "text holding a $ or a backquote"
            elif kind == "word" and _FILE_GLOB.search(_strip_escaped(raw)):
                why_data = "file names a glob matches"
        evaluates = evaluates or why_eval
        data = data or why_data
        stack.extend(node.children)
    return evaluates, data


def _inner(node: Node, kind: str) -> str:
    """The expression of an arithmetic node or the index of a subscript."""
    if kind == "subscript":
        index = node.child_by_field_name("index")
        return _text(index) if index is not None else ""
    return _text(node)[1:]  # past the `$` of `$((`: an expansion inside still shows its own


def _evaluating_expansion(node: Node) -> str | None:
    types = [c.type for c in node.children]
    if len(types) > 1 and types[1] == "!":
        return "an indirect expansion"
    if "@" in types:
        return "a ${...@} transformation"
    if ":" in types:
        offset = "".join(_text(c) for c in node.children[types.index(":") + 1 : -1])
        if _REFERS.search(offset):
            return "a substring offset"
    return None


def _evaluating_command(node: Node) -> tuple[str | None, str | None]:
    """A builtin that evaluates its operands (`let`, `declare -i`, a variable name with a
    subscript or only known at run time) or reads input into variables."""
    texts = [_word(c).text for c in node.named_children if c.type not in _ARGUMENT_SKIP]
    if node.type == "command":
        name_node = node.child_by_field_name("name")
        # The name after quote removal (`l\et`, `'read'` are let and read to bash), looked
        # up through `builtin`/`command`, which run the builtin of that name.
        name = (
            _word(name_node.named_children[0]).text or ""
            if name_node is not None and name_node.named_children
            else ""
        )
        while name in ("builtin", "command") and texts:
            name, texts = texts[0] or "", texts[1:]
            if name.startswith("-") and texts:  # `command -p let`
                name, texts = texts[0] or "", texts[1:]
    else:
        name = _text(node.children[0]) if node.children else ""
    evaluates: str | None = None
    data: str | None = None
    if name == "let":
        evaluates = "let"
    elif name in _DECLARES:
        if any(t and t[:1] in "-+" and ("i" in t or "n" in t) for t in texts):
            evaluates = f"{name} of an integer or a reference"
        elif any(t is None or "[" in t for t in texts):
            evaluates = f"{name} of a name only known when it runs"
    elif name in _NAME_TAKERS:
        if any(t is None or "[" in t for t in texts):
            evaluates = f"{name} of a name only known when it runs"
    elif name in ("test", "[") and any(t in ("-v", "-R") for t in texts):
        evaluates = f"{name} -v"
    elif name == "printf":
        for flag, value in zip(texts, [*texts[1:], ""], strict=True):
            if flag is not None and flag.startswith("-v"):
                target = flag[2:] or value
                data = "a value printf -v builds"
                if target is None or "[" in target:
                    evaluates = "printf -v of a name only known when it runs"
    if name in _READS_INTO or (name == "wait" and "-p" in texts):
        data = f"input that {name} takes in"
    return evaluates, data


_SEPARATOR_IN_WORD = re.compile(r"[\s;&|<>()`]")


def _misread(root: Node) -> bool:
    """Whether a word holds an unquoted blank or operator: tree-sitter sometimes glues a
    newline and the next command into a word (``echo ';'`` + newline + ``rm``) where bash
    sees two commands. Such a parse is not trusted."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "word" and _SEPARATOR_IN_WORD.search(_strip_escaped(_text(node))):
            return True
        stack.extend(node.children)
    return False


def _lexer_agrees(command: str, commands: list[SimpleCommand]) -> bool:
    """Whether the conservative lexer sees the same simple commands with the same words."""
    from .bash_syntax import split_simple_commands  # Bash-only, with its tables (start-up)

    lexed = split_simple_commands(command)
    if lexed is None:
        return False
    lexed = [[w for w in words if not w.startswith("\0redir:")] for words in lexed]
    lexed = [words for words in lexed if words]
    ours = [[w.text for w in (*c.assignments, *c.words)] for c in commands]
    return lexed == ours


# Node types that only group statements: their commands are what matters.
_PLAIN = frozenset(
    {"program", "list", "pipeline", "subshell", "compound_statement", "negated_command"}
)
_REDIRECTS_NAMES = ("file_redirect", "heredoc_redirect", "herestring_redirect")
_REDIRECTS = frozenset(_REDIRECTS_NAMES)
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
# What follows a command's name that is not one of its arguments.
_ARGUMENT_SKIP = frozenset({"command_name", "variable_assignment", *_REDIRECTS_NAMES})
_STATEMENTS = (
    _PLAIN
    | _REDIRECTS
    | {
        "command",
        "redirected_statement",
        "declaration_command",
        "unset_command",
        "variable_assignment",
        "comment",
    }
)
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_GLOB = re.compile(r"[*?]|\[.*\]|\{.*(,|\.\.).*\}", re.DOTALL)


class _Walker:
    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.plain = True
        self.writes = False
        self.targets: list[str | None] = []
        self.reads: list[str | None] = []
        self.unreadable: str | None = None  # what the parser is known to misread
        self.problems: list[str] = []

    def _not_plain(self, why: str) -> None:
        if self.plain:
            self.problems.append(why)
        self.plain = False

    def visit(self, node: Node) -> None:
        kind = node.type
        if kind in _PLAIN or kind == "redirected_statement":
            for child in node.named_children:
                self.visit(child)
        elif kind == "command":
            self._command(node)
        elif kind in ("declaration_command", "unset_command"):
            # export/declare/local/readonly/unset: a command named by its keyword, whose
            # arguments change the environment of everything after it.
            keyword = _text(node.children[0])
            args = [_word(c) for c in node.named_children]
            self.commands.append(SimpleCommand((Word(keyword, keyword), *args), (), _text(node)))
            self._substitutions(node)
        elif kind == "variable_assignment":
            # A bare `NAME=value` statement changes the shell for every later command.
            self.commands.append(SimpleCommand((), (_word(node),), _text(node)))
            self._substitutions(node)
        elif kind == "test_command" and _text(node.children[0]) == "[":
            # `[ ... ]` is the program `[`; tree-sitter reads its arguments as expressions.
            words = tuple(_flatten(node))
            self.commands.append(SimpleCommand(words, (), _text(node)))
            self._substitutions(node)
        elif kind in _REDIRECTS:
            self._redirect(node)
        elif kind == "comment":
            pass
        else:
            # if/while/for/case, functions, [[ ]], (( )), anything newer than this code:
            # its commands still count (a deny rule must see them), but it is never plain.
            self._not_plain(f"the command uses {kind.replace('_', ' ')}")
            self._body(node)

    def _body(self, node: Node) -> None:
        for child in node.named_children:
            if child.type in _STATEMENTS:
                self.visit(child)
            elif child.type in _SUBSTITUTIONS:
                self._substitution(child)
            else:
                self._body(child)

    def _command(self, node: Node) -> None:
        assignments: list[Word] = []
        words: list[Word] = []
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                assignments.append(_word(child))
            elif kind == "command_name":
                words.append(_word(child.named_children[0] if child.named_children else child))
            elif kind in _REDIRECTS:
                self._redirect(child)
                continue
            else:
                words.append(_word(child))
        self.commands.append(SimpleCommand(tuple(words), tuple(assignments), _text(node)))
        self._substitutions(node)

    def _redirect(self, node: Node) -> None:
        kind = node.type
        if kind == "heredoc_redirect":
            self._not_plain("the command has a heredoc")
            # tree-sitter hangs what follows the delimiter on its line inside the heredoc
            # (`cat <<EOF | sh`, `cat <<EOF && rm x`, `cat <<EOF > out`): those commands and
            # redirections run too, and every rule must see them.
            quoted = False
            for child in node.named_children:
                if child.type == "heredoc_start":
                    quoted = any(c in _text(child) for c in "'\"\\")
                elif child.type == "heredoc_body":
                    # bash runs `...` in an unquoted heredoc's body; tree-sitter does not
                    # see it (it does see $(...)).
                    if not quoted and "`" in _text(child):
                        self.unreadable = "a backquoted command in a heredoc's body"
                elif child.type in _REDIRECTS:
                    self._redirect(child)
                elif child.type != "heredoc_end":
                    self.visit(child)
        elif kind == "herestring_redirect":
            self._not_plain("the command has a here-string")
        else:
            op = "".join(c.type for c in node.children if not c.is_named)
            destination = node.child_by_field_name("destination")
            target = _word(destination) if destination is not None else None
            to_fd = op in (">&", "<&") and target is not None and _is_fd(target)
            harmless = (
                target is not None and target.text in _HARMLESS_TARGETS and not target.expands
            )
            if ">" in op and not to_fd and not harmless:
                self.writes = True
                self.targets.append(None if target is None or target.expands else target.text)
            if "<" in op and not to_fd:
                self.reads.append(None if target is None or target.expands else target.text)
            if target is None or target.text is None:
                self._not_plain("a redirection target is only known at run time")
        self._substitutions(node)

    def _substitutions(self, node: Node) -> None:
        """Commands inside ``$(...)``, backticks and ``<(...)`` anywhere below ``node``."""
        for child in node.named_children:
            if child.type in _SUBSTITUTIONS:
                self._substitution(child)
            else:
                self._substitutions(child)

    def _substitution(self, node: Node) -> None:
        for child in node.named_children:
            self.visit(child)


_WORDS = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "number",
        "concatenation",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "ansi_c_string",
        "translated_string",
    }
)


def _flatten(node: Node) -> list[Word]:
    """The words of a ``[ ... ]`` test in order, operators included."""
    words: list[Word] = []
    for child in node.children:
        if child.is_missing:
            continue
        if not child.is_named or child.type == "test_operator":
            words.append(Word(_text(child), _text(child)))
        elif child.type in _WORDS:
            words.append(_word(child))
        else:
            words.extend(_flatten(child))
    return words


def _is_fd(word: Word) -> bool:
    return word.text is not None and (word.text.isdigit() or word.text == "-")


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def _word(node: Node) -> Word:
    raw = _text(node)
    text, expands = _value(node)
    return Word(raw, text, expands)


def _value(node: Node) -> tuple[str | None, bool]:
    """A word's value after quote removal, and whether unquoted glob/brace chars remain."""
    kind = node.type
    if kind == "word":
        raw = _text(node)
        bare = _strip_escaped(raw)
        if "`" in bare or "$" in bare:
            return None, False  # tree-sitter left an expansion inside a word: distrust it
        return _unescape(raw), bool(_GLOB.search(bare))
    if kind in ("number", "variable_name"):
        return _text(node), False
    if kind == "raw_string":
        return _text(node)[1:-1], False
    if kind == "string":
        parts: list[str] = []
        for child in node.named_children:
            if child.type != "string_content":
                return None, False
            parts.append(_unescape_double(_text(child)))
        return "".join(parts), False
    if kind == "concatenation":
        if any(not child.is_named for child in node.children):
            # A bare token glued into a word (tree-sitter reads `rm``rm` so, where bash
            # sees two substitutions): the parse cannot be trusted for this word.
            return None, False
        out: list[str] = []
        expands = False
        for child in node.named_children:
            value, child_expands = _value(child)
            if value is None:
                return None, False
            out.append(value)
            expands = expands or child_expands
        # Brace expansion spans the pieces tree-sitter splits it into: `{` `a,b` `}`.
        unquoted = "".join(
            _strip_escaped(_text(c)) if c.type == "word" else "''" for c in node.named_children
        )
        return "".join(out), expands or bool(_GLOB.search(unquoted))
    if kind == "variable_assignment":
        name = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name_text = _text(name) if name is not None else ""
        if value_node is None:
            return f"{name_text}=", False
        value, _ = _value(value_node)
        return (None if value is None else f"{name_text}={value}"), False
    # $VAR, ${...}, $(...), `...`, <(...), $((...)), $'...', $"...": known only at run time.
    return None, False


def _unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":  # a line continuation disappears
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _strip_escaped(raw: str) -> str:
    """The word with escaped characters removed: what is left may still be special."""
    return re.sub(r"\\.", "", raw, flags=re.DOTALL)


def _unescape_double(raw: str) -> str:
    """Inside double quotes a backslash only escapes $ ` " \\ and a newline."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
