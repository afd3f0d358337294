"""Paths no route serves answer the reference router's plain `404 page not found`, and a
method a path does not take an empty 405, not FastAPI's JSON `{"detail": ...}`."""

from __future__ import annotations

import asyncio

import httpx

from svclog.serve.app import Services
from tests.fuzz.harness import app_with


def send(method: str, path: str) -> httpx.Response:
    app = app_with(Services(), auth_enabled=False)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.request(method, path)

    return asyncio.run(go())


def test_unknown_paths_answer_go_404_text():
    for path in ("/nope", "/svc/api/v1/nope", "/loki/api/v1/query_range/extra", "/api/v2/push"):
        response = send("GET", path)
        assert response.status_code == 404
        assert response.text == "404 page not found\n"
        assert response.headers["content-type"].startswith("text/plain")


def test_wrong_method_is_an_empty_405():
    response = send("PUT", "/loki/api/v1/query_range")
    assert response.status_code == 405 and response.content == b"" and "allow" not in response.headers


def test_known_routes_are_unaffected():
    response = send("GET", "/svc/api/v1/format_query?query=%7Bapp%3D%22a%22%7D")
    assert response.status_code == 200
    assert response.json() == {"status": "success", "data": '{app="a"}'}
