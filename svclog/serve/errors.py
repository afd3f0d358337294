"""User errors -> HTTP responses, in one place (plain-text bodies, as the reference answers)."""
from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import PlainTextResponse, Response

from svclog.model import SvcError


class BodyTooLarge(SvcError):
    status = 413


@dataclass(frozen=True)
class ErrorReply:
    """An SvcError carried across a Ray boundary as plain data."""

    status: int
    message: str

    @classmethod
    def of(cls, err: SvcError) -> "ErrorReply":
        return cls(int(getattr(err, "status", 400)), str(err))

    def raise_(self) -> None:
        err = SvcError(self.message)
        err.status = self.status
        raise err


def error_response(err: Exception) -> Response:
    if isinstance(err, SvcError):
        status = int(getattr(err, "status", 400))
        message = str(err)
    else:
        status, message = 500, f"internal error: {err}"
    if status == 200:
        return Response(status_code=200)
    return PlainTextResponse(message + "\n", status_code=status)
