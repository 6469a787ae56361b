// Sovereign's own resources, in the official client's style: each method is a
// thin call of the client's get/post/put/patch/delete, so retries, timeouts,
// idempotency keys, typed errors and per-call options all come from the client.
import { APIResource } from 'openai/core/resource';
import { CursorPage, Page } from 'openai/core/pagination';
import { Models as OpenAIModels } from 'openai/resources/models';
import { Completions as OpenAICompletions } from 'openai/resources/completions';
import { Webhooks as OpenAIWebhooks } from 'openai/resources/webhooks/webhooks';
import { APIConnectionError, APIError } from 'openai/core/error';
import { EventStream } from './sse.js';
import { unwrapWebhook, verifyWebhook } from './webhooks.js';
const seg = (s) => encodeURIComponent(s);
function randomId() {
    const c = globalThis.crypto;
    if (c?.randomUUID)
        return c.randomUUID();
    return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
}
/** `{ object: "list", data }` lists that come in one page. */
export class ListPage extends Page {
}
/** Cursor lists (`has_more`, `last_id`; `?after=&limit=`): `for await` walks every page. */
export class SovereignCursorPage extends CursorPage {
    first_id;
    last_id;
}
const sleep = (ms, signal) => new Promise((resolve, reject) => {
    if (signal?.aborted)
        return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason ?? new Error('aborted')); }, { once: true });
});
async function poll(get, done, what, o = {}) {
    const deadline = Date.now() + (o.timeout ?? 600_000);
    for (;;) {
        const r = await get();
        if (done(r))
            return r;
        if (Date.now() > deadline)
            throw new APIConnectionError({ message: `timed out waiting for ${what}` });
        await sleep(o.pollInterval ?? 500, o.signal);
    }
}
export class Rerank extends APIResource {
    /** Orders documents by relevance to a query. */
    create(body, options) {
        return this._client.post('/rerank', { body, ...options });
    }
}
export class Tokenizer extends APIResource {
    /** Text to token ids (`POST /v1/tokenize`). */
    tokenize(body, options) {
        return this._client.post('/tokenize', { body, ...options });
    }
    /** Token ids to text (`POST /v1/detokenize`). */
    detokenize(body, options) {
        return this._client.post('/detokenize', { body, ...options });
    }
}
/** OpenAI's completions, plus answers with citations. */
export class Completions extends OpenAICompletions {
    createWithCitations(body, options) {
        return this._client.post('/completions', { body: { citations: true, ...body, stream: false }, ...options });
    }
}
// ------------------------------------------------------------------ models
/** OpenAI's models (list, retrieve, delete), plus comparison and administration. */
export class Models extends OpenAIModels {
    /** Sends one chat request to several models and compares the answers (`POST /v1/models/compare`). */
    compare(body, options) {
        return this._client.post('/models/compare', { body, ...options });
    }
    /** A model with every Sovereign field (backend, status, limits, stats, ...). */
    details(id, options) {
        return this._client.get(`/models/${seg(id)}`, options);
    }
    /** Every model with every Sovereign field. */
    listDetails(options) {
        return this._client.getAPIList('/models', (ListPage), options);
    }
    /** Registers a model (admin). */
    create(id, body, options) {
        return this._client.post(`/models/${seg(id)}`, { body, ...options });
    }
    /** Changes a model's spec (admin). */
    update(id, body, options) {
        return this._client.patch(`/models/${seg(id)}`, { body, ...options });
    }
    /** Starts a model's runner (admin). */
    load(id, options) {
        return this._client.post(`/models/${seg(id)}/load`, options);
    }
    /** Stops a model's runner (admin). */
    unload(id, options) {
        return this._client.post(`/models/${seg(id)}/unload`, options);
    }
}
const CRLF = '\r\n';
function escapeQuoted(s) {
    return s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}
async function bytesOf(b) {
    if (typeof b === 'string')
        return new TextEncoder().encode(b);
    if (b instanceof Uint8Array)
        return b;
    if (b instanceof ArrayBuffer)
        return new Uint8Array(b);
    return new Uint8Array(await b.arrayBuffer());
}
/** Encodes a multipart/form-data body as bytes (so that retries resend the same bytes). */
export async function encodeMultipart(fields, file) {
    const boundary = '----sovereign' + randomId().replace(/[^A-Za-z0-9]/g, '');
    const enc = new TextEncoder();
    const parts = [];
    for (const [k, v] of Object.entries(fields)) {
        if (v === undefined)
            continue;
        parts.push(enc.encode(`--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeQuoted(k)}"${CRLF}${CRLF}${v}${CRLF}`));
    }
    parts.push(enc.encode(`--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeQuoted(file.name)}"; filename="${escapeQuoted(file.filename)}"${CRLF}` +
        `Content-Type: ${file.contentType ?? 'application/octet-stream'}${CRLF}${CRLF}`));
    parts.push(file.data);
    parts.push(enc.encode(`${CRLF}--${boundary}--${CRLF}`));
    const total = parts.reduce((n, p) => n + p.length, 0);
    const body = new Uint8Array(total);
    let off = 0;
    for (const p of parts) {
        body.set(p, off);
        off += p.length;
    }
    return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
/** A ReadableStream over `body` that reports how much of it fetch has read. */
function progressStream(body, onProgress, chunk = 64 * 1024) {
    let off = 0;
    return new ReadableStream({
        pull(controller) {
            if (off >= body.length) {
                controller.close();
                return;
            }
            const end = Math.min(off + chunk, body.length);
            controller.enqueue(body.subarray(off, end));
            off = end;
            onProgress(off, body.length);
        },
    });
}
function retryable(err) {
    if (err instanceof APIConnectionError)
        return true;
    if (err instanceof APIError && typeof err.status === 'number') {
        const s = err.status;
        return s === 408 || s === 409 || s === 429 || s >= 500;
    }
    return false;
}
export class Documents extends APIResource {
    /** Adds a document from text (`POST /v1/collections/{id}/documents`, JSON). */
    create(collectionId, body, options) {
        return this._client.post(`/collections/${seg(collectionId)}/documents`, { body, ...options });
    }
    /**
     * Uploads a file (.txt, .md, .html, .pdf) into a collection (multipart). With
     * `onProgress`, the body is streamed to fetch and progress follows the bytes
     * fetch reads; the upload is retried with the same Idempotency-Key like any create.
     */
    async upload(collectionId, params, options = {}) {
        const data = await bytesOf(params.file);
        const filename = params.filename ?? (typeof Blob !== 'undefined' && params.file instanceof Blob && 'name' in params.file ? String(params.file.name) : 'document.txt');
        const { body, contentType } = await encodeMultipart({
            title: params.title,
            url: params.url,
            metadata: params.metadata === undefined ? undefined : JSON.stringify(params.metadata),
        }, { name: 'file', filename, data });
        const path = `/collections/${seg(collectionId)}/documents`;
        const own = options.headers instanceof Headers ? Object.fromEntries(options.headers.entries()) : options.headers;
        const headers = { 'Content-Type': contentType, ...own };
        if (!params.onProgress) {
            return this._client.post(path, { ...options, headers, body });
        }
        // A streamed body cannot be replayed by the client's own retry loop: retry here,
        // with one idempotency key for every attempt.
        const client = this._client;
        const maxRetries = options.maxRetries ?? client.maxRetries;
        const idempotencyKey = options.idempotencyKey ?? `sov-upload-${randomId()}`;
        for (let attempt = 0;; attempt++) {
            try {
                const doc = await this._client.post(path, {
                    ...options,
                    headers,
                    idempotencyKey,
                    maxRetries: 0,
                    body: progressStream(body, params.onProgress),
                });
                params.onProgress(body.length, body.length);
                return doc;
            }
            catch (err) {
                if (attempt >= maxRetries || !retryable(err))
                    throw err;
                const ra = err instanceof APIError ? Number(err.headers?.get('retry-after')) : NaN;
                const wait = Number.isFinite(ra) && ra >= 0 ? ra * 1000 : Math.min(500 * 2 ** attempt, 8000) * (1 - Math.random() * 0.25);
                await sleep(wait, options.signal);
            }
        }
    }
    list(collectionId, options) {
        return this._client.getAPIList(`/collections/${seg(collectionId)}/documents`, (ListPage), options);
    }
    retrieve(collectionId, documentId, options) {
        return this._client.get(`/collections/${seg(collectionId)}/documents/${seg(documentId)}`, options);
    }
    delete(collectionId, documentId, options) {
        return this._client.delete(`/collections/${seg(collectionId)}/documents/${seg(documentId)}`, options);
    }
    /** Polls a document until it is `ready` or `failed`. */
    waitUntilReady(collectionId, documentId, options) {
        return poll(() => this.retrieve(collectionId, documentId), (d) => d.status !== 'processing', `document ${documentId}`, options);
    }
}
export class Collections extends APIResource {
    documents = new Documents(this._client);
    create(body, options) {
        return this._client.post('/collections', { body, ...options });
    }
    list(options) {
        return this._client.getAPIList('/collections', (ListPage), options);
    }
    retrieve(id, options) {
        return this._client.get(`/collections/${seg(id)}`, options);
    }
    delete(id, options) {
        return this._client.delete(`/collections/${seg(id)}`, options);
    }
    /** Hybrid, vector or keyword search over a collection's chunks. */
    search(id, body, options) {
        return this._client.post(`/collections/${seg(id)}/search`, { body, ...options });
    }
}
export class SourceLinks extends APIResource {
    /** Links from answers to the sources they cited (records). */
    list(query = {}, options) {
        return this._client.getAPIList('/source_links', (SovereignCursorPage), { query, ...options });
    }
}
const TERMINAL_RUN = new Set(['succeeded', 'failed', 'cancelled']);
const TERMINAL_RUN_EVENTS = new Set(['workflow.run.succeeded', 'workflow.run.failed', 'workflow.run.cancelled']);
export class Runs extends APIResource {
    /** Starts a run of a workflow (`POST /v1/workflows/{id}/runs`). */
    create(workflowId, body = {}, options) {
        return this._client.post(`/workflows/${seg(workflowId)}/runs`, { body, ...options });
    }
    list(query = {}, options) {
        return this._client.getAPIList('/workflow_runs', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/workflow_runs/${seg(id)}`, options);
    }
    cancel(id, options) {
        return this._client.post(`/workflow_runs/${seg(id)}/cancel`, options);
    }
    /** Polls a run until it has ended (succeeded, failed or cancelled). */
    wait(id, options) {
        return poll(() => this.retrieve(id), options?.until ?? ((r) => TERMINAL_RUN.has(r.status)), `run ${id}`, options);
    }
    /**
     * The run's events (SSE) from its start — or after `lastEventId` — as an async
     * iterator that ends after the run's last event (also when resumed after it);
     * reconnects with Last-Event-ID if the connection drops.
     */
    events(id, options = {}) {
        return new EventStream((last, signal) => this._client
            .get(`/workflow_runs/${seg(id)}/events`, {
            headers: { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) },
            signal,
        })
            .asResponse(), {
            ...options,
            endsNaturally: true,
            isTerminal: (e) => TERMINAL_RUN_EVENTS.has(e.type),
            // The server keeps a stream resumed after a finished run's last event open
            // (keep-alives only); for a finished run, replay it and skip what was seen.
            replayInstead: async () => TERMINAL_RUN.has((await this.retrieve(id)).status),
        });
    }
}
export class Workflows extends APIResource {
    /** Runs of workflows (also `client.runs`). */
    runs = new Runs(this._client);
    create(body, options) {
        return this._client.post('/workflows', { body, ...options });
    }
    list(query = {}, options) {
        return this._client.getAPIList('/workflows', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/workflows/${seg(id)}`, options);
    }
    update(id, body, options) {
        return this._client.put(`/workflows/${seg(id)}`, { body, ...options });
    }
    delete(id, options) {
        return this._client.delete(`/workflows/${seg(id)}`, options);
    }
    /** Starts a run: the same as `runs.create(id, { input })`. */
    run(id, input = {}, options) {
        return this.runs.create(id, { input }, options);
    }
}
export class Approvals extends APIResource {
    list(query = {}, options) {
        return this._client.getAPIList('/approvals', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/approvals/${seg(id)}`, options);
    }
    /** Approves or rejects (`POST /v1/approvals/{id}`). */
    decide(id, body, options) {
        return this._client.post(`/approvals/${seg(id)}`, { body, ...options });
    }
    approve(id, comment, options) {
        return this.decide(id, comment === undefined ? { decision: 'approve' } : { decision: 'approve', comment }, options);
    }
    reject(id, comment, options) {
        return this.decide(id, comment === undefined ? { decision: 'reject' } : { decision: 'reject', comment }, options);
    }
}
export class Events extends APIResource {
    /**
     * The deployment's event log, live (`GET /v1/events`), as an async iterator.
     * It starts now, or after `lastEventId`; it never ends by itself (reconnecting
     * with Last-Event-ID when the connection drops) — `break` or `close()` to stop.
     */
    stream(params = {}) {
        const { types, team_id, ...opts } = params;
        const query = {};
        if (types?.length)
            query['types'] = types.join(',');
        if (team_id)
            query['team_id'] = team_id;
        return new EventStream((last, signal) => this._client
            .get('/events', {
            query,
            headers: { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) },
            signal,
        })
            .asResponse(), { ...opts, endsNaturally: false });
    }
}
export class Logs extends APIResource {
    /** Request records, newest first (`records:read`). */
    list(query = {}, options) {
        return this._client.getAPIList('/logs', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/logs/${seg(id)}`, options);
    }
    /** Every matching record (NDJSON export), as an async iterator. */
    async *export(query = {}, options) {
        const res = await this._client.get('/logs/export', { query, ...options, headers: { Accept: 'application/x-ndjson' } }).asResponse();
        if (!res.body)
            return;
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        try {
            for (;;) {
                const { value, done } = await reader.read();
                if (value)
                    buf += dec.decode(value, { stream: true });
                let nl;
                while ((nl = buf.indexOf('\n')) >= 0) {
                    const line = buf.slice(0, nl).trim();
                    buf = buf.slice(nl + 1);
                    if (line)
                        yield JSON.parse(line);
                }
                if (done)
                    break;
            }
            if (buf.trim())
                yield JSON.parse(buf);
        }
        finally {
            reader.releaseLock();
            await res.body.cancel().catch(() => { });
        }
    }
    /** Inclusion proof of a record in the transparency log. */
    proof(id, query = {}, options) {
        return this._client.get(`/logs/${seg(id)}/proof`, { query, ...options });
    }
    checkpoints(query = {}, options) {
        return this._client.get('/logs/checkpoints', { query, ...options });
    }
}
export class Usage extends APIResource {
    /** Token and request totals from the records, grouped (`GET /v1/usage`). */
    retrieve(query = {}, options) {
        return this._client.get('/usage', { query, ...options });
    }
}
export class PolicyDecisions extends APIResource {
    list(query = {}, options) {
        return this._client.getAPIList('/policy_decisions', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/policy_decisions/${seg(id)}`, options);
    }
}
export class Policies extends APIResource {
    create(body, options) {
        return this._client.post('/policies', { body, ...options });
    }
    list(options) {
        return this._client.getAPIList('/policies', (ListPage), options);
    }
    retrieve(id, options) {
        return this._client.get(`/policies/${seg(id)}`, options);
    }
    update(id, body, options) {
        return this._client.put(`/policies/${seg(id)}`, { body, ...options });
    }
    delete(id, options) {
        return this._client.delete(`/policies/${seg(id)}`, options);
    }
    /** Dry-runs a policy (stored or inline) against a request without sending it. */
    test(body, options) {
        return this._client.post('/policies/test', { body, ...options });
    }
}
export class LimitRules extends APIResource {
    list(options) {
        return this._client.getAPIList('/limits/rules', (ListPage), options);
    }
    retrieve(scope, subject, options) {
        return this._client.get(`/limits/rules/${seg(scope)}/${seg(subject)}`, options);
    }
    /** Sets (replaces) a rule (`PUT`). */
    set(scope, subject, body, options) {
        return this._client.put(`/limits/rules/${seg(scope)}/${seg(subject)}`, { body, ...options });
    }
    delete(scope, subject, options) {
        return this._client.delete(`/limits/rules/${seg(scope)}/${seg(subject)}`, options);
    }
}
export class Limits extends APIResource {
    rules = new LimitRules(this._client);
    /** The caller's current limits and what remains of them (`GET /v1/limits`). */
    retrieve(options) {
        return this._client.get('/limits', options);
    }
}
export class WebhookDeliveries extends APIResource {
    list(webhookId, query = {}, options) {
        return this._client.getAPIList(`/webhooks/${seg(webhookId)}/deliveries`, (SovereignCursorPage), { query, ...options });
    }
    retrieve(webhookId, deliveryId, options) {
        return this._client.get(`/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}`, options);
    }
    /** Sends a delivery's message again (same webhook-id). */
    redeliver(webhookId, deliveryId, options) {
        return this._client.post(`/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/redeliver`, options);
    }
}
/**
 * Webhook endpoints (CRUD, secret rotation, deliveries) and Standard Webhooks
 * verification. Extends openai's webhooks resource: `unwrap` and
 * `verifySignature` keep their signatures, with Sovereign's scheme.
 */
export class Webhooks extends OpenAIWebhooks {
    deliveries = new WebhookDeliveries(this._client);
    create(body, options) {
        return this._client.post('/webhooks', { body, ...options });
    }
    list(query = {}, options) {
        return this._client.getAPIList('/webhooks', (SovereignCursorPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/webhooks/${seg(id)}`, options);
    }
    update(id, body, options) {
        return this._client.patch(`/webhooks/${seg(id)}`, { body, ...options });
    }
    delete(id, options) {
        return this._client.delete(`/webhooks/${seg(id)}`, options);
    }
    /** New secret; the old one keeps signing (second signature) for `grace_period_seconds`. */
    rotateSecret(id, body = {}, options) {
        return this._client.post(`/webhooks/${seg(id)}/rotate_secret`, { body, ...options });
    }
    secretOr(secret) {
        const s = secret ?? this._client.webhookSecret;
        if (!s)
            throw new Error('no webhook secret: pass one, or set webhookSecret / SOVEREIGN_WEBHOOK_SECRET');
        return s;
    }
    /**
     * Verifies a delivery (Standard Webhooks: webhook-id, webhook-timestamp within
     * `tolerance` seconds, webhook-signature). Throws WebhookVerificationError.
     * `payload` is the raw body as received. `secret` defaults to the client's webhookSecret.
     */
    async verify(payload, headers, secret, tolerance) {
        return verifyWebhook(payload, headers, this.secretOr(secret), tolerance);
    }
    async verifySignature(payload, headers, secret, tolerance) {
        return this.verify(payload, headers, secret, tolerance);
    }
    /** Verifies, then parses the event. */
    async unwrap(payload, headers, secret, tolerance) {
        return unwrapWebhook(payload, headers, this.secretOr(secret), tolerance);
    }
}
// ------------------------------------------------------------------ keys & teams
export class Keys extends APIResource {
    /** Creates a key; the secret (`key`) is in this response only. */
    create(body, options) {
        return this._client.post('/keys', { body, ...options });
    }
    list(query = {}, options) {
        return this._client.getAPIList('/keys', (ListPage), { query, ...options });
    }
    retrieve(id, options) {
        return this._client.get(`/keys/${seg(id)}`, options);
    }
    /** Revokes a key (`DELETE /v1/keys/{id}`). */
    revoke(id, options) {
        return this._client.delete(`/keys/${seg(id)}`, options);
    }
    /** A new secret for the key; the old one works for `grace_seconds`. */
    rotate(id, body = {}, options) {
        return this._client.post(`/keys/${seg(id)}/rotate`, { body, ...options });
    }
}
export class Teams extends APIResource {
    create(body, options) {
        return this._client.post('/teams', { body, ...options });
    }
    list(options) {
        return this._client.getAPIList('/teams', (ListPage), options);
    }
    /** Turns prompt/output capture in the records on or off for a team. */
    update(id, body, options) {
        return this._client.patch(`/teams/${seg(id)}`, { body, ...options });
    }
}
