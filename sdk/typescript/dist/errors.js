// Typed errors: every Sovereign error code maps to a subclass of the openai
// package's own error classes, so `instanceof OpenAI.RateLimitError` (and the
// rest) keeps holding for code written against the official client.
import { APIError, AuthenticationError as OpenAIAuthenticationError, BadRequestError as OpenAIBadRequestError, ConflictError as OpenAIConflictError, InternalServerError as OpenAIInternalServerError, NotFoundError as OpenAINotFoundError, PermissionDeniedError as OpenAIPermissionDeniedError, RateLimitError as OpenAIRateLimitError, UnprocessableEntityError as OpenAIUnprocessableEntityError, InvalidWebhookSignatureError, } from 'openai/core/error';
export { APIError };
/** Parses a Go/OpenAI style duration ("1s", "6m0s", "1h2m3.5s", "250ms") into seconds. */
export function parseDuration(value) {
    if (value == null)
        return undefined;
    const v = value.trim();
    if (v === '')
        return undefined;
    if (/^\d+(\.\d+)?$/.test(v))
        return Number(v);
    const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g;
    let total = 0;
    let consumed = 0;
    let m;
    while ((m = re.exec(v)) !== null) {
        const n = Number(m[1]);
        const unit = m[2];
        total += unit === 'h' ? n * 3600 : unit === 'm' ? n * 60 : unit === 's' ? n : unit === 'ms' ? n / 1000 : unit === 'ns' ? n / 1e9 : n / 1e6;
        consumed += m[0].length;
    }
    return consumed === v.length ? total : undefined;
}
function headerNumber(headers, name) {
    const v = headers?.get(name);
    if (v == null || v.trim() === '')
        return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
}
/** Reads the `x-ratelimit-*` headers of a response. */
export function parseRateLimitHeaders(headers) {
    const info = {};
    const set = (k, v) => {
        if (v !== undefined)
            info[k] = v;
    };
    set('limitRequests', headerNumber(headers, 'x-ratelimit-limit-requests'));
    set('remainingRequests', headerNumber(headers, 'x-ratelimit-remaining-requests'));
    set('resetRequests', parseDuration(headers?.get('x-ratelimit-reset-requests')));
    set('limitTokens', headerNumber(headers, 'x-ratelimit-limit-tokens'));
    set('remainingTokens', headerNumber(headers, 'x-ratelimit-remaining-tokens'));
    set('resetTokens', parseDuration(headers?.get('x-ratelimit-reset-tokens')));
    return info;
}
/** `Retry-After` in seconds (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(headers) {
    const ms = headers?.get('retry-after-ms');
    if (ms && Number.isFinite(Number(ms)))
        return Number(ms) / 1000;
    const v = headers?.get('retry-after');
    if (!v)
        return undefined;
    const n = Number(v);
    if (Number.isFinite(n))
        return n;
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}
// ---- 400
/** 400: the request is malformed (`invalid_request_error`, `invalid_json`). */
export class BadRequestError extends OpenAIBadRequestError {
}
// ---- 401
/** 401: missing or invalid API key. */
export class AuthenticationError extends OpenAIAuthenticationError {
}
// ---- 403
/** 403: the key lacks the scope, or the object belongs to another team. */
export class PermissionDeniedError extends OpenAIPermissionDeniedError {
}
/** 403 `model_not_allowed`: the key may not use this model. */
export class ModelNotAllowedError extends PermissionDeniedError {
}
/** 403 `policy_violation`: a policy rule denied the request. */
export class PolicyViolationError extends PermissionDeniedError {
    /** Name of the denying policy. */
    policy;
    /** Name of the rule that denied. */
    rule;
    constructor(status, error, message, headers) {
        super(status, error, message, headers);
        const e = error;
        this.policy = typeof e?.['policy'] === 'string' ? e['policy'] : undefined;
        this.rule = typeof e?.['rule'] === 'string' ? e['rule'] : undefined;
    }
}
// ---- 404
/** 404: no such object (or not visible to this key). */
export class NotFoundError extends OpenAINotFoundError {
}
/** 404 `model_not_found`. */
export class ModelNotFoundError extends NotFoundError {
}
// ---- 405, 410, 413
/** 405 `method_not_allowed`. */
export class MethodNotAllowedError extends APIError {
}
/** 410 `model_retired`: the model is past its sunset. */
export class ModelRetiredError extends APIError {
}
/** 413 `request_too_large`. */
export class RequestTooLargeError extends APIError {
}
// ---- 409, 422
/** 409 `conflict` (retried by the client). */
export class ConflictError extends OpenAIConflictError {
}
/** 409 `idempotency_key_in_use`: the first request with this key is still running (retried). */
export class IdempotencyKeyInUseError extends ConflictError {
}
/** 422. */
export class UnprocessableEntityError extends OpenAIUnprocessableEntityError {
}
/** 422 `idempotency_key_reused`: the same Idempotency-Key was sent with a different request. */
export class IdempotencyKeyReusedError extends UnprocessableEntityError {
}
// ---- 429
/** 429 `rate_limit_exceeded`, with the parsed limit headers and `Retry-After`. */
export class RateLimitError extends OpenAIRateLimitError {
    /** The `x-ratelimit-*` headers of the response. */
    rateLimit;
    /** Seconds to wait before trying again (`Retry-After`), when the server said. */
    retryAfter;
    constructor(status, error, message, headers) {
        super(status, error, message, headers);
        this.rateLimit = parseRateLimitHeaders(headers);
        this.retryAfter = parseRetryAfter(headers);
    }
}
/** 429 `quota_exceeded` (type `insufficient_quota`): a daily or monthly token quota is spent. */
export class QuotaExceededError extends RateLimitError {
}
// ---- 5xx
/** 500 and any other 5xx without a more specific class. */
export class InternalServerError extends OpenAIInternalServerError {
    /** Seconds to wait before trying again (`Retry-After`), when the server said. */
    retryAfter;
    constructor(status, error, message, headers) {
        super(status, error, message, headers);
        this.retryAfter = parseRetryAfter(headers);
    }
}
/** 503: the service (or a dependency such as the limits store) is unavailable. */
export class ServiceUnavailableError extends InternalServerError {
}
/** 503 `model_overloaded`: every replica of the model is busy. */
export class ModelOverloadedError extends ServiceUnavailableError {
}
/** 503 `model_loading`: the model is still loading. */
export class ModelLoadingError extends ServiceUnavailableError {
}
/** 503 `model_failed`: the model failed to load. */
export class ModelFailedError extends ServiceUnavailableError {
}
/** 502 `model_crashed`: the model's runner died during the request. */
export class ModelCrashedError extends InternalServerError {
}
/** 502 `upstream_error` / 503 `upstream_unavailable`: an upstream model backend failed. */
export class UpstreamError extends InternalServerError {
}
/** 504 `upstream_timeout`. */
export class UpstreamTimeoutError extends InternalServerError {
}
/** A webhook's signature or timestamp did not verify. */
export class WebhookVerificationError extends InvalidWebhookSignatureError {
}
/**
 * Builds the typed error for a non-2xx response: the client's `makeStatusError`.
 * `body` is the parsed JSON body (the `{"error": {...}}` envelope) when there is one.
 */
export function makeSovereignError(status, body, message, headers) {
    if (!status || !headers)
        return APIError.generate(status, body, message, headers);
    const error = body?.['error'];
    const code = typeof error?.['code'] === 'string' ? error['code'] : '';
    switch (status) {
        case 400:
            return new BadRequestError(400, error, message, headers);
        case 401:
            return new AuthenticationError(401, error, message, headers);
        case 403:
            if (code === 'policy_violation')
                return new PolicyViolationError(403, error, message, headers);
            if (code === 'model_not_allowed')
                return new ModelNotAllowedError(403, error, message, headers);
            return new PermissionDeniedError(403, error, message, headers);
        case 404:
            if (code === 'model_not_found')
                return new ModelNotFoundError(404, error, message, headers);
            return new NotFoundError(404, error, message, headers);
        case 405:
            return new MethodNotAllowedError(405, error, message, headers);
        case 409:
            if (code === 'idempotency_key_in_use')
                return new IdempotencyKeyInUseError(409, error, message, headers);
            return new ConflictError(409, error, message, headers);
        case 410:
            return new ModelRetiredError(410, error, message, headers);
        case 413:
            return new RequestTooLargeError(413, error, message, headers);
        case 422:
            if (code === 'idempotency_key_reused')
                return new IdempotencyKeyReusedError(422, error, message, headers);
            return new UnprocessableEntityError(422, error, message, headers);
        case 429:
            if (code === 'quota_exceeded' || error?.['type'] === 'insufficient_quota') {
                return new QuotaExceededError(429, error, message, headers);
            }
            return new RateLimitError(429, error, message, headers);
    }
    if (status >= 500) {
        switch (code) {
            case 'model_overloaded':
                return new ModelOverloadedError(status, error, message, headers);
            case 'model_loading':
                return new ModelLoadingError(status, error, message, headers);
            case 'model_failed':
                return new ModelFailedError(status, error, message, headers);
            case 'model_crashed':
                return new ModelCrashedError(status, error, message, headers);
            case 'upstream_error':
            case 'upstream_unavailable':
                return new UpstreamError(status, error, message, headers);
            case 'upstream_timeout':
                return new UpstreamTimeoutError(status, error, message, headers);
        }
        if (status === 503)
            return new ServiceUnavailableError(status, error, message, headers);
        return new InternalServerError(status, error, message, headers);
    }
    return APIError.generate(status, body, message, headers);
}
