"""Status and administration endpoints: /ready, /services, /log_level, /flush, ingester shutdown, ring pages.

The work is done by an `AdminBackend` (the Ray one is svclog/serve/admin_backend.py, the
in-process one tests/fuzz/harness.py's InProcessAdmin); the paths are rows of svclog/serve/routes.py.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from svclog.log_level import InvalidLogLevel, apply_level, current_level
from svclog.model import SvcError, ValidationError
from svclog.ring.status_page import RingView, member_rows, render_ring_page, rows_as_json
from svclog.serve.errors import error_response
from svclog.serve.request_params import read_params
from svclog.services import State, readiness, render_services

# path -> (ring kind the backend understands, page title)
RING_PAGES = {
    "/ring": ("ingester", "Ingester ring"),
    "/distributor/ring": ("ingester", "Ingester ring (distributor view)"),
    "/indexgateway/ring": ("index-gateway", "Index gateway ring"),
    "/ruler/ring": ("ruler", "Ruler ring"),
    "/compactor/ring": ("compactor", "Compactor ring"),
}


class AdminBackend(Protocol):
    async def services(self) -> list[tuple[str, State]]: ...
    async def set_log_level(self, level: str) -> dict[str, str]:
        """Apply on every replica and component host (best effort): component -> "ok" or the error."""
        ...

    async def flush(self) -> dict[str, int]:
        """Flush every ingester; an unavailable one raises an SvcError naming it (503)."""
        ...

    async def prepare_shutdown(self, action: str, ingester: str | None) -> dict[str, bool]:
        """action "get" | "set" | "unset" on one ingester (or all): ingester -> set afterwards."""
        ...

    async def shutdown(
        self, ingester: str | None, flush: bool, delete_ring_tokens: bool, terminate: bool
    ) -> dict[str, dict]: ...
    async def ring(self, kind: str, now_ns: int) -> RingView: ...
    async def forget(self, kind: str, member_id: str) -> bool: ...
    def now_ns(self) -> int: ...


def parse_bool(name: str, text: str | None, default: bool) -> bool:
    """Go's strconv.ParseBool spellings; empty or absent -> default."""
    if text is None or text == "":
        return default
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValidationError(f"invalid value {text!r} for {name}: expected true or false")


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data, separators=(",", ":")).encode(), status_code=status, media_type="application/json")


def _failure(err: Exception) -> Response:
    cause = getattr(err, "cause", None)  # a Ray task error carries the raised error as `cause`
    return error_response(cause if isinstance(cause, SvcError) else err)


class AdminHandlers:
    """The status and administration endpoints over an AdminBackend."""

    def __init__(self, backend: AdminBackend):
        self.backend = backend

    async def ready(self, request: Request) -> Response:
        try:
            ok, body = readiness(await self.backend.services())
        except Exception as err:  # noqa: BLE001 - a probe failure means not ready, never a 500
            ok, body = False, f"not ready: {err}\n"
        return PlainTextResponse(body, status_code=200 if ok else 503)

    async def services(self, request: Request) -> Response:
        try:
            return PlainTextResponse(render_services(await self.backend.services()))
        except Exception as err:  # noqa: BLE001
            return _failure(err)

    async def log_level(self, request: Request) -> Response:
        if request.method == "GET":
            level = current_level()
            return _json({"status": "success", "log_level": level, "message": f"current log level is {level}"})
        try:
            params = await read_params(request)
            level = apply_level(params.get("log_level") or "")
        except InvalidLogLevel as err:
            return PlainTextResponse(f"{err}\n", status_code=400)
        try:
            components = await self.backend.set_log_level(level)
        except Exception as err:  # noqa: BLE001 - propagation is best effort; this process changed
            components = {"*": f"not propagated: {err}"}
        return _json(
            {"status": "success", "log_level": level, "message": f"log level set to {level}", "components": components}
        )

    async def prepare_shutdown(self, request: Request) -> Response:
        action = {"GET": "get", "POST": "set", "DELETE": "unset"}.get(request.method, "get")  # HEAD reads
        try:
            params = await read_params(request)
            states = await self.backend.prepare_shutdown(action, params.get("ingester") or None)
        except Exception as err:  # noqa: BLE001
            return _failure(err)
        if action != "get":
            return Response(status_code=204)
        return PlainTextResponse("set\n" if states and all(states.values()) else "unset\n")

    async def shutdown(self, request: Request) -> Response:
        try:
            params = await read_params(request)
            await self.backend.shutdown(
                params.get("ingester") or None,
                flush=parse_bool("flush", params.get("flush"), True),
                delete_ring_tokens=parse_bool("delete_ring_tokens", params.get("delete_ring_tokens"), False),
                terminate=parse_bool("terminate", params.get("terminate"), True),
            )
        except Exception as err:  # noqa: BLE001
            return _failure(err)
        return Response(status_code=204)

    async def flush(self, request: Request) -> Response:
        try:
            await self.backend.flush()
        except Exception as err:  # noqa: BLE001
            return _failure(err)
        return Response(status_code=204)

    async def flush_shutdown(self, request: Request) -> Response:
        """Deprecated: flush and leave the ring, but keep the process."""
        try:
            params = await read_params(request)
            await self.backend.shutdown(
                params.get("ingester") or None, flush=True, delete_ring_tokens=False, terminate=False
            )
        except Exception as err:  # noqa: BLE001
            return _failure(err)
        return Response(status_code=204)

    async def ring_page(self, request: Request) -> Response:
        """One of RING_PAGES, chosen by the route that matched."""
        kind, title = RING_PAGES[request.scope["route"].path]
        try:
            if request.method == "POST":
                params = await read_params(request)
                member = params.get("forget")
                if not member:
                    raise ValidationError("POST needs forget=<instance id>")
                await self.backend.forget(kind, member)
                query = f"?{request.url.query}" if request.url.query else ""
                return RedirectResponse(request.url.path + query, status_code=303)
            now = self.backend.now_ns()
            view = await self.backend.ring(kind, now)
        except Exception as err:  # noqa: BLE001
            return _failure(err)
        rows = member_rows(list(view.members), now, view.heartbeat_timeout_ns)
        if "application/json" in request.headers.get("accept", ""):
            return _json(
                {
                    "members": rows_as_json(rows),
                    "heartbeat_timeout_seconds": view.heartbeat_timeout_ns / 1e9,
                    "forgettable": view.forgettable,
                }
            )
        return HTMLResponse(
            render_ring_page(
                title,
                rows,
                heartbeat_timeout_ns=view.heartbeat_timeout_ns,
                now_ns=now,
                forget_enabled=view.forgettable,
                note=view.note,
            )
        )
