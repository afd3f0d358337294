import pickle
import subprocess
import sys

from svclog.model import Labels


def test_labels_unpickled_in_another_process_hash_like_local_ones():
    # string hashing is randomised per process; a pickled hash would break dict lookups
    data = pickle.dumps({Labels({"app": "api", "env": "prod"}.items()): 1})
    code = (
        "import pickle,sys; from svclog.model import Labels; d = pickle.loads(sys.stdin.buffer.read()); "
        "print(d[Labels({'app': 'api', 'env': 'prod'}.items())])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=data,
        capture_output=True,
        timeout=60,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    assert out.stdout.strip() == b"1", out.stderr


def test_regex_matchers_are_go_re2_anchored_and_dot_matches_newline():
    import pytest

    from svclog.model import Matcher, MatchType, ParseError

    assert Matcher("a", MatchType.RE, "(?i)API").matches("api")
    assert Matcher("a", MatchType.RE, r"\pL+").matches("Grüße")
    assert not Matcher("a", MatchType.RE, r"\d").matches("\u0663")  # Go's \d is ASCII
    assert Matcher("a", MatchType.RE, "a.b").matches("a\nb")
    assert not Matcher("a", MatchType.RE, "b").matches("abc")  # anchored both ends
    assert Matcher("a", MatchType.NRE, "b|c").matches("")
    for bad, message in [
        ("(a", "missing closing ): `^(?s:(a)$`"),
        ("(?<=a)", "invalid or unsupported Perl syntax"),
        ("\\C", "invalid escape sequence"),
        ("x{1001}", "invalid repeat count"),
    ]:
        with pytest.raises(ParseError, match="error parsing regexp: ") as info:
            Matcher("a", MatchType.RE, bad)
        assert message in str(info.value)
    m = pickle.loads(pickle.dumps(Matcher("a", MatchType.RE, "(?i)x")))
    assert m == Matcher("a", MatchType.RE, "(?i)x") and m.matches("X")
