"""Parser: tokens -> parse tree, with Go's parse-time checks (known functions, defined variables)."""

from __future__ import annotations

from collections.abc import Collection

from svclog.logql.template import nodes as n
from svclog.logql.template.errors import TemplateError
from svclog.logql.template.goconv import parse_float, parse_int
from svclog.logql.template.lexer import Token, lex, unquote

_OPERAND_START = frozenset({"bool", "char", "dot", "field", "ident", "number", "nil", "raw", "string", "var", "("})
_NOT_EXECUTABLE = (n.Bool, n.Dot, n.Nil, n.Number, n.String)


class _End:
    pass


class _Else:
    pass


class Parsed:
    """A parsed template: the root list plus `{{define}}`d templates."""

    def __init__(self, root: tuple[n.Node, ...], defs: dict[str, tuple[n.Node, ...]]) -> None:
        self.root = root
        self.defs = defs


class _Parser:
    def __init__(self, text: str, funcs: Collection[str], name: str) -> None:
        self.text = text
        self.name = name
        self.tokens = lex(text, name)
        self.i = 0
        self.funcs = funcs
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.defs: dict[str, tuple[n.Node, ...]] = {}

    # -- token helpers -------------------------------------------------
    def fail(self, msg: str, tok: Token | None = None) -> TemplateError:
        tok = tok or self.tokens[min(self.i, len(self.tokens) - 1)]
        line = self.text.count("\n", 0, tok.pos) + 1
        return TemplateError(f"template: {self.name}:{line}: {msg}")

    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, kind: str, context: str) -> Token:
        tok = self.next()
        if tok.kind != kind:
            raise self.fail(f"unexpected {_describe(tok)} in {context}", tok)
        return tok

    def end_of(self, tok: Token) -> int:
        return tok.pos + len(tok.val)

    # -- structure -----------------------------------------------------
    def parse(self) -> Parsed:
        root: list[n.Node] = []
        while self.peek().kind != "eof":
            tok = self.peek()
            if tok.kind == "ldelim" and self.tokens[self.i + 1].val == "define":
                self.i += 2
                self.definition()
                continue
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                raise self.fail(f"unexpected {{{{{'end' if isinstance(node, _End) else 'else'}}}}}", tok)
            root.append(node)
        return Parsed(tuple(root), self.defs)

    def definition(self) -> None:
        tok = self.next()
        if tok.kind not in ("string", "raw"):
            raise self.fail("name of defined template must be a string constant", tok)
        self.expect("rdelim", "define clause")
        saved, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        if not isinstance(end, _End):
            raise self.fail("unexpected {{else}} in define clause")
        self.vars = saved
        self.defs[self.string_value(tok)] = tuple(body)

    def item_list(self) -> tuple[list[n.Node], object]:
        nodes: list[n.Node] = []
        while self.peek().kind != "eof":
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                return nodes, node
            nodes.append(node)
        raise self.fail("unexpected EOF")

    def text_or_action(self) -> n.Node | _End | _Else:
        tok = self.next()
        if tok.kind == "text":
            return n.Text(tok.val)
        if tok.kind == "ldelim":
            return self.action()
        raise self.fail(f"unexpected {_describe(tok)} in input", tok)

    def action(self) -> n.Node | _End | _Else:
        tok = self.peek()
        if tok.kind == "keyword":
            self.next()
            word = tok.val
            if word == "end":
                self.expect("rdelim", "end")
                return _End()
            if word == "else":
                nxt = self.peek()
                if not (nxt.kind == "keyword" and nxt.val in ("if", "with")):
                    self.expect("rdelim", "else")
                return _Else()
            if word in ("if", "with", "range"):
                return self.control(word)
            if word in ("break", "continue"):
                self.expect("rdelim", word)
                if not self.range_depth:
                    raise self.fail(f"{{{{{word}}}}} outside {{{{range}}}}", tok)
                return n.Break() if word == "break" else n.Continue()
            if word in ("template", "block"):
                return self.template_call(word)
            raise self.fail(f"unexpected {word!r} in command", tok)
        return n.Action(self.pipeline("command", "rdelim"))

    def control(self, kind: str) -> n.Branch:
        mark = len(self.vars)
        pipe = self.pipeline(kind, "rdelim")
        self.range_depth += kind == "range"
        body, end = self.item_list()
        self.range_depth -= kind == "range"
        else_body: list[n.Node] | None = None
        if isinstance(end, _Else):
            nxt = self.peek()
            if kind in ("if", "with") and nxt.kind == "keyword" and nxt.val == kind:
                self.next()
                else_body = [self.control(kind)]
            else:
                else_body, end = self.item_list()
                if not isinstance(end, _End):
                    raise self.fail("expected end; found {{else}}")
        del self.vars[mark:]
        return n.Branch(kind, pipe, tuple(body), None if else_body is None else tuple(else_body))

    def template_call(self, word: str) -> n.TemplateCall:
        tok = self.next()
        if tok.kind not in ("string", "raw"):
            raise self.fail(f"unexpected {_describe(tok)} in {word} clause", tok)
        name = self.string_value(tok)
        pipe = None
        if self.peek().kind != "rdelim":
            pipe = self.pipeline(word, "rdelim")
        else:
            self.next()
        if word == "block":
            saved, self.vars = self.vars, ["$"]
            body, end = self.item_list()
            self.vars = saved
            if not isinstance(end, _End):
                raise self.fail("unexpected {{else}} in block clause")
            self.defs[name] = tuple(body)
        return n.TemplateCall(name, pipe)

    # -- pipelines -----------------------------------------------------
    def pipeline(self, context: str, end: str) -> n.Pipe:
        decl: list[str] = []
        is_assign = False
        while self.peek().kind == "var":
            after = self.tokens[self.i + 1]
            if after.kind in (":=", "="):
                decl.append(self.next().val)
                self.next()
                is_assign = after.kind == "="
                break
            if after.kind == ",":
                if context != "range" or decl:
                    raise self.fail(f"too many declarations in {context}")
                decl.append(self.next().val)
                self.next()
                if self.peek().kind != "var":
                    raise self.fail("range can only initialize variables")
                continue
            break
        self.vars.extend(decl)
        cmds: list[n.Command] = []
        while True:
            tok = self.peek()
            if tok.kind == end:
                self.next()
                if not cmds:
                    raise self.fail(f"missing value for {context}", tok)
                break
            if tok.kind not in _OPERAND_START:
                raise self.fail(f"unexpected {_describe(tok)} in {context}", tok)
            cmds.append(self.command())
        for stage, cmd in enumerate(cmds[1:], start=2):
            if isinstance(cmd.args[0], _NOT_EXECUTABLE):
                raise self.fail(f"non executable command in pipeline stage {stage}")
        return n.Pipe(tuple(decl), is_assign, tuple(cmds))

    def command(self) -> n.Command:
        start = self.peek().pos
        args: list[n.Node] = []
        end = start
        while True:
            node = self.operand()
            if node is None:
                raise self.fail(f"unexpected {_describe(self.peek())} in operand")
            args.append(node)
            end = self.end_of(self.tokens[self.i - 1])
            tok = self.peek()
            if tok.kind in ("rdelim", ")"):
                break
            if tok.kind == "|":
                self.next()
                break
            if tok.kind in _OPERAND_START and tok.spaced:
                continue
            raise self.fail(f"unexpected {_describe(tok)} in operand", tok)
        return n.Command(tuple(args), start, self.text[start:end])

    def operand(self) -> n.Node | None:
        node = self.term()
        if node is None:
            return None
        fields: list[str] = []
        while self.peek().kind == "field" and not self.peek().spaced:
            fields.append(self.next().val[1:])
        if not fields:
            return node
        if isinstance(node, n.Field):
            return n.Field(node.idents + tuple(fields))
        if isinstance(node, n.Variable):
            return n.Variable(node.idents + tuple(fields))
        if isinstance(node, _NOT_EXECUTABLE):
            raise self.fail("unexpected . after term")
        return n.Chain(node, tuple(fields))

    def term(self) -> n.Node | None:
        tok = self.next()
        kind = tok.kind
        if kind == "ident":
            if tok.val not in self.funcs:
                raise self.fail(f'function "{tok.val}" not defined', tok)
            return n.Identifier(tok.val)
        if kind == "dot":
            return n.Dot()
        if kind == "nil":
            return n.Nil()
        if kind == "var":
            if tok.val not in self.vars:
                raise self.fail(f'undefined variable "{tok.val}"', tok)
            return n.Variable((tok.val,))
        if kind == "field":
            return n.Field((tok.val[1:],))
        if kind == "bool":
            return n.Bool(tok.val == "true")
        if kind in ("number", "char"):
            return self.number(tok)
        if kind == "(":
            pipe = self.pipeline("parenthesized pipeline", ")")
            return pipe
        if kind in ("string", "raw"):
            return n.String(self.string_value(tok))
        self.i -= 1
        return None

    def string_value(self, tok: Token) -> str:
        if tok.kind == "raw":
            return tok.val[1:-1].replace("\r", "")
        try:
            return unquote(tok.val[1:-1])
        except ValueError:
            raise self.fail(f"bad syntax: {tok.val}", tok) from None

    def number(self, tok: Token) -> n.Number:
        text = tok.val
        if tok.kind == "char":
            try:
                body = unquote(tok.val[1:-1]) if tok.val[1:-1] != '"' else '"'
            except ValueError:
                raise self.fail(f"malformed character constant: {text}", tok) from None
            if len(body) != 1:
                raise self.fail(f"malformed character constant: {text}", tok)
            return n.Number(text, ord(body), float(ord(body)), ord(body))
        if text.endswith("i"):
            raise self.fail(f"complex constants are not supported: {text}", tok)
        iv = parse_int(text)
        if iv is not None:
            return n.Number(text, iv, float(iv), iv)
        fv = parse_float(text)
        if fv is None:
            raise self.fail(f"illegal number syntax: {text!r}", tok)
        if not any(c in text for c in ".eEpP"):
            raise self.fail(f"integer overflow: {text!r}", tok)
        as_int = int(fv) if fv.is_integer() and -(1 << 63) <= fv < (1 << 63) else None
        hex_int = text.lstrip("+-")[:2] in ("0x", "0X") and not any(c in text for c in ".pP")
        return n.Number(text, as_int, fv, as_int if hex_int and as_int is not None else fv)


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "EOF"
    if tok.kind == "rdelim":
        return "<}}>"
    return f"<{tok.val}>" if tok.kind != "text" else f"{tok.val!r}"


def parse(text: str, funcs: Collection[str], name: str = "") -> Parsed:
    return _Parser(text, funcs, name).parse()
