// Standard Webhooks verification (https://www.standardwebhooks.com) with WebCrypto:
// no Node `crypto`, so it runs on Node 20+, Deno, Cloudflare Workers and Vercel Edge.
import { WebhookVerificationError } from './errors.js';
/** Default tolerance between `webhook-timestamp` and now, in seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300;
function header(headers, name) {
    if (typeof headers.get === 'function')
        return headers.get(name) ?? undefined;
    const rec = headers;
    for (const k of Object.keys(rec)) {
        if (k.toLowerCase() === name) {
            const v = rec[k];
            return Array.isArray(v) ? v.join(' ') : v ?? undefined;
        }
    }
    return undefined;
}
function base64ToBytes(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++)
        out[i] = bin.charCodeAt(i);
    return out;
}
function bytesToBase64(b) {
    let s = '';
    for (let i = 0; i < b.length; i++)
        s += String.fromCharCode(b[i]);
    return btoa(s);
}
function toBytes(p) {
    if (typeof p === 'string')
        return new TextEncoder().encode(p);
    if (p instanceof Uint8Array)
        return p;
    return new Uint8Array(p);
}
function subtle() {
    const c = globalThis.crypto;
    if (!c?.subtle)
        throw new WebhookVerificationError('WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
    return c.subtle;
}
function secretBytes(secret) {
    const s = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
    try {
        return base64ToBytes(s);
    }
    catch {
        throw new WebhookVerificationError('the webhook secret is not valid base64 (expected "whsec_<base64>")');
    }
}
function equal(a, b) {
    if (a.length !== b.length)
        return false;
    let d = 0;
    for (let i = 0; i < a.length; i++)
        d |= a.charCodeAt(i) ^ b.charCodeAt(i);
    return d === 0;
}
/** Computes the `v1,<base64>` signature of a message (for tests and for senders). */
export async function sign(secret, msgId, timestamp, payload) {
    const key = await subtle().importKey('raw', secretBytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const prefix = new TextEncoder().encode(`${msgId}.${timestamp}.`);
    const body = toBytes(payload);
    const data = new Uint8Array(prefix.length + body.length);
    data.set(prefix, 0);
    data.set(body, prefix.length);
    const mac = new Uint8Array(await subtle().sign('HMAC', key, data));
    return `v1,${bytesToBase64(mac)}`;
}
/**
 * Verifies a Standard Webhooks signature: `webhook-id`, `webhook-timestamp`
 * (within `toleranceSeconds` of now) and `webhook-signature` (any of its
 * space-separated `v1,` signatures — two during a secret rotation).
 * Throws WebhookVerificationError when it does not verify.
 */
export async function verifyWebhook(payload, headers, secret, toleranceSeconds = DEFAULT_TOLERANCE_SECONDS) {
    const id = header(headers, 'webhook-id');
    const ts = header(headers, 'webhook-timestamp');
    const sigs = header(headers, 'webhook-signature');
    if (!id || !ts || !sigs)
        throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
    if (!/^\d+$/.test(ts))
        throw new WebhookVerificationError('invalid webhook-timestamp');
    const timestamp = Number(ts);
    const now = Math.floor(Date.now() / 1000);
    if (now - timestamp > toleranceSeconds)
        throw new WebhookVerificationError('webhook timestamp is too old');
    if (timestamp - now > toleranceSeconds)
        throw new WebhookVerificationError('webhook timestamp is in the future');
    const expected = (await sign(secret, id, timestamp, payload)).slice('v1,'.length);
    for (const part of sigs.split(' ')) {
        const comma = part.indexOf(',');
        if (comma < 0)
            continue;
        if (part.slice(0, comma) !== 'v1')
            continue;
        if (equal(part.slice(comma + 1), expected))
            return;
    }
    throw new WebhookVerificationError('no matching webhook signature');
}
/** Verifies (as verifyWebhook) and parses the event. */
export async function unwrapWebhook(payload, headers, secret, toleranceSeconds) {
    await verifyWebhook(payload, headers, secret, toleranceSeconds);
    const text = typeof payload === 'string' ? payload : new TextDecoder().decode(toBytes(payload));
    return JSON.parse(text);
}
