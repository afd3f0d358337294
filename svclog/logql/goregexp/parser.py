"""Go's regexp/syntax parser (`syntax.Parse(re, syntax.Perl)`), for the shape of its tree.

Go's parser rewrites as it reads: adjacent literals merge (`ab` is one literal), `[a]` becomes the
literal a and `[Aa]` the case-folded literal A, a group's single class can become `.` when it is
"anything but a newline", and alternations are factored (alternation.py). The reference
decides how to run a regex filter from this tree, so the parser is followed step by step, with
Go's error messages. A Unicode class (`\\pL`, `\\p{Greek}`) is kept as an opaque tag: Python has no
script tables, and no shape decision reads its runes except the rare single-rune tables.
"""

from __future__ import annotations

import functools

from svclog.logql.goregexp.alternation import clean_alt, collapse, is_char_class, merge_char_class
from svclog.logql.goregexp.classes import (
    MAX_RUNE,
    PERL_GROUPS,
    POSIX_GROUPS,
    SINGLE_RUNE_TABLES,
    TABLES_WITH_NEWLINE,
    append_class,
    append_folded_range,
    append_negated_class,
    append_range,
    clean_class,
    in_class,
    min_fold_rune,
    simple_fold,
)
from svclog.logql.goregexp.syntax import (
    DOT_NL,
    FOLD_CASE,
    NON_GREEDY,
    ONE_LINE,
    PERL,
    PERL_X,
    UNICODE_GROUPS,
    WAS_DOLLAR,
    GoRegexError,
    Node,
    Op,
    simplify,
)


class _Parser:
    def __init__(self, pattern: str, flags: int):
        self.whole = pattern
        self.flags = flags
        self.stack: list[Node] = []
        self.num_cap = 0

    # --- stack

    def push(self, re: Node) -> Node | None:
        r = re.runes
        if re.op == Op.CHAR_CLASS and not re.opaque and len(r) == 2 and r[0] == r[1]:
            # [a] is the literal a
            if self.maybe_concat(r[0], self.flags & ~FOLD_CASE):
                return None
            re.op, re.runes, re.flags = Op.LITERAL, r[:1], self.flags & ~FOLD_CASE
        elif (
            re.op == Op.CHAR_CLASS
            and not re.opaque
            and (
                (
                    len(r) == 4
                    and r[0] == r[1]
                    and r[2] == r[3]
                    and simple_fold(r[0]) == r[2]
                    and simple_fold(r[2]) == r[0]
                )
                or (len(r) == 2 and r[0] + 1 == r[1] and simple_fold(r[0]) == r[1] and simple_fold(r[1]) == r[0])
            )
        ):
            # [Aa] is the case-folded literal A
            if self.maybe_concat(r[0], self.flags | FOLD_CASE):
                return None
            re.op, re.runes, re.flags = Op.LITERAL, r[:1], self.flags | FOLD_CASE
        else:
            self.maybe_concat(-1, 0)
        self.stack.append(re)
        return re

    def maybe_concat(self, r: int, flags: int) -> bool:
        """Merge the two literals on top of the stack; then, if r >= 0, push r as a literal."""
        if len(self.stack) < 2:
            return False
        re1, re2 = self.stack[-1], self.stack[-2]
        if re1.op != Op.LITERAL or re2.op != Op.LITERAL or re1.flags & FOLD_CASE != re2.flags & FOLD_CASE:
            return False
        re2.runes = re2.runes + re1.runes
        if r >= 0:
            re1.runes, re1.flags = [r], flags
            return True
        self.stack.pop()
        return False

    def literal(self, r: int) -> None:
        if self.flags & FOLD_CASE:
            r = min_fold_rune(r)
        self.push(Node(Op.LITERAL, self.flags, [r]))

    def op(self, op: Op) -> Node:
        re = Node(op, self.flags)
        self.push(re)
        return re

    def repeat(self, op: Op, lo: int, hi: int, before: int, after: int, last_repeat: int) -> int:
        """Apply a repetition to the top of the stack; `before`, `after` and `last_repeat` are
        offsets into the pattern (-1: no previous repetition). Returns the new offset."""
        s, flags = self.whole, self.flags
        if self.flags & PERL_X:
            if after < len(s) and s[after] == "?":
                after += 1
                flags ^= NON_GREEDY
            if last_repeat >= 0:
                # a** and a++ are errors in Perl mode
                raise GoRegexError("invalid nested repetition operator", s[last_repeat:after])
        if not self.stack or self.stack[-1].op >= Op.LEFT_PAREN:
            raise GoRegexError("missing argument to repetition operator", s[before:after])
        re = Node(op, flags, subs=[self.stack[-1]], min=lo, max=hi)
        self.stack[-1] = re
        if op == Op.REPEAT and (lo >= 2 or hi >= 2) and not _repeat_is_valid(re, 1000):
            raise GoRegexError("invalid repeat count", s[before:after])
        return after

    def concat(self) -> None:
        self.maybe_concat(-1, 0)
        i = len(self.stack)
        while i > 0 and self.stack[i - 1].op < Op.LEFT_PAREN:
            i -= 1
        subs, self.stack = self.stack[i:], self.stack[:i]
        self.push(collapse(subs, Op.CONCAT) if subs else Node(Op.EMPTY_MATCH))

    def alternate(self) -> None:
        i = len(self.stack)
        while i > 0 and self.stack[i - 1].op < Op.LEFT_PAREN:
            i -= 1
        subs, self.stack = self.stack[i:], self.stack[:i]
        if subs:
            clean_alt(subs[-1])
        self.push(collapse(subs, Op.ALTERNATE) if subs else Node(Op.NO_MATCH))

    # --- operators

    def swap_vertical_bar(self) -> bool:
        st = self.stack
        n = len(st)
        if n >= 3 and st[n - 2].op == Op.VERTICAL_BAR and is_char_class(st[n - 1]) and is_char_class(st[n - 3]):
            # single characters on both sides of | merge into a class at once
            re1, re3 = st[n - 1], st[n - 3]
            if re1.op > re3.op:
                re1, re3 = re3, re1
                st[n - 3] = re3
            merge_char_class(re3, re1)
            st.pop()
            return True
        if n >= 2 and st[n - 2].op == Op.VERTICAL_BAR:
            if n >= 3:
                clean_alt(st[n - 3])
            st[n - 2], st[n - 1] = st[n - 1], st[n - 2]
            return True
        return False

    def vertical_bar(self) -> None:
        self.concat()
        if not self.swap_vertical_bar():
            self.op(Op.VERTICAL_BAR)

    def right_paren(self) -> None:
        self.concat()
        if self.swap_vertical_bar():
            self.stack.pop()
        self.alternate()
        if len(self.stack) < 2:
            raise GoRegexError("unexpected )", self.whole)
        re1, re2 = self.stack[-1], self.stack[-2]
        del self.stack[-2:]
        if re2.op != Op.LEFT_PAREN:
            raise GoRegexError("unexpected )", self.whole)
        self.flags = re2.flags
        if re2.cap == 0:
            self.push(re1)
        else:
            re2.op, re2.subs = Op.CAPTURE, [re1]
            self.push(re2)

    # --- the main loop

    def parse(self) -> Node:
        s = self.whole
        i, last_repeat = 0, -1
        while i < len(s):
            repeat, c = -1, s[i]
            if c == "(":
                if self.flags & PERL_X and s.startswith("(?", i):
                    i = self.perl_flags(i)
                else:
                    self.num_cap += 1
                    self.op(Op.LEFT_PAREN).cap = self.num_cap
                    i += 1
            elif c == "|":
                self.vertical_bar()
                i += 1
            elif c == ")":
                self.right_paren()
                i += 1
            elif c == "^":
                self.op(Op.BEGIN_TEXT if self.flags & ONE_LINE else Op.BEGIN_LINE)
                i += 1
            elif c == "$":
                if self.flags & ONE_LINE:
                    self.op(Op.END_TEXT).flags |= WAS_DOLLAR
                else:
                    self.op(Op.END_LINE)
                i += 1
            elif c == ".":
                self.op(Op.ANY_CHAR if self.flags & DOT_NL else Op.ANY_CHAR_NOT_NL)
                i += 1
            elif c == "[":
                i = self.parse_class(i)
            elif c in "*+?":
                op = {"*": Op.STAR, "+": Op.PLUS, "?": Op.QUEST}[c]
                repeat, i = i, self.repeat(op, 0, 0, i, i + 1, last_repeat)
            elif c == "{":
                parsed = _parse_repeat(s, i)
                if parsed is None:
                    self.literal(ord("{"))  # not a repetition: a literal {
                    i += 1
                else:
                    lo, hi, after = parsed
                    if lo < 0 or lo > 1000 or hi > 1000 or (hi >= 0 and lo > hi):
                        raise GoRegexError("invalid repeat count", s[i:after])
                    repeat, i = i, self.repeat(Op.REPEAT, lo, hi, i, after, last_repeat)
            elif c == "\\":
                i = self.backslash(i)
            else:
                self.literal(ord(c))
                i += 1
            last_repeat = repeat
        self.concat()
        if self.swap_vertical_bar():
            self.stack.pop()
        self.alternate()
        if len(self.stack) != 1:
            raise GoRegexError("missing closing )", s)
        return self.stack[0]

    def backslash(self, i: int) -> int:
        s = self.whole
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if self.flags & PERL_X and nxt:
            simple = {"A": Op.BEGIN_TEXT, "b": Op.WORD_BOUNDARY, "B": Op.NO_WORD_BOUNDARY, "z": Op.END_TEXT}
            if nxt in simple:
                self.op(simple[nxt])
                return i + 2
            if nxt == "C":
                raise GoRegexError("invalid escape sequence", "\\C")
            if nxt == "Q":
                end = s.find("\\E", i + 2)
                text = s[i + 2 :] if end < 0 else s[i + 2 : end]
                for ch in text:
                    self.literal(ord(ch))
                return len(s) if end < 0 else end + 2
        if nxt in ("p", "P") and self.flags & UNICODE_GROUPS:
            unicode_class, after = self.unicode_class(i)
            self.push(unicode_class)
            return after
        if self.flags & PERL_X and nxt.lower() in PERL_GROUPS:
            re = Node(Op.CHAR_CLASS, self.flags)
            self.append_group(re.runes, PERL_GROUPS[nxt.lower()], negated=nxt.isupper())
            self.push(re)
            return i + 2
        r, after = self.escape(i)
        self.literal(r)
        return after

    def escape(self, i: int) -> tuple[int, int]:
        """The rune of the escape at s[i] (a backslash) and the offset after it."""
        s = self.whole
        if i + 1 >= len(s):
            raise GoRegexError("trailing backslash at end of expression", "")
        c, t = s[i + 1], i + 2
        if ord(c) < 0x80 and not c.isalnum():
            return ord(c), t  # escaped punctuation is itself
        if c in "1234567" and t < len(s) and s[t] in "01234567" or c == "0":
            # octal, up to three digits (a lone \1-\7 would be a backreference)
            r = ord(c) - 0x30
            for _ in range(2):
                if t >= len(s) or s[t] not in "01234567":
                    break
                r, t = r * 8 + ord(s[t]) - 0x30, t + 1
            return r, t
        if c == "x" and t < len(s):
            if s[t] == "{":
                end = s.find("}", t)
                digits = s[t + 1 : end] if end >= 0 else ""
                if digits and all(d in "0123456789abcdefABCDEF" for d in digits) and int(digits, 16) <= MAX_RUNE:
                    return int(digits, 16), end + 1
                bad = _bad_hex_brace_end(s, t)
                raise GoRegexError("invalid escape sequence", s[i:bad])
            if t + 1 < len(s) and all(d in "0123456789abcdefABCDEF" for d in s[t : t + 2]):
                return int(s[t : t + 2], 16), t + 2
            raise GoRegexError("invalid escape sequence", s[i : min(t + 2, len(s))])
        controls = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
        if c in controls:
            return controls[c], t
        raise GoRegexError("invalid escape sequence", s[i:t])

    def append_group(self, r: list[int], group: list[int], negated: bool) -> list[int]:
        if self.flags & FOLD_CASE:
            folded: list[int] = []
            for k in range(0, len(group), 2):
                append_folded_range(folded, group[k], group[k + 1])
            group = clean_class(folded)
        return append_negated_class(r, group) if negated else append_class(r, group)

    def unicode_class(self, i: int) -> tuple[Node, int]:
        """`\\pX`, `\\p{Name}`, `\\P{^Name}` at s[i]: the class and the offset after it."""
        s = self.whole
        negated = s[i + 1] == "P"
        if i + 2 >= len(s):
            raise GoRegexError("invalid character class range", s[i:])
        if s[i + 2] != "{":
            name, after = s[i + 2], i + 3
        else:
            end = s.find("}", i)
            if end < 0:
                raise GoRegexError("invalid character class range", s[i:])
            name, after = s[i + 3 : end], end + 1
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        re = Node(Op.CHAR_CLASS, self.flags)
        if name == "Any":
            re.runes = [] if negated else [0, MAX_RUNE]
        elif name in SINGLE_RUNE_TABLES:
            single = [SINGLE_RUNE_TABLES[name]] * 2
            re.runes = append_negated_class([], single) if negated else single
        else:
            # the tables' contents never decide a shape: keep which table it was
            fold = "/i" if self.flags & FOLD_CASE else ""
            re.opaque = frozenset({("^" if negated else "") + name + fold})
            re.opaque_nl = (name in TABLES_WITH_NEWLINE) != negated
        return re, after

    def parse_class(self, i: int) -> int:
        """A bracketed class at s[i]; pushes it and returns the offset after it."""
        s = self.whole
        t = i + 1
        re = Node(Op.CHAR_CLASS, self.flags)
        negated = t < len(s) and s[t] == "^"
        if negated:
            t += 1
        cls = re.runes
        first = True  # ] and - may come first
        while t >= len(s) or s[t] != "]" or first:
            first = False
            if s.startswith("[:", t) and (end := s.find(":]", t + 2)) >= 0:
                name = s[t + 2 : end]
                group = POSIX_GROUPS.get(name.removeprefix("^"))
                if group is None:
                    raise GoRegexError("invalid character class range", s[t : end + 2])
                self.append_group(cls, group, negated=name.startswith("^"))
                t = end + 2
                continue
            if s.startswith(("\\p", "\\P"), t) and self.flags & UNICODE_GROUPS:
                part, t = self.unicode_class(t)
                append_class(cls, part.runes)
                re.opaque, re.opaque_nl = re.opaque | part.opaque, re.opaque_nl or part.opaque_nl
                continue
            if self.flags & PERL_X and s.startswith("\\", t) and s[t + 1 : t + 2].lower() in PERL_GROUPS:
                self.append_group(cls, PERL_GROUPS[s[t + 1].lower()], negated=s[t + 1].isupper())
                t += 2
                continue
            start = t
            lo, t = self.class_char(t, i)
            hi = lo
            if t + 1 < len(s) and s[t] == "-" and s[t + 1] != "]":
                hi, t = self.class_char(t + 1, i)
                if hi < lo:
                    raise GoRegexError("invalid character class range", s[start:t])
            if self.flags & FOLD_CASE:
                append_folded_range(cls, lo, hi)
            else:
                append_range(cls, lo, hi)
        clean_class(cls)
        if negated:
            re.runes = append_negated_class([], cls)
            if re.opaque:
                re.opaque, re.opaque_nl = (
                    frozenset({"^(" + ",".join(sorted(re.opaque)) + repr(cls) + ")"}),
                    not (re.opaque_nl or in_class(0xA, cls)),
                )
        self.push(re)
        return t + 1

    def class_char(self, t: int, class_start: int) -> tuple[int, int]:
        s = self.whole
        if t >= len(s):
            raise GoRegexError("missing closing ]", s[class_start:])
        if s[t] == "\\":
            return self.escape(t)
        return ord(s[t]), t + 1

    def perl_flags(self, i: int) -> int:
        """`(?flags)`, `(?flags:`, `(?P<name>` or `(?<name>` at s[i]; returns the offset after it."""
        s = self.whole
        named = s.startswith("(?P<", i) and len(s) - i > 4 or s.startswith("(?<", i) and len(s) - i > 3
        if named:
            expr_start = i + (4 if s[i + 2] == "P" else 3)
            end = s.find(">", i)
            if end < 0:
                raise GoRegexError("invalid named capture", s[i:])
            name = s[expr_start:end]
            if not name or not all(ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name):
                raise GoRegexError("invalid named capture", s[i : end + 1])
            self.num_cap += 1
            re = self.op(Op.LEFT_PAREN)
            re.cap, re.name = self.num_cap, name
            return end + 1
        t, flags, sign, saw_flag = i + 2, self.flags, 1, False
        while t < len(s):
            c = s[t]
            t += 1
            if c in "imsU":
                bit = {"i": FOLD_CASE, "m": ONE_LINE, "s": DOT_NL, "U": NON_GREEDY}[c]
                # m clears OneLine; under a minus sign the set is inverted, as in Go
                flags = flags & ~bit if c == "m" else flags | bit
                saw_flag = True
            elif c == "-":
                if sign < 0:
                    break
                sign, flags, saw_flag = -1, ~flags, False
            elif c in ":)":
                if sign < 0:
                    if not saw_flag:
                        break
                    flags = ~flags
                if c == ":":
                    self.op(Op.LEFT_PAREN)  # carries the flags to restore at )
                self.flags = flags
                return t
            else:
                break
        raise GoRegexError("invalid or unsupported Perl syntax", s[i:t])


def _bad_hex_brace_end(s: str, t: int) -> int:
    """Where Go stops reading a bad `\\x{...}` (the first rune that is not a hex digit)."""
    k = t + 1
    value = 0
    while k < len(s):
        ch = s[k]
        k += 1
        if ch == "}":
            return k
        if ch not in "0123456789abcdefABCDEF":
            return k
        value = value * 16 + int(ch, 16)
        if value > MAX_RUNE:
            return k
    return k


def _parse_int(s: str, i: int) -> tuple[int, int] | None:
    if i >= len(s) or not s[i].isdigit() or not s[i].isascii():
        return None
    if i + 1 < len(s) and s[i] == "0" and "0" <= s[i + 1] <= "9":
        return None  # no leading zeros
    j = i
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    n = 0
    for ch in s[i:j]:
        if n >= 100_000_000:
            return -1, j
        n = n * 10 + ord(ch) - 0x30
    return n, j


def _parse_repeat(s: str, i: int) -> tuple[int, int, int] | None:
    """`{n}`, `{n,}` or `{n,m}` at s[i]: (min, max, offset after); max -1 is unbounded."""
    parsed = _parse_int(s, i + 1)
    if parsed is None:
        return None
    lo, j = parsed
    if j >= len(s):
        return None
    if s[j] != ",":
        hi = lo
    else:
        j += 1
        if j >= len(s):
            return None
        if s[j] == "}":
            hi = -1
        else:
            parsed = _parse_int(s, j)
            if parsed is None:
                return None
            hi, j = parsed
            if hi < 0:
                lo = -1
    if j >= len(s) or s[j] != "}":
        return None
    return lo, hi, j + 1


def _repeat_is_valid(re: Node, n: int) -> bool:
    if re.op == Op.REPEAT:
        m = re.max
        if m == 0:
            return True
        if m < 0:
            m = re.min
        if m > n:
            return False
        if m > 0:
            n //= m
    return all(_repeat_is_valid(sub, n) for sub in re.subs)


@functools.lru_cache(maxsize=1024)
def _parse_simplified(pattern: str) -> Node:
    return simplify(_Parser(pattern, PERL).parse())


def parse_perl(pattern: str) -> Node:
    """Go's `syntax.Parse(pattern, syntax.Perl).Simplify()`, a fresh copy the caller may change
    (raises GoRegexError where Go's parser does)."""
    return _copy(_parse_simplified(pattern), {})


def _copy(re: Node, seen: dict[int, Node]) -> Node:
    # a simplified x{3} holds one sub three times: the copy shares it the same way
    if id(re) not in seen:
        seen[id(re)] = Node(**{**re.__dict__, "runes": list(re.runes), "subs": [_copy(sub, seen) for sub in re.subs]})
    return seen[id(re)]
