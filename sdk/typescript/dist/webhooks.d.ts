import type { SovereignEvent } from './types.js';
/** Request headers: a `Headers`, or a plain object (Node's `req.headers`). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined | null>;
/** The raw request body, exactly as received. */
export type WebhookPayload = string | Uint8Array | ArrayBuffer;
/** Default tolerance between `webhook-timestamp` and now, in seconds. */
export declare const DEFAULT_TOLERANCE_SECONDS = 300;
/** Computes the `v1,<base64>` signature of a message (for tests and for senders). */
export declare function sign(secret: string, msgId: string, timestamp: number, payload: WebhookPayload): Promise<string>;
/**
 * Verifies a Standard Webhooks signature: `webhook-id`, `webhook-timestamp`
 * (within `toleranceSeconds` of now) and `webhook-signature` (any of its
 * space-separated `v1,` signatures — two during a secret rotation).
 * Throws WebhookVerificationError when it does not verify.
 */
export declare function verifyWebhook(payload: WebhookPayload, headers: WebhookHeaders, secret: string, toleranceSeconds?: number): Promise<void>;
/** Verifies (as verifyWebhook) and parses the event. */
export declare function unwrapWebhook<T = SovereignEvent>(payload: WebhookPayload, headers: WebhookHeaders, secret: string, toleranceSeconds?: number): Promise<T>;
