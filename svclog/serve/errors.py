"""Errors -> HTTP responses, in one place (plain-text bodies, as the reference answers).

Errors raised in another Ray process arrive wrapped: a RayTaskError whose class also
derives from the original's and whose str() is the remote traceback. Every mapping here
first unwraps to the original exception, so a body never carries a traceback.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ray.exceptions import RayActorError, RayError, RayTaskError
from starlette.responses import PlainTextResponse, Response

from svclog.actors.calls import remote_cause
from svclog.model import InvalidTenantError, SvcError, TenantError
from svclog.scheduler import QuerierLostError
from svclog.storage.objstore import StoreError

RETRY_AFTER_S = "1"


class BodyTooLarge(SvcError):
    status = 413


class Unavailable(SvcError):
    """A component the request needs is down or restarting; the client may try again."""

    status = 503


class QueryTimeout(SvcError):
    status = 504


def as_svc_error(err: BaseException) -> SvcError | None:
    """The typed error a client should see for `err`, or None for an internal error (500)."""
    err = remote_cause(err)
    if isinstance(err, SvcError):
        return err
    if isinstance(err, StoreError):
        return Unavailable(f"object store unavailable: {err}")
    if isinstance(err, RayActorError):
        return Unavailable("a query component is restarting, please try again")
    if isinstance(err, QuerierLostError):
        return Unavailable(str(err))
    if isinstance(err, (TimeoutError, asyncio.TimeoutError)):
        return QueryTimeout("request timed out")
    if isinstance(err, RayError) and not isinstance(err, RayTaskError):
        # An object lost with its owner, a crashed worker, a dead node ...: the component
        # holding the answer is gone or restarting. Ray's own text names internals, not the cause.
        return Unavailable("a backend component is unavailable (restarting or overloaded), please try again")
    return None


@dataclass(frozen=True)
class ErrorReply:
    """An error carried across a Ray boundary as plain data."""

    status: int
    message: str

    @classmethod
    def of(cls, err: BaseException) -> ErrorReply:
        mapped = as_svc_error(err)
        if mapped is None:
            return cls(500, f"internal error: {remote_cause(err)}")
        return cls(int(getattr(mapped, "status", 400)), str(mapped))

    @classmethod
    def mapped(cls, err: BaseException) -> ErrorReply | None:
        """`of(err)` for errors with a typed mapping; None for internal errors (let them raise)."""
        return None if as_svc_error(err) is None else cls.of(err)

    def raise_(self) -> None:
        err = SvcError(self.message)
        err.status = self.status
        raise err


def error_response(err: Exception, *, line_end: str = "\n") -> Response:
    """The error as the reference's `http.Error` writes it (push, auth, rules, deletes, admin):
    the message and a line end."""
    mapped = as_svc_error(err)
    if mapped is not None:
        status = int(getattr(mapped, "status", 400))
        message = str(mapped)
    else:
        status, message = 500, f"internal error: {remote_cause(err)}"
    if status == 200:
        return Response(status_code=200)
    headers = {"Retry-After": RETRY_AFTER_S} if status == 503 else None  # the client may come back soon
    return PlainTextResponse(message + line_end, status_code=status, headers=headers)


# How the reference's frontend words a querier's error on the routes it forwards over gRPC.
RPC_ERROR_PREFIX = "rpc error: code = Code(400) desc = "


def query_error_response(err: Exception, *, forwarded: bool = False) -> Response:
    """An error on the query path (queries, labels, series, stats, volume, detected_*, patterns,
    tail): the reference's query handlers write the bare message, with no line end. A missing
    tenant is refused before them, by the auth middleware's `http.Error` (401, with a line end);
    a malformed one only by the handler reading it, so its message is bare like the others,
    and on the routes the frontend `forwarded` to a querier it carries the gRPC status wording."""
    cause = remote_cause(err)
    if isinstance(cause, TenantError) and int(getattr(cause, "status", 401)) == 401:
        return error_response(err, line_end="\n")
    if forwarded and isinstance(cause, InvalidTenantError):
        return error_response(InvalidTenantError(RPC_ERROR_PREFIX + str(cause)), line_end="")
    return error_response(err, line_end="")


async def unknown_route_response(request: object, exc: Exception) -> Response:
    """The framework's own HTTP errors, answered as the reference's router does instead of with
    FastAPI's JSON: Go's `404 page not found` text for a path no route serves, an empty 405 for
    a method the path does not take; other statuses keep their text, plain as well."""
    status = int(getattr(exc, "status_code", 500))
    if status == 404:
        return PlainTextResponse("404 page not found\n", status_code=404)
    if status == 405:
        return Response(status_code=405)  # no Allow header, as the reference's router
    detail = getattr(exc, "detail", "")
    return PlainTextResponse(f"{detail}\n" if detail else "", status_code=status, headers=getattr(exc, "headers", None))
