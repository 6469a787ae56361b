import { APIError, AuthenticationError as OpenAIAuthenticationError, BadRequestError as OpenAIBadRequestError, ConflictError as OpenAIConflictError, InternalServerError as OpenAIInternalServerError, NotFoundError as OpenAINotFoundError, PermissionDeniedError as OpenAIPermissionDeniedError, RateLimitError as OpenAIRateLimitError, UnprocessableEntityError as OpenAIUnprocessableEntityError, InvalidWebhookSignatureError } from 'openai/core/error';
export { APIError };
/** The rate-limit headers of a response (`x-ratelimit-*`), parsed. Resets are in seconds. */
export interface RateLimitInfo {
    limitRequests?: number;
    remainingRequests?: number;
    resetRequests?: number;
    limitTokens?: number;
    remainingTokens?: number;
    resetTokens?: number;
}
/** Parses a Go/OpenAI style duration ("1s", "6m0s", "1h2m3.5s", "250ms") into seconds. */
export declare function parseDuration(value: string | null | undefined): number | undefined;
/** Reads the `x-ratelimit-*` headers of a response. */
export declare function parseRateLimitHeaders(headers: Headers | undefined): RateLimitInfo;
/** `Retry-After` in seconds (delta-seconds or an HTTP date), or undefined. */
export declare function parseRetryAfter(headers: Headers | undefined): number | undefined;
/** 400: the request is malformed (`invalid_request_error`, `invalid_json`). */
export declare class BadRequestError extends OpenAIBadRequestError {
}
/** 401: missing or invalid API key. */
export declare class AuthenticationError extends OpenAIAuthenticationError {
}
/** 403: the key lacks the scope, or the object belongs to another team. */
export declare class PermissionDeniedError extends OpenAIPermissionDeniedError {
}
/** 403 `model_not_allowed`: the key may not use this model. */
export declare class ModelNotAllowedError extends PermissionDeniedError {
}
/** 403 `policy_violation`: a policy rule denied the request. */
export declare class PolicyViolationError extends PermissionDeniedError {
    /** Name of the denying policy. */
    readonly policy: string | undefined;
    /** Name of the rule that denied. */
    readonly rule: string | undefined;
    constructor(status: 403, error: Object | undefined, message: string | undefined, headers: Headers);
}
/** 404: no such object (or not visible to this key). */
export declare class NotFoundError extends OpenAINotFoundError {
}
/** 404 `model_not_found`. */
export declare class ModelNotFoundError extends NotFoundError {
}
/** 405 `method_not_allowed`. */
export declare class MethodNotAllowedError extends APIError<405, Headers> {
}
/** 410 `model_retired`: the model is past its sunset. */
export declare class ModelRetiredError extends APIError<410, Headers> {
}
/** 413 `request_too_large`. */
export declare class RequestTooLargeError extends APIError<413, Headers> {
}
/** 409 `conflict` (retried by the client). */
export declare class ConflictError extends OpenAIConflictError {
}
/** 409 `idempotency_key_in_use`: the first request with this key is still running (retried). */
export declare class IdempotencyKeyInUseError extends ConflictError {
}
/** 422. */
export declare class UnprocessableEntityError extends OpenAIUnprocessableEntityError {
}
/** 422 `idempotency_key_reused`: the same Idempotency-Key was sent with a different request. */
export declare class IdempotencyKeyReusedError extends UnprocessableEntityError {
}
/** 429 `rate_limit_exceeded`, with the parsed limit headers and `Retry-After`. */
export declare class RateLimitError extends OpenAIRateLimitError {
    /** The `x-ratelimit-*` headers of the response. */
    readonly rateLimit: RateLimitInfo;
    /** Seconds to wait before trying again (`Retry-After`), when the server said. */
    readonly retryAfter: number | undefined;
    constructor(status: 429, error: Object | undefined, message: string | undefined, headers: Headers);
}
/** 429 `quota_exceeded` (type `insufficient_quota`): a daily or monthly token quota is spent. */
export declare class QuotaExceededError extends RateLimitError {
}
/** 500 and any other 5xx without a more specific class. */
export declare class InternalServerError extends OpenAIInternalServerError {
    /** Seconds to wait before trying again (`Retry-After`), when the server said. */
    readonly retryAfter: number | undefined;
    constructor(status: number, error: Object | undefined, message: string | undefined, headers: Headers);
}
/** 503: the service (or a dependency such as the limits store) is unavailable. */
export declare class ServiceUnavailableError extends InternalServerError {
}
/** 503 `model_overloaded`: every replica of the model is busy. */
export declare class ModelOverloadedError extends ServiceUnavailableError {
}
/** 503 `model_loading`: the model is still loading. */
export declare class ModelLoadingError extends ServiceUnavailableError {
}
/** 503 `model_failed`: the model failed to load. */
export declare class ModelFailedError extends ServiceUnavailableError {
}
/** 502 `model_crashed`: the model's runner died during the request. */
export declare class ModelCrashedError extends InternalServerError {
}
/** 502 `upstream_error` / 503 `upstream_unavailable`: an upstream model backend failed. */
export declare class UpstreamError extends InternalServerError {
}
/** 504 `upstream_timeout`. */
export declare class UpstreamTimeoutError extends InternalServerError {
}
/** A webhook's signature or timestamp did not verify. */
export declare class WebhookVerificationError extends InvalidWebhookSignatureError {
}
/**
 * Builds the typed error for a non-2xx response: the client's `makeStatusError`.
 * `body` is the parsed JSON body (the `{"error": {...}}` envelope) when there is one.
 */
export declare function makeSovereignError(status: number | undefined, body: Object | undefined, message: string | undefined, headers: Headers | undefined): APIError;
