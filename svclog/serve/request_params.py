"""Request parameters from the URL and, for form POSTs, the body (first value wins, like Go's Form.Get)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

FORM_TYPE = "application/x-www-form-urlencoded"


class Params:
    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs

    def get(self, name: str, default: str | None = None) -> str | None:
        for key, value in self.pairs:
            if key == name:
                return value
        return default

    def getlist(self, name: str) -> list[str]:
        return [value for key, value in self.pairs if key == name]

    def __contains__(self, name: str) -> bool:
        return any(key == name for key, _ in self.pairs)


async def read_params(request: Request) -> Params:
    pairs = list(request.query_params.multi_items())
    content_type = request.headers.get("content-type", "")
    if request.method in ("POST", "PUT") and content_type.split(";")[0].strip().lower() == FORM_TYPE:
        body = (await request.body()).decode("utf-8", errors="replace")
        pairs.extend(parse_qsl(body, keep_blank_values=True))
    return Params(pairs)
