"""Sovereign's Python client: the official ``openai`` clients with Sovereign's API added.

    from sovereign import Sovereign

    client = Sovereign()  # SOVEREIGN_API_KEY, SOVEREIGN_BASE_URL (default http://127.0.0.1:8080/v1)
    client.chat.completions.create(model="gemma3-270m", messages=[{"role": "user", "content": "Hi"}])
"""

from openai import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    OpenAIError,
)

from . import types
from ._client import DEFAULT_BASE_URL, IDEMPOTENCY_HEADER, AsyncSovereign, Sovereign
from ._errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IdempotencyKeyInUseError,
    IdempotencyKeyReusedError,
    InternalServerError,
    InvalidRequestError,
    LimitsUnavailableError,
    DatabaseUnavailableError,
    RequestLogUnavailableError,
    MethodNotAllowedError,
    ModelCrashedError,
    ModelFailedError,
    ModelLoadingError,
    ModelNotAllowedError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelRetiredError,
    NotFoundError,
    PermissionDeniedError,
    PolicyViolationError,
    QuotaExceededError,
    RateLimitError,
    RateLimitInfo,
    RequestTooLargeError,
    ServiceUnavailableError,
    SovereignError,
    UnprocessableEntityError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
    WebhookVerificationError,
    parse_rate_limit_headers,
)
from ._streams import AsyncEventStream, EventStream
from ._version import __version__
from ._webhooks import sign_webhook, unwrap_webhook, verify_webhook
from .batch import BatchAPIError
from .pagination import AsyncCursorPage, AsyncPage, SyncCursorPage, SyncPage
from .types import BatchItemResult, Event

__all__ = [
    "__version__",
    "Sovereign",
    "AsyncSovereign",
    "DEFAULT_BASE_URL",
    "IDEMPOTENCY_HEADER",
    "types",
    "Event",
    "BatchItemResult",
    "EventStream",
    "AsyncEventStream",
    "SyncCursorPage",
    "AsyncCursorPage",
    "SyncPage",
    "AsyncPage",
    "verify_webhook",
    "unwrap_webhook",
    "sign_webhook",
    "parse_rate_limit_headers",
    "RateLimitInfo",
    "OpenAIError",
    "APIError",
    "APIStatusError",
    "APIConnectionError",
    "APITimeoutError",
    "APIResponseValidationError",
    "SovereignError",
    "WebhookVerificationError",
    "BatchAPIError",
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
    "DatabaseUnavailableError",
    "RequestLogUnavailableError",
    "UpstreamUnavailableError",
    "UpstreamTimeoutError",
]
