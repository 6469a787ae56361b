"""Retries, idempotency keys and typed errors against a scripted local server (no model needed)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Iterator, List, Tuple

import openai
import pytest

import sovereign
from sovereign import AsyncSovereign, Sovereign
from servers import ScriptedServer, error_body

CHAT_OK = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()
TEAM = json.dumps({"id": "team_1", "object": "team", "name": "t", "created_at": 1}).encode()
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture()
def srv() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    yield s
    s.close()


def _client(srv: ScriptedServer, **kw: object) -> Sovereign:
    return Sovereign(base_url=srv.url + "/v1", api_key="sk-test", **kw)  # type: ignore[arg-type]


def test_429_waits_retry_after_then_succeeds(srv: ScriptedServer) -> None:
    srv.script(
        "/v1/chat/completions",
        (429, {"Retry-After": "1"}, error_body("rate_limit_exceeded", type_="rate_limit_error")),
        (200, {}, CHAT_OK),
    )
    c = _client(srv, max_retries=2)
    t0 = time.monotonic()
    out = c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert out.choices[0].message.content == "hi"
    hits = srv.hits("/v1/chat/completions")
    assert len(hits) == 2
    assert hits[1].at - hits[0].at >= 1.0, "did not wait Retry-After: 1"
    assert time.monotonic() - t0 >= 1.0
    assert hits[1].headers["x-stainless-retry-count"] == "1"


def test_503_twice_then_200(srv: ScriptedServer) -> None:
    srv.script(
        "/v1/chat/completions",
        (503, {"Retry-After": "1"}, error_body("model_loading", type_="server_error")),
        (503, {}, error_body("model_overloaded", type_="server_error")),
        (200, {}, CHAT_OK),
    )
    c = _client(srv, max_retries=3)
    out = c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert out.id == "chatcmpl-1"
    hits = srv.hits("/v1/chat/completions")
    assert len(hits) == 3
    assert hits[1].at - hits[0].at >= 1.0
    # one idempotency key for the request, reused by every retry
    keys = {h.headers.get("idempotency-key") for h in hits}
    assert len(keys) == 1 and None not in keys


def test_400_is_not_retried(srv: ScriptedServer) -> None:
    srv.script("/v1/chat/completions", (400, {}, error_body("invalid_request_error", "bad")), (200, {}, CHAT_OK))
    c = _client(srv, max_retries=3)
    with pytest.raises(sovereign.BadRequestError) as e:
        c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert isinstance(e.value, openai.BadRequestError)
    assert len(srv.hits("/v1/chat/completions")) == 1


def test_max_retries_per_call_and_exhaustion(srv: ScriptedServer) -> None:
    srv.script("/v1/teams", (503, {"Retry-After": "0.1"}, error_body("model_overloaded", type_="server_error")))
    c = _client(srv, max_retries=0)
    with pytest.raises(sovereign.ModelOverloadedError) as e:
        c.teams.create(name="t", max_retries=2)
    assert len(srv.hits("/v1/teams")) == 3
    assert e.value.retry_after == pytest.approx(0.1)
    assert isinstance(e.value, openai.InternalServerError)
    with pytest.raises(sovereign.ModelOverloadedError):
        c.teams.create(name="t")
    assert len(srv.hits("/v1/teams")) == 4


def test_retried_create_reuses_its_idempotency_key(srv: ScriptedServer) -> None:
    srv.script(
        "/v1/teams",
        (409, {}, error_body("idempotency_key_in_use", type_="invalid_request_error")),
        (201, {}, TEAM),
        (201, {}, TEAM),
    )
    c = _client(srv, max_retries=2)
    team = c.teams.create(name="t")
    assert team.id == "team_1"
    first, second = srv.hits("/v1/teams")
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert first.headers["idempotency-key"].startswith("sovereign-python-")
    # a new call gets a new key; an explicit key is sent as given
    c.teams.create(name="t")
    c.teams.create(name="t", idempotency_key="my-key-1")
    keys = [h.headers["idempotency-key"] for h in srv.hits("/v1/teams")]
    assert keys[2] != keys[0] and keys[3] == "my-key-1"
    # GETs carry none
    srv.script("/v1/teams/x", (200, {}, TEAM))
    srv.script("/v1/models/m", (200, {}, json.dumps({"id": "m", "object": "model"}).encode()))
    c.models.retrieve("m")
    assert "idempotency-key" not in srv.hits("/v1/models/m")[0].headers


def test_connection_errors_are_retried_with_backoff() -> None:
    c = Sovereign(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_retries=2)
    t0 = time.monotonic()
    with pytest.raises(sovereign.APIConnectionError):
        c.teams.create(name="t", timeout=2)
    # two backoffs: 0.5 s and 1 s, each less up to 25 % jitter
    assert 0.375 + 0.75 <= time.monotonic() - t0 < 30


@pytest.mark.parametrize(
    ("status", "code", "cls", "openai_cls"),
    [
        (400, "invalid_json", sovereign.BadRequestError, openai.BadRequestError),
        (401, "invalid_api_key", sovereign.AuthenticationError, openai.AuthenticationError),
        (403, "permission_denied", sovereign.PermissionDeniedError, openai.PermissionDeniedError),
        (403, "model_not_allowed", sovereign.ModelNotAllowedError, openai.PermissionDeniedError),
        (404, "model_not_found", sovereign.ModelNotFoundError, openai.NotFoundError),
        (405, "method_not_allowed", sovereign.MethodNotAllowedError, openai.APIStatusError),
        (409, "conflict", sovereign.ConflictError, openai.ConflictError),
        (410, "model_retired", sovereign.ModelRetiredError, openai.APIStatusError),
        (413, "request_too_large", sovereign.RequestTooLargeError, openai.APIStatusError),
        (422, "idempotency_key_reused", sovereign.IdempotencyKeyReusedError, openai.UnprocessableEntityError),
        (429, "quota_exceeded", sovereign.QuotaExceededError, openai.RateLimitError),
        (500, "internal_error", sovereign.InternalServerError, openai.InternalServerError),
        (502, "model_crashed", sovereign.ModelCrashedError, openai.InternalServerError),
        (502, "upstream_error", sovereign.UpstreamError, openai.InternalServerError),
        (503, "model_loading", sovereign.ModelLoadingError, openai.InternalServerError),
        (503, "model_failed", sovereign.ModelFailedError, openai.InternalServerError),
        (503, "limits_unavailable", sovereign.LimitsUnavailableError, openai.InternalServerError),
        (503, "database_unavailable", sovereign.DatabaseUnavailableError, openai.InternalServerError),
        (503, "request_log_unavailable", sovereign.RequestLogUnavailableError, openai.InternalServerError),
        (503, "upstream_unavailable", sovereign.UpstreamUnavailableError, sovereign.UpstreamError),
        (504, "upstream_timeout", sovereign.UpstreamTimeoutError, openai.InternalServerError),
        (404, "something_new", sovereign.NotFoundError, openai.NotFoundError),
        (429, "not_found", sovereign.RateLimitError, openai.RateLimitError),
    ],
)
def test_error_codes_map_to_typed_errors(
    srv: ScriptedServer, status: int, code: str, cls: type, openai_cls: type
) -> None:
    srv.script("/v1/chat/completions", (status, {}, error_body(code, "boom")))
    c = _client(srv, max_retries=0)
    with pytest.raises(openai.APIStatusError) as e:
        c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert type(e.value) is cls, type(e.value)
    assert isinstance(e.value, openai_cls)
    assert e.value.status_code == status and e.value.code == code
    assert "boom" in str(e.value)


def test_rate_limit_error_parses_the_limit_headers(srv: ScriptedServer) -> None:
    headers = {
        "Retry-After": "7",
        "x-ratelimit-limit-requests": "600",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-limit-tokens": "200000",
        "x-ratelimit-remaining-tokens": "198976",
        "x-ratelimit-reset-tokens": "307ms",
    }
    srv.script("/v1/chat/completions", (429, headers, error_body("rate_limit_exceeded", type_="rate_limit_error")))
    c = _client(srv, max_retries=0)
    with pytest.raises(sovereign.RateLimitError) as e:
        c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    err = e.value
    assert (err.limit_requests, err.remaining_requests, err.reset_requests) == (600, 0, 360.0)
    assert (err.limit_tokens, err.remaining_tokens) == (200000, 198976)
    assert err.reset_tokens == pytest.approx(0.307)
    assert err.retry_after == 7.0
    assert sovereign.parse_rate_limit_headers({"x-ratelimit-reset-requests": "1h2m3.5s"}).reset_requests == 3723.5


def test_policy_violation_carries_policy_and_rule(srv: ScriptedServer) -> None:
    body = error_body("policy_violation", "denied by no-secrets", type_="permission_error", policy="guard", rule="no-secrets")
    srv.script("/v1/chat/completions", (403, {}, body))
    c = _client(srv, max_retries=3)
    with pytest.raises(sovereign.PolicyViolationError) as e:
        c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert (e.value.policy, e.value.rule) == ("guard", "no-secrets")
    assert isinstance(e.value, openai.PermissionDeniedError)
    assert len(srv.hits("/v1/chat/completions")) == 1


def test_upload_progress_and_retry_rereads_the_file(srv: ScriptedServer) -> None:
    doc = json.dumps({"id": "doc_1", "object": "document", "status": "processing"}).encode()
    srv.script(
        "/v1/collections/col_1/documents",
        (503, {"Retry-After": "0.1"}, error_body("model_loading", type_="server_error")),
        (202, {}, doc),
    )
    data = bytes(range(256)) * 1200  # 300 KiB: several chunks
    calls: List[Tuple[int, int]] = []
    c = _client(srv, max_retries=1)
    out = c.collections.documents.upload(
        "col_1", file=io.BytesIO(data), filename="big.bin", title="big", on_progress=lambda s, t: calls.append((s, t))
    )
    assert out.id == "doc_1"
    hits = srv.hits("/v1/collections/col_1/documents")
    assert len(hits) == 2
    for h in hits:  # the whole file both times
        assert data in h.body and b'name="title"' in h.body and b'filename="big.bin"' in h.body
        assert h.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert hits[0].headers["idempotency-key"] == hits[1].headers["idempotency-key"]
    assert len(calls) >= 4 and all(t == len(data) for _, t in calls)
    assert calls[-1] == (len(data), len(data))
    assert [s for s, _ in calls] != sorted(s for s, _ in calls), "the retry starts from 0 again"


def test_async_client_retries_too(srv: ScriptedServer) -> None:
    srv.script(
        "/v1/chat/completions",
        (429, {"Retry-After": "1"}, error_body("rate_limit_exceeded", type_="rate_limit_error")),
        (200, {}, CHAT_OK),
    )

    async def go() -> str:
        async with AsyncSovereign(base_url=srv.url + "/v1", api_key="sk-test", max_retries=1) as c:
            out = await c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
            with pytest.raises(sovereign.ModelNotFoundError):
                srv.script("/v1/models/x", (404, {}, error_body("model_not_found")))
                await c.models.retrieve("x")
            return out.choices[0].message.content or ""

    assert asyncio.run(go()) == "hi"
    hits = srv.hits("/v1/chat/completions")
    assert len(hits) == 2 and hits[1].at - hits[0].at >= 1.0
    assert hits[0].headers["idempotency-key"] == hits[1].headers["idempotency-key"]


def test_batch_helper_per_item_errors_in_order(srv: ScriptedServer) -> None:
    srv.script("/v1/chat/completions", (200, {}, CHAT_OK))
    srv.script("/v1/embeddings", (400, {}, error_body("invalid_request_error", "no")))
    c = _client(srv, max_retries=0)
    progress: List[Tuple[int, int]] = []
    reqs = [{"model": "m", "messages": MSG, "custom_id": f"r{i}"} for i in range(5)]
    reqs[2] = {"model": "m", "custom_id": "bad"}  # no messages: this item fails (TypeError)
    out = c.batch.chat(reqs, concurrency=2, on_progress=lambda d, t: progress.append((d, t)))
    assert [r.index for r in out] == [0, 1, 2, 3, 4]
    assert [r.custom_id for r in out] == ["r0", "r1", "bad", "r3", "r4"]
    assert sorted(progress) == [(i, 5) for i in range(1, 6)]
    assert all(r.ok and r.response.id == "chatcmpl-1" for i, r in enumerate(out) if i != 2)
    assert isinstance(out[2].error, TypeError) and not out[2].ok
    emb = c.batch.embeddings([{"model": "e", "input": "x"}] * 3, concurrency=3)
    assert all(isinstance(r.error, sovereign.BadRequestError) for r in emb)
