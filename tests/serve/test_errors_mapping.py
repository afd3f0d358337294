"""Remote errors map to the user's message and a status, never to a Ray traceback."""

import ray.exceptions as rex

from svclog.model import LimitError, ParseError, TenantError, ValidationError
from svclog.scheduler import QuerierLostError
from svclog.serve.errors import ErrorReply, error_response, query_error_response, remote_cause
from svclog.storage.objstore import StoreError


def wrapped(err: Exception, function: str = "SchedulerActor.result") -> Exception:
    """What Ray raises in the caller: a RayTaskError that is also an instance of the cause's class."""
    try:
        raise err
    except Exception as raised:  # noqa: BLE001
        return rex.RayTaskError(
            function, "Traceback (most recent call last):\n  File ...\n", raised
        ).as_instanceof_cause()


def test_wrapped_parse_error_gives_only_the_message():
    err = wrapped(ParseError('ip: invalid pattern: "300.0.0.1"'))
    assert isinstance(err, ParseError) and "File" in str(err)  # why unwrapping is needed
    assert ErrorReply.of(err) == ErrorReply(400, 'ip: invalid pattern: "300.0.0.1"')


def test_nested_wrappers_unwrap_to_the_original():
    inner = wrapped(LimitError("too many series"), "QuerierActor.query")
    outer = wrapped(inner)
    assert isinstance(remote_cause(outer), LimitError)
    assert ErrorReply.of(outer) == ErrorReply(400, "too many series")


def test_store_error_is_503_with_the_reason():
    reply = ErrorReply.of(wrapped(StoreError("object store read 'a/b' failed: denied")))
    assert reply == ErrorReply(503, "object store unavailable: object store read 'a/b' failed: denied")


def test_actor_errors_and_lost_queriers_are_503():
    assert ErrorReply.of(rex.ActorUnavailableError("restarting", None)).status == 503
    assert ErrorReply.of(wrapped(QuerierLostError("sub-query lost with its querier 3 times"))).status == 503


def test_internal_errors_are_not_mapped():
    assert ErrorReply.mapped(wrapped(ZeroDivisionError("x"))) is None
    assert ErrorReply.mapped(wrapped(TimeoutError())).status == 504


def test_error_response_body_is_plain_message():
    response = error_response(wrapped(ParseError("parse error : unexpected")))
    assert response.status_code == 400 and response.body == b"parse error : unexpected\n"
    response = error_response(wrapped(StoreError("down")))
    assert response.status_code == 503 and response.body == b"object store unavailable: down\n"
    assert error_response(wrapped(KeyError("k"))).status_code == 500


def test_ray_errors_are_503_with_retry_after_and_no_ray_text():
    """A lost object or a crashed worker (e.g. a tail replay whose querier died) is a retryable 503."""
    for err in (
        rex.ObjectLostError("ab" * 14, "owner", "call site"),
        rex.OwnerDiedError("ab" * 14, "o", "c"),
        rex.WorkerCrashedError(),
        rex.RaySystemError("boom"),
    ):
        resp = error_response(err)
        assert resp.status_code == 503, (err, resp.body)
        assert resp.headers["retry-after"] == "1"
        assert b"Failed to retrieve" not in resp.body and b"object" not in resp.body.lower()
    assert error_response(rex.GetTimeoutError("slow")).status_code == 504
    assert error_response(ValueError("bug")).status_code == 500


def test_line_ends_follow_the_route_class():
    # checked against the reference: its query handlers write the bare message (Fprint), while
    # http.Error (push, auth, rules) ends it with a newline
    assert query_error_response(ParseError("parse error at line 1")).body == b"parse error at line 1"
    assert query_error_response(wrapped(ParseError("bad"))).body == b"bad"
    assert error_response(ValidationError("invalid labels")).body == b"invalid labels\n"
    response = query_error_response(TenantError("no org id"))  # refused by the auth layer first
    assert (response.status_code, response.body) == (401, b"no org id\n")
