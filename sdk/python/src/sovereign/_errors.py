"""Sovereign's typed errors: subclasses of the official SDK's, chosen by the server's error code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Type

import httpx2
import openai

__all__ = [
    "SovereignError",
    "RateLimitInfo",
    "parse_rate_limit_headers",
    "BadRequestError",
    "InvalidRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "ModelNotAllowedError",
    "PolicyViolationError",
    "NotFoundError",
    "ModelNotFoundError",
    "MethodNotAllowedError",
    "ConflictError",
    "IdempotencyKeyInUseError",
    "ModelRetiredError",
    "RequestTooLargeError",
    "UnprocessableEntityError",
    "IdempotencyKeyReusedError",
    "RateLimitError",
    "QuotaExceededError",
    "InternalServerError",
    "UpstreamError",
    "ModelCrashedError",
    "ServiceUnavailableError",
    "ModelOverloadedError",
    "ModelLoadingError",
    "ModelFailedError",
    "LimitsUnavailableError",
    "UpstreamUnavailableError",
    "UpstreamTimeoutError",
    "WebhookVerificationError",
    "make_status_error",
]


class SovereignError(openai.OpenAIError):
    """Base of the errors the Sovereign client raises by itself (not from an HTTP answer)."""


class WebhookVerificationError(SovereignError):
    """A webhook's signature, timestamp or headers did not verify."""


# ---------------------------------------------------------------- rate-limit headers

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _parse_duration(value: Optional[str]) -> Optional[float]:
    """Seconds in a Go/OpenAI duration such as ``"6m0s"``, ``"1s"``, ``"307ms"`` (or plain seconds)."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    total, pos = 0.0, 0
    for m in _DURATION.finditer(value):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    return total if pos == len(value) else None


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class RateLimitInfo:
    """The rate-limit headers of an answer (``x-ratelimit-*``, ``Retry-After``), parsed.

    ``reset_*`` and ``retry_after`` are in seconds; a field is ``None`` when its header is absent.
    """

    limit_requests: Optional[int] = None
    remaining_requests: Optional[int] = None
    reset_requests: Optional[float] = None
    limit_tokens: Optional[int] = None
    remaining_tokens: Optional[int] = None
    reset_tokens: Optional[float] = None
    retry_after: Optional[float] = None


def parse_rate_limit_headers(headers: Mapping[str, str] | httpx2.Headers) -> RateLimitInfo:
    """Parses ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` and ``Retry-After``."""
    h: Dict[str, str] = {k.lower(): v for k, v in headers.items()}
    retry_after: Optional[float] = None
    if "retry-after-ms" in h:
        ms = _parse_duration(h["retry-after-ms"])
        retry_after = ms / 1000.0 if ms is not None else None
    if retry_after is None and "retry-after" in h:
        retry_after = _parse_duration(h["retry-after"])
    return RateLimitInfo(
        limit_requests=_int(h.get("x-ratelimit-limit-requests")),
        remaining_requests=_int(h.get("x-ratelimit-remaining-requests")),
        reset_requests=_parse_duration(h.get("x-ratelimit-reset-requests")),
        limit_tokens=_int(h.get("x-ratelimit-limit-tokens")),
        remaining_tokens=_int(h.get("x-ratelimit-remaining-tokens")),
        reset_tokens=_parse_duration(h.get("x-ratelimit-reset-tokens")),
        retry_after=retry_after,
    )


# ---------------------------------------------------------------- 4xx


class BadRequestError(openai.BadRequestError):
    """400: ``invalid_request_error``, ``invalid_json``, …"""


InvalidRequestError = BadRequestError


class AuthenticationError(openai.AuthenticationError):
    """401: ``missing_api_key``, ``invalid_api_key``."""


class PermissionDeniedError(openai.PermissionDeniedError):
    """403: ``permission_denied``."""


class ModelNotAllowedError(PermissionDeniedError):
    """403 ``model_not_allowed``: the key may not use this model."""


class PolicyViolationError(PermissionDeniedError):
    """403 ``policy_violation``: a policy rule denied the request.

    ``policy`` and ``rule`` name the denying policy and its rule.
    """

    policy: Optional[str]
    rule: Optional[str]

    def __init__(self, message: str, *, response: httpx2.Response, body: object | None) -> None:
        super().__init__(message, response=response, body=body)
        data = body if isinstance(body, dict) else {}
        policy, rule = data.get("policy"), data.get("rule")
        self.policy = str(policy) if policy is not None else None
        self.rule = str(rule) if rule is not None else None


class NotFoundError(openai.NotFoundError):
    """404: ``not_found``."""


class ModelNotFoundError(NotFoundError):
    """404 ``model_not_found``."""


class MethodNotAllowedError(openai.APIStatusError):
    """405 ``method_not_allowed``."""


class ConflictError(openai.ConflictError):
    """409 ``conflict``."""


class IdempotencyKeyInUseError(ConflictError):
    """409 ``idempotency_key_in_use``: the first request with this key is still running (retried)."""


class ModelRetiredError(openai.APIStatusError):
    """410 ``model_retired``."""


class RequestTooLargeError(openai.APIStatusError):
    """413 ``request_too_large``."""


class UnprocessableEntityError(openai.UnprocessableEntityError):
    """422."""


class IdempotencyKeyReusedError(UnprocessableEntityError):
    """422 ``idempotency_key_reused``: the key was used before with another request body."""


class RateLimitError(openai.RateLimitError):
    """429 ``rate_limit_exceeded``, with the answer's rate-limit headers parsed.

    ``limit_requests``, ``remaining_requests``, ``reset_requests`` (seconds), the same for tokens,
    and ``retry_after`` (seconds), each ``None`` when the server did not send it.
    """

    rate_limit: RateLimitInfo

    def __init__(self, message: str, *, response: httpx2.Response, body: object | None) -> None:
        super().__init__(message, response=response, body=body)
        self.rate_limit = parse_rate_limit_headers(response.headers)

    @property
    def limit_requests(self) -> Optional[int]:
        return self.rate_limit.limit_requests

    @property
    def remaining_requests(self) -> Optional[int]:
        return self.rate_limit.remaining_requests

    @property
    def reset_requests(self) -> Optional[float]:
        return self.rate_limit.reset_requests

    @property
    def limit_tokens(self) -> Optional[int]:
        return self.rate_limit.limit_tokens

    @property
    def remaining_tokens(self) -> Optional[int]:
        return self.rate_limit.remaining_tokens

    @property
    def reset_tokens(self) -> Optional[float]:
        return self.rate_limit.reset_tokens

    @property
    def retry_after(self) -> Optional[float]:
        return self.rate_limit.retry_after


class QuotaExceededError(RateLimitError):
    """429 ``quota_exceeded`` (type ``insufficient_quota``): the day's or month's token budget is spent."""


# ---------------------------------------------------------------- 5xx


class InternalServerError(openai.InternalServerError):
    """500 ``internal_error`` and any other 5xx."""


class UpstreamError(InternalServerError):
    """502 ``upstream_error``: an upstream model's server failed."""


class ModelCrashedError(InternalServerError):
    """502 ``model_crashed``: the model's runner died while answering."""


class ServiceUnavailableError(InternalServerError):
    """503: the service cannot answer now; ``retry_after`` says when to try again."""

    @property
    def retry_after(self) -> Optional[float]:
        return parse_rate_limit_headers(self.response.headers).retry_after


class ModelOverloadedError(ServiceUnavailableError):
    """503 ``model_overloaded``: the model's queue is full."""


class ModelLoadingError(ServiceUnavailableError):
    """503 ``model_loading``: the model is still loading."""


class ModelFailedError(ServiceUnavailableError):
    """503 ``model_failed``: the model failed to load."""


class LimitsUnavailableError(ServiceUnavailableError):
    """503 ``limits_unavailable``: the shared limit store cannot be reached."""


class DatabaseUnavailableError(ServiceUnavailableError):
    """503 ``database_unavailable``: the server's database cannot be reached
    (retried by default, after the server's ``Retry-After``)."""


class RequestLogUnavailableError(ServiceUnavailableError):
    """503 ``request_log_unavailable``: the server can keep no record of the
    request (its database down and its local spool full), and it was set to
    refuse inference rather than lose records."""


class UpstreamUnavailableError(ServiceUnavailableError, UpstreamError):
    """503 ``upstream_unavailable``: no upstream replica is healthy."""


class UpstreamTimeoutError(UpstreamError):
    """504 ``upstream_timeout``."""


_BY_CODE: Dict[str, Type[openai.APIStatusError]] = {
    "invalid_request_error": BadRequestError,
    "invalid_json": BadRequestError,
    "unsupported_api_version": BadRequestError,
    "missing_api_key": AuthenticationError,
    "invalid_api_key": AuthenticationError,
    "permission_denied": PermissionDeniedError,
    "model_not_allowed": ModelNotAllowedError,
    "policy_violation": PolicyViolationError,
    "not_found": NotFoundError,
    "model_not_found": ModelNotFoundError,
    "method_not_allowed": MethodNotAllowedError,
    "conflict": ConflictError,
    "idempotency_key_in_use": IdempotencyKeyInUseError,
    "model_retired": ModelRetiredError,
    "request_too_large": RequestTooLargeError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "rate_limit_exceeded": RateLimitError,
    "quota_exceeded": QuotaExceededError,
    "internal_error": InternalServerError,
    "upstream_error": UpstreamError,
    "model_crashed": ModelCrashedError,
    "model_overloaded": ModelOverloadedError,
    "model_loading": ModelLoadingError,
    "model_failed": ModelFailedError,
    "limits_unavailable": LimitsUnavailableError,
    "database_unavailable": DatabaseUnavailableError,
    "request_log_unavailable": RequestLogUnavailableError,
    "upstream_unavailable": UpstreamUnavailableError,
    "upstream_timeout": UpstreamTimeoutError,
}

_BY_STATUS: Dict[int, Type[openai.APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: ModelRetiredError,
    413: RequestTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    502: UpstreamError,
    503: ServiceUnavailableError,
    504: UpstreamTimeoutError,
}


_OPENAI_BASE: Dict[int, Type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


def make_status_error(err_msg: str, *, body: object, response: httpx2.Response) -> openai.APIStatusError:
    """The typed error for an error answer: by ``error.code`` first, then by HTTP status.

    A code's class is only used when it is a subclass of the class OpenAI's SDK raises for the status
    (a 429 is always an ``openai.RateLimitError``, a 5xx an ``openai.InternalServerError``), so that
    ``isinstance`` checks written against OpenAI's classes hold whatever the code says.
    """
    data = body.get("error", body) if isinstance(body, dict) else body
    status = response.status_code
    code = data.get("code") if isinstance(data, dict) else None
    openai_base = _OPENAI_BASE.get(status)
    if openai_base is None:
        openai_base = openai.InternalServerError if status >= 500 else openai.APIStatusError
    cls: Optional[Type[openai.APIStatusError]] = None
    if isinstance(code, str):
        cand = _BY_CODE.get(code)
        if cand is not None and issubclass(cand, openai_base):
            cls = cand
    if cls is None:
        cls = _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else openai.APIStatusError
    return cls(err_msg, response=response, body=data)
