"""Tests for the LogQL line_format/label_format template engine (Go text/template + Loki functions)."""

from __future__ import annotations

import pytest

from svclog.logql.template import Template, TemplateError, TemplateExecError

TS = 1793492984284325225  # 2026-11-01T00:29:44.284325225Z
CHECKOUT = {
    "app": "checkout",
    "method": "GET",
    "msg": "payment authorized",
    "path": "/api/v1/users/4003",
    "status": "304",
    "user": "u-4242",
    "items": "5",
    "amount": "104.64",
}


def render(src: str, labels: dict[str, str] | None = None, line: str = "the line", ts: int = TS) -> str:
    return Template.parse(src).render(CHECKOUT if labels is None else labels, line, ts)


# -- usages recorded from the reference (conformance line_format / label_format) --------------
@pytest.mark.parametrize(
    ("src", "labels", "expected"),
    [
        (
            '{{ if hasPrefix "/api/v1/orders" .path }}ORDER{{ else }}OTHER{{ end }} {{ contains "declined" .msg }}',
            {"path": "/api/v1/orders", "msg": "checkout completed"},
            "ORDER false",
        ),
        (
            '{{ if hasPrefix "/api/v1/orders" .path }}ORDER{{ else }}OTHER{{ end }} {{ contains "declined" .msg }}',
            {"msg": "dry run checkout"},
            "OTHER false",
        ),
        (
            "{{.error_code}}: {{.error_message}} ({{.trace_id}} {{.customer_id}})",
            {
                "error_code": "E_TIMEOUT",
                "error_message": "connection reset by peer",
                "trace_id": "c38",
                "customer_id": "u-2077",
            },
            "E_TIMEOUT: connection reset by peer (c38 u-2077)",
        ),
        ("{{.job}} took {{.rt}}", {"job": "cleanup", "rt": "233s"}, "cleanup took 233s"),
        ('{{ ToLower .method }} {{ title .msg }} [{{ trim "  x  " }}]', CHECKOUT, "get Payment Authorized [x]"),
        ("{{ div .items 2 }} {{ mul .items 10 }} {{ add .items 1 }} {{ sub .items 1 }}", {"items": "9"}, "4 90 10 8"),
        ("{{ div .items 2 }} {{ mul .items 10 }} {{ add .items 1 }} {{ sub .items 1 }}", {"items": "7"}, "3 70 8 6"),
        ("{{.status}}", {"status": "503"}, "503"),
        ('{{ __timestamp__ | date "2006-01-02 15:04:05.000" }}', {}, "2026-11-01 00:29:44.284"),
        ("{{ ToUpper .msg }}", CHECKOUT, "PAYMENT AUTHORIZED"),
        (
            '{{ .user | trunc 4 }} {{ substr 0 3 .method }} {{ .path | replace "/api/v1" "" }}',
            {"user": "u-2077", "method": "GET", "path": "/api/v1/orders/2110"},
            "u-20 GET /orders/2110",
        ),
        (
            '{{ .user | trunc 4 }} {{ substr 0 3 .method }} {{ .path | replace "/api/v1" "" }}',
            {"user": "u-1042"},
            "u-10  ",
        ),
        ("{{.city}}: {{.msg}}", {"city": "München", "msg": "Bestellung bestätigt"}, "München: Bestellung bestätigt"),
        ("{{ substr 0 1 .status }}xx", {"status": "503"}, "5xx"),
        ("{{ substr 0 1 .status }}xx", {}, "xx"),
        ("x-{{.namespace}}", {"namespace": "batch"}, "x-batch"),
        ("{{ ToUpper .env }}", {"env": "dev"}, "DEV"),
        ("{{.method}}-{{.status}}", {"method": "", "status": ""}, "-"),
        ("{{.x}}!", {"x": "cron"}, "cron!"),
        ("{{__line__}}", {}, "the line"),
    ],
)
def test_conformance_usages(src: str, labels: dict[str, str], expected: str) -> None:
    assert render(src, labels) == expected


def test_timestamp_unix_epoch_and_line() -> None:
    line = "cron: job=cleanup exit_code=0 runtime=280s"
    assert render("{{ __timestamp__ | unixEpoch }} {{ __line__ }}", {}, line) == f"1793492984 {line}"


# -- syntax --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("plain text", "plain text"),
        ("{{ .method }}/{{.status}}", "GET/304"),
        ("[{{ .missing }}]", "[]"),
        ('{{ .method | ToLower | printf "%s!" }}', "get!"),
        ('{{ printf "%s-%s" (ToLower .method) (.status) }}', "get-304"),
        ('{{ "dq\\t\\x41\\u00e9" }}', "dq\tAé"),
        ("{{ `raw \\n` }}", "raw \\n"),
        ("{{ 42 }} {{ -7 }} {{ 3.5 }} {{ 1e3 }} {{ 0x1F }} {{ 1_000 }} {{ 'a' }}", "42 -7 3.5 1000 31 1000 97"),
        ("{{ true }} {{ false }}", "true false"),
        ("a  {{- .method -}}  b", "aGETb"),
        ("a {{- /* note */ -}} b", "ab"),
        ("a{{/* note */}}b", "ab"),
        ("x\n  {{- .method }}\n", "xGET\n"),
        ("{{ if .missing }}yes{{ else if .method }}elif{{ else }}no{{ end }}", "elif"),
        ("{{ if .missing }}a{{ else if .nope }}b{{ else }}c{{ end }}", "c"),
        ('{{ if eq .status "200" "304" }}ok{{ end }}', "ok"),
        ("{{ with .method }}[{{ . }}]{{ end }}", "[GET]"),
        ("{{ with .missing }}[{{ . }}]{{ else }}none{{ end }}", "none"),
        ("{{ with .missing }}a{{ else with .user }}{{ . }}{{ end }}", "u-4242"),
        ("{{ $m := .method }}{{ $m }}-{{ $m | len }}", "GET-3"),
        ('{{ $x := "a" }}{{ if true }}{{ $x = "b" }}{{ end }}{{ $x }}', "b"),
        ("{{ if true }}{{ $y := 1 }}{{ $y }}{{ end }}", "1"),
        ("{{ with $u := .user }}{{ $u }}{{ $.method }}{{ end }}", "u-4242GET"),
        ('{{ define "t" }}<{{ . }}>{{ end }}{{ template "t" .method }}{{ template "t" "z" }}', "<GET><z>"),
        ('{{ block "b" .status }}({{ . }}){{ end }}', "(304)"),
        ('{{ (fromJson `{"a":{"b":"c"}}`).a.b }}', "c"),
    ],
)
def test_syntax(src: str, expected: str) -> None:
    assert render(src) == expected


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{{ range $i, $v := fromJson "[\\"a\\",\\"b\\"]" }}{{ $i }}={{ $v }};{{ end }}', "0=a;1=b;"),
        ('{{ range fromJson "[1,2.5]" }}{{ . }} {{ end }}', "1 2.5 "),
        ('{{ range $k, $v := fromJson "{\\"b\\":1,\\"a\\":2}" }}{{ $k }}{{ $v }}{{ end }}', "a2b1"),
        ('{{ range fromJson "[]" }}x{{ else }}empty{{ end }}', "empty"),
        ("{{ range .missing_json | fromJson }}x{{ else }}nil{{ end }}", "nil"),
        ("{{ range 3 }}{{ . }}{{ end }}", "012"),
        (
            (
                '{{ range $v := fromJson "[1,2,3,4]" }}{{ if eq $v 2.0 }}{{ continue }}{{ end }}'
                "{{ if eq $v 4.0 }}{{ break }}{{ end }}{{ $v }}{{ end }}"
            ),
            "13",
        ),
        ("{{ range $q := fromJson .queries }}[{{ $q.query }}]{{ end }}", "[up][rate(x[1m])]"),
        ("{{ range $k, $v := . }}{{ $k }};{{ end }}", "method;queries;"),
    ],
)
def test_range(src: str, expected: str) -> None:
    labels = {"method": "GET", "queries": '[{"query":"up"},{"query":"rate(x[1m])"}]'}
    assert render(src, labels) == expected


def test_range_scopes_loop_variables() -> None:
    src = '{{ $x := "out" }}{{ range $x := fromJson "[1]" }}{{ $x }}{{ end }}{{ $x }}'
    assert render(src) == "1out"


def test_missing_json_key_prints_no_value() -> None:
    assert render('{{ (fromJson `{"a":null}`).a }}|{{ (fromJson `{}`).b }}') == "<no value>|<no value>"


def test_print_composites() -> None:
    assert render('{{ fromJson `{"b":[1,"x",true],"a":1.5}` }}') == "map[a:1.5 b:[1 x true]]"


# -- functions: strings ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{{ Replace "oink oink oink" "k" "ky" 2 }}', "oinky oinky oink"),
        ('{{ Replace "oink oink" "oink" "moo" -1 }}', "moo moo"),
        ('{{ Trim "xxhixx" "x" }}|{{ TrimLeft "xxhi" "x" }}|{{ TrimRight "hixx" "x" }}', "hi|hi|hi"),
        ('{{ TrimPrefix "prefix-a" "prefix-" }}|{{ TrimSuffix "a.go" ".go" }}|{{ TrimSpace "\\t a \\n" }}', "a|a|a"),
        ('{{ upper "straße" }}|{{ lower "ÄBC" }}', "STRAßE|äbc"),
        ('{{ title "hello wORLD-foo_bar o\'neil" }}', "Hello WORLD-Foo_bar O'Neil"),
        ('{{ trimAll "$" "$5.00$" }}|{{ trimPrefix "-" "-hello" }}|{{ trimSuffix "-" "hello-" }}', "5.00|hello|hello"),
        ('{{ hasSuffix "lo" "hello" }} {{ hasPrefix "x" "hello" }} {{ contains "ll" "hello" }}', "true false true"),
        ('{{ repeat 3 "ab" }}', "ababab"),
        ('{{ replace "hello" "world" "hello world" }}', "world world"),
        (
            '{{ trunc 5 "hello world" }}|{{ trunc -5 "hello world" }}|{{ trunc 50 "hi" }}|{{ trunc 2 "日本語" }}',
            "hello|world|hi|日本",
        ),
        (
            '{{ substr 6 11 "hello world" }}|{{ substr -1 2 "hello" }}|{{ substr 2 -1 "hello" }}|{{ substr 4 2 "hello" }}',
            "world|he|llo|",
        ),
        ('{{ substr 1 3 "日本語です" }}|{{ substr 3 99 "hello" }}', "本語|lo"),
        ('{{ indent 2 "a\\nb" }}|{{ nindent 2 "a" }}', "  a\n  b|\n  a"),
        (
            '[{{ alignLeft 5 "hi" }}][{{ alignLeft 5 "hello world" }}][{{ alignRight 5 "hi" }}][{{ alignRight 5 "hello world" }}]',
            "[hi   ][hello][   hi][world]",
        ),
        ('{{ .nope | default "-" }} {{ default "-" .method }} {{ default 7 0 }} {{ default "d" "0" }}', "- GET 7 0"),
    ],
)
def test_string_functions(src: str, expected: str) -> None:
    assert render(src) == expected


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{{ b64enc "hello" }}|{{ b64dec "aGVsbG8=" }}', "aGVsbG8=|hello"),
        ('{{ b64dec "@@" }}', "illegal base64 data at input byte 0"),
        ('{{ urlencode "a b&c=d/é" }}', "a+b%26c%3Dd%2F%C3%A9"),
        ('{{ urldecode "a+b%26c%3Dd%2F%C3%A9" }}', "a b&c=d/é"),
        ('{{ fromJson "{\\"foo\\": 55}" }}', "map[foo:55]"),
        ('{{ fromJson "not json" }}', "<no value>"),
    ],
)
def test_encoding_functions(src: str, expected: str) -> None:
    assert render(src) == expected


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{{ regexReplaceAll "(a*)bc" "xaabcy" "${1}W" }}', "xaaWy"),
        ('{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "$1W" }}', "---"),  # $1W is the (missing) group "1W"
        ('{{ regexReplaceAll "(?P<k>\\\\w+)=(?P<v>\\\\w+)" "a=1 b=2" "$v:$k" }}', "1:a 2:b"),
        ('{{ regexReplaceAll "x*" "abc" "-" }}', "-a-b-c-"),
        ('{{ regexReplaceAll "a|" "baaac" "-" }}', "-b---c-"),
        ('{{ regexReplaceAllLiteral "(ts=)" "ts=1 ts=2" "${1}x" }}', "${1}x1 ${1}x2"),
        ('{{ regexReplaceAll "\\\\d+$" "a1\\nb22" "N" }}', "a1\nbN"),
        ('{{ regexReplaceAll "[[:digit:]]+" "a12b3" "#" }}', "a#b#"),
        ('{{ count "a|b" "abab" }} {{ count "o" "foo" }} {{ __line__ | count "XYZ" }}', "4 2 0"),
        ('{{ count "" "abc" }}', "4"),
    ],
)
def test_regex_functions(src: str, expected: str) -> None:
    assert render(src) == expected


def test_regex_rejects_backreference() -> None:
    with pytest.raises(TemplateExecError, match="error calling regexReplaceAll"):
        render('{{ regexReplaceAll "(a)\\\\1" "aa" "x" }}')


# -- functions: math and conversions ------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("{{ add 3 2 5 }} {{ sub 5 2 }} {{ mul 5 2 3 }} {{ div 10 3 }} {{ mod 10 3 }}", "10 3 30 3 1"),
        ("{{ div -7 2 }} {{ mod -7 2 }}", "-3 -1"),  # Go truncates toward zero
        ('{{ add "4" "x" "2.0" }}', "6"),  # unparsable strings count as 0, "2.0" as 2
        ("{{ add .amount 1 }}", "1"),  # "104.64" is not an integer
        (
            "{{ addf 3.5 2 5 }} {{ addf 0.1 0.2 }} {{ subf 5.5 2 1.5 }} {{ mulf 5.5 2 2.5 }} {{ divf 10 2 4 }}",
            "10.5 0.3 2 27.5 1.25",
        ),
        ("{{ divf 10 3 }} {{ mulf 1000 1000 }} {{ mulf .amount 2 }}", "3.3333333333333335 1e+06 209.28"),
        ("{{ max 1 5 3 }} {{ min 4 2 9 }} {{ maxf 1 2.5 2 }} {{ minf 1.5 2.5 }}", "5 2 2.5 1.5"),
        ('{{ ceil 123.001 }} {{ floor 123.9999 }} {{ ceil "1.2" }}', "124 123 2"),
        ("{{ round 123.555555 3 }} {{ round 123.88571428571 5 .2 }} {{ round 2.5 0 }}", "123.556 123.88572 3"),
        ('{{ "3.5" | float64 }} {{ "3" | int }} {{ int "0x1F" }} {{ int 4.9 }} {{ float64 "x" }}', "3.5 3 31 4 0"),
        ('{{ "42KB" | bytes }} {{ bytes "1.5 KiB" }} {{ bytes "2 MB" }}', "42000 1536 2e+06"),
        ('{{ "1h30m" | duration }} {{ duration_seconds "250ms" }} {{ duration "-1.5s" }}', "5400 0.25 -1.5"),
        ("{{ trunc (int .items) .msg }}", "payme"),
    ],
)
def test_math_functions(src: str, expected: str) -> None:
    assert render(src) == expected


# -- functions: time ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("{{ __timestamp__ }}", "2026-11-01 00:29:44.284325225 +0000 UTC"),
        ('{{ __timestamp__ | date "2006-01-02T15:04:05.00Z07:00" }}', "2026-11-01T00:29:44.28Z"),
        ('{{ __timestamp__ | date "Mon Jan _2 3:04:05.999 PM MST 06 002" }}', "Sun Nov  1 12:29:44.284 AM UTC 26 305"),
        (
            '{{ __timestamp__ | date "January 02, 2006 15h04 .000000 -07:00" }}',
            "November 01, 2026 00h29 .284325 +00:00",
        ),
        (
            "{{ __timestamp__ | unixEpochMillis }} {{ __timestamp__ | unixEpochNanos }}",
            "1793492984284 1793492984284325225",
        ),
        ('{{ date "2006-01-02" (unixToTime "1679577215") }}', "2023-03-23"),
        (
            '{{ unixToTime "19373" | unixEpoch }} {{ unixToTime "1673798889902" | unixEpochMillis }}',
            "1673827200 1673798889902",
        ),
        ('{{ toDate "2006-01-02" "2021-11-02" }}', "2021-11-02 00:00:00 +0000 UTC"),
        ('{{ toDate "2006-01-02" "garbage" }}', "0001-01-01 00:00:00 +0000 UTC"),
        ('{{ toDateInZone "2006-01-02 15:04" "Europe/Berlin" "2021-07-02 10:00" }}', "2021-07-02 10:00:00 +0200 CEST"),
        ('{{ toDateInZone "2006-01-02" "UTC" "2021-11-02" | unixEpoch }}', "1635811200"),
        ('{{ toDate "2006-01-02T15:04:05Z07:00" "2021-11-02T10:00:00+02:00" | unixEpoch }}', "1635840000"),
        (
            '{{ toDate "02/Jan/2006:15:04:05 -0700" "10/Oct/2000:13:55:36 -0700" | date "2006-01-02 15:04" }}',
            "2000-10-10 20:55",
        ),
        ('{{ date "2006" 0 }}', "1970"),
        ('{{ "2026-11-01T01:59:57.842Z" | toDate "2006-01-02T15:04:05Z07:00" }}', "2026-11-01 01:59:57.842 +0000 UTC"),
        ('{{ "2026-11-01T01:59:57.842Z" | toDate "2006-01-02T15:04:05.999Z" | unixEpochMillis }}', "1793498397842"),
    ],
)
def test_time_functions(src: str, expected: str) -> None:
    assert render(src) == expected


def test_now_is_current() -> None:
    year = int(render('{{ now | date "2006" }}'))
    assert year >= 2024


# -- builtins -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ('{{ and 1 0 "x" }}|{{ and 1 "x" }}|{{ or 0 "" "z" }}|{{ or 0 "" }}', "0|x|z|"),
        ('{{ .method | and true }}|{{ .missing | or "dflt" }}', "GET|dflt"),
        ("{{ and false .missing.nofield }}", "false"),  # short-circuit: the second operand is never evaluated
        ('{{ not .missing }} {{ not "x" }}', "true false"),
        ('{{ eq .method "GET" }} {{ ne .method "GET" }} {{ eq 1 1 }} {{ eq nil nil }}', "true false true true"),
        ('{{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1.5 2.5 }}', "true true true false"),
        ('{{ len .msg }} {{ len "é" }} {{ len (fromJson "[1,2]") }}', "18 2 2"),
        ('{{ index . "method" }}|{{ index . "nope" }}|{{ index (fromJson "[\\"a\\",\\"b\\"]") 1 }}', "GET||b"),
        ('{{ slice "hello" 1 3 }}|{{ slice "hello" 2 }}', "el|llo"),
        ('{{ print "a" 1 2 "b" }}|{{ println "x" 1 }}', "a1 2b|x 1\n"),
        (
            '{{ html "<a href=\'x\'>&" }}|{{ js "it\'s <b>" }}|{{ urlquery "a b" }}',
            "&lt;a href=&#39;x&#39;&gt;&amp;|it\\'s \\u003Cb\\u003E|a+b",
        ),
    ],
)
def test_builtins(src: str, expected: str) -> None:
    assert render(src) == expected


# -- printf -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fmt", "args", "expected"),
    [
        ("%s-%d", '"a" 3', "a-3"),
        ("[%5s][%-5s][%.2s][%5.1s]", '"ab" "ab" "abc" "xyz"', "[   ab][ab   ][ab][    x]"),
        ("%v %v %v %v", '"s" 1 2.5 true', "s 1 2.5 true"),
        ("%d|%5d|%-5d|%05d|%+d|% d|%.3d", "7 7 7 7 7 7 7", "7|    7|7    |00007|+7| 7|007"),
        ("%x %X %o %O %b %#x %#o", "255 255 8 8 5 255 8", "ff FF 10 0o10 101 0xff 010"),
        ("%c %q %U %#U", "65 65 233 233", "A 'A' U+00E9 U+00E9 'é'"),
        (
            "%f %.2f %8.3f %-8.1f| %e %E %g %G",
            "3.14159 3.14159 3.14159 2.5 1234.5678 1234.5678 0.00001 1e21",
            "3.141590 3.14    3.142 2.5     | 1.234568e+03 1.234568E+03 1e-05 1E+21",
        ),
        ("%v %v %v %v", "100000.0 1000000.0 0.0001 123456789.0", "100000 1e+06 0.0001 1.23456789e+08"),
        ("%.3g %g %+.1f %06.2f", "1234.5678 100.0 2.25 -1.5", "1.23e+03 100 +2.2 -01.50"),
        ("%q %x % x %X", '"a\\"b\\n" "hi" "hi" "é"', '"a\\"b\\n" 6869 68 69 C3A9'),
        ("%t %v %T %T %T %T", 'true nil 1 1.5 "s" (add 1 2)', "true <nil> int float64 string int64"),
        ("%d", '"200"', "%!d(string=200)"),
        ("%s", "3", "%!s(int=3)"),
        ("%d %s", "", "%!d(MISSING) %!s(MISSING)"),
        ("%d", '1 "x" 2.5', "1%!(EXTRA string=x, float64=2.5)"),
        ("100%%", "", "100%"),
        ("%[2]s %[1]s", '"a" "b"', "b a"),
        ("%*d|%-*d", "4 7 3 1", "   7|1  "),
        ("%v|%s", "nil nil", "<nil>|%!s(<nil>)"),
        ("%z", "1", "%!z(int=1)"),
        ("%.2f|%.1f", ".amount (.amount | float64)", "%!f(string=104.64)|104.6"),
    ],
)
def test_printf(fmt: str, args: str, expected: str) -> None:
    assert render(f'{{{{ printf "{fmt}" {args} }}}}') == expected


def test_printf_stringer_and_composites() -> None:
    assert render('{{ printf "%s" __timestamp__ }}') == "2026-11-01 00:29:44.284325225 +0000 UTC"
    assert render('{{ printf "%v|%d" (fromJson "[1,2]") (fromJson "[1]") }}') == "[1 2]|[%!d(float64=1)]"


def test_printf_float_specials() -> None:
    assert render('{{ printf "%v %v" (float64 "inf") (float64 "NaN") }}') == "+Inf NaN"


# -- errors -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("{{ foo }}", 'function "foo" not defined'),
        ("{{ .a ", "unclosed action"),
        ("{{ end }}", "unexpected {{end}}"),
        ("{{ else }}", "unexpected {{else}}"),
        ("{{ if .a }}x", "unexpected EOF"),
        ("{{ $x }}", 'undefined variable "$x"'),
        ("{{ if true }}{{ $x := 1 }}{{ end }}{{ $x }}", 'undefined variable "$x"'),
        ("{{}}", "missing value for command"),
        ("{{ if }}x{{ end }}", "missing value for if"),
        ('{{ .a | "x" }}', "non executable command in pipeline stage 2"),
        ('{{ "\\q" }}', "bad syntax"),
        ('{{ "abc }}', "unterminated quoted string"),
        ("{{/* x", "unclosed comment"),
        ("{{ /* x */ }}", "unrecognized character"),
        ("{{ break }}", "{{break}} outside {{range}}"),
        ("{{ (.a }}", "unclosed left paren"),
        ("{{ .a) }}", "unexpected right paren"),
        ("{{ 1x }}", "bad number syntax"),
        ("{{ 99999999999999999999 }}", "integer overflow"),
        ("{{ .a.b.1 }}", "unexpected"),
        ("{{ $x, $y := .a }}", "too many declarations"),
    ],
)
def test_parse_errors(src: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message.replace("$", r"\$").replace("{", r"\{").replace("(", r"\(")):
        Template.parse(src)


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("{{ div 1 0 }}", "error calling div: runtime error: integer divide by zero"),
        ("{{ divf 1 0 }}", "error calling divf"),
        ("{{ upper 3 }}", "expected string; found 3"),
        ("{{ trunc .items .msg }}", "wrong type for value; expected int; got string"),
        ("{{ trunc (add 1 2) .msg }}", "expected int; got int64"),
        ("{{ eq .status 304 }}", "incompatible types for comparison"),
        ("{{ lt true false }}", "invalid type for comparison"),
        ("{{ .method.sub }}", "can't evaluate field sub in type string"),
        ("{{ ToUpper }}", "wrong number of args for ToUpper: want 1 got 0"),
        ("{{ .method | ToUpper .msg }}", "wrong number of args for ToUpper: want 1 got 2"),
        ("{{ and }}", "want at least 1 got 0"),
        ("{{ 3 4 }}", "can't give argument to non-function 3"),
        ("{{ nil }}", "nil is not a command"),
        ("{{ range .method }}{{ end }}", "range can't iterate over GET"),
        ('{{ index (fromJson "[1]") 3 }}', "index out of range: 3"),
        ('{{ urldecode "%zz" }}', 'invalid URL escape "%zz"'),
        ('{{ unixToTime "123" }}', "unable to parse time"),
        ('{{ duration "5x" }}', 'unknown unit "x"'),
        ('{{ bytes "12 parsecs" }}', "unhandled size name"),
        ('{{ regexReplaceAll "(" .msg "x" }}', "error parsing regexp"),
        ('{{ template "nope" }}', 'no such template "nope"'),
        ('{{ repeat -1 "x" }}', "negative Repeat count"),
        ("{{ .msg | .method }}", "method is not a method but has arguments"),
    ],
)
def test_exec_errors(src: str, message: str) -> None:
    t = Template.parse(src)
    with pytest.raises(TemplateExecError) as info:
        t.render(CHECKOUT, "line", TS)
    assert message in str(info.value)


def test_exec_error_is_not_raised_for_untaken_branch() -> None:
    assert render("{{ if false }}{{ div 1 0 }}{{ end }}ok") == "ok"


def test_exec_error_message_has_position() -> None:
    with pytest.raises(TemplateExecError, match=r'^template: line:1:5: executing "line" at <div 1 0>'):
        render("ab{{ div 1 0 }}")


def test_error_types() -> None:
    assert issubclass(TemplateError, ValueError)
    assert not issubclass(TemplateExecError, ValueError)


# -- API ---------------------------------------------------------------------------------------------
def test_compile_once_render_many() -> None:
    t = Template.parse("{{ .a | upper }}-{{ __line__ }}")
    assert [t.render({"a": v}, f"l{v}", 0) for v in "xyz"] == ["X-lx", "Y-ly", "Z-lz"]


def test_simple_template_fast_path_matches_general_path() -> None:
    simple = Template.parse("a={{ .a }} b={{.b}}")
    general = Template.parse("a={{ .a | print }} b={{ print .b }}")
    labels = {"a": "1"}
    assert simple.render(labels, "", 0) == general.render(labels, "", 0) == "a=1 b="


def test_referenced_labels() -> None:
    t = Template.parse('{{ if .a }}{{ .b.c | printf "%s" }}{{ end }}{{ with $.d }}{{ .e }}{{ end }}{{ $x := 1 }}')
    assert t.referenced_labels() == frozenset({"a", "b", "d", "e"})
    assert not t.needs_all_labels()
    assert Template.parse('{{ index . "x" }}').needs_all_labels()


def test_uses_line() -> None:
    assert Template.parse("{{ __line__ | lower }}").uses_line()
    assert not Template.parse("{{ .line }}").uses_line()
    assert Template.parse('{{ define "x" }}{{ __line__ }}{{ end }}{{ template "x" }}').uses_line()


def test_labels_mapping_is_not_mutated() -> None:
    labels = {"a": "1"}
    Template.parse('{{ $x := "2" }}{{ index . "zz" }}{{ .b }}').render(labels, "", 0)
    assert labels == {"a": "1"}
