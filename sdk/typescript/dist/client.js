import { OpenAI } from 'openai';
import { OpenAIError } from 'openai/core/error';
import { makeSovereignError, parseRetryAfter } from './errors.js';
import { Approvals, Collections, Completions, Events, Keys, Limits, Logs, Models, Policies, PolicyDecisions, Rerank, SourceLinks, Teams, Tokenizer, Usage, Webhooks, Workflows, } from './resources.js';
import { BatchHelper } from './batch.js';
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/v1';
export const VERSION = '0.1.0';
/**
 * Reads an environment variable from `process.env`, only where `globalThis.process`
 * exists (Node, Bun, Deno 2); in other runtimes pass the options explicitly.
 */
export function readEnv(name) {
    const g = globalThis;
    if (typeof g.process === 'undefined')
        return undefined;
    try {
        return g.process.env?.[name]?.trim() || undefined;
    }
    catch {
        return undefined; // an environment that refuses access (e.g. Deno without --allow-env)
    }
}
/**
 * Wraps fetch so that a 429 that no retry can fix — a spent daily or monthly
 * quota (`quota_exceeded`), or a `Retry-After` beyond `maxRetryAfter` — is
 * marked `x-should-retry: false`, which the OpenAI client honours: it raises the
 * error instead of sleeping until midnight.
 */
function quotaAwareFetch(inner, maxRetryAfter) {
    return (async (url, init) => {
        const f = inner ?? globalThis.fetch;
        const res = (await f(url, init));
        if (res.status !== 429 || res.headers.has('x-should-retry'))
            return res;
        let final = false;
        const wait = parseRetryAfter(res.headers);
        if (wait !== undefined && wait > maxRetryAfter)
            final = true;
        if (!final) {
            try {
                const body = (await res.clone().json());
                final = body?.error?.code === 'quota_exceeded' || body?.error?.type === 'insufficient_quota';
            }
            catch {
                // not JSON: leave the decision to the client
            }
        }
        if (!final)
            return res;
        const headers = new Headers(res.headers);
        headers.set('x-should-retry', 'false');
        return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    });
}
const LOG_LEVELS = new Set(['off', 'error', 'warn', 'info', 'debug']);
/**
 * The Sovereign client: the official OpenAI client (every OpenAI resource,
 * type, streaming helper and error class unchanged) configured for Sovereign,
 * plus Sovereign's own resources. Every non-GET request carries an
 * `Idempotency-Key`, the same on each retry, so a retried create returns the
 * object the first attempt created.
 */
export class Sovereign extends OpenAI {
    completions = new Completions(this);
    models = new Models(this);
    webhooks = new Webhooks(this);
    rerank = new Rerank(this);
    tokenizer = new Tokenizer(this);
    collections = new Collections(this);
    /** The documents of collections (also `collections.documents`). */
    documents = this.collections.documents;
    sourceLinks = new SourceLinks(this);
    workflows = new Workflows(this);
    /** Workflow runs (also `workflows.runs`). */
    runs = this.workflows.runs;
    approvals = new Approvals(this);
    events = new Events(this);
    logs = new Logs(this);
    policyDecisions = new PolicyDecisions(this);
    policies = new Policies(this);
    limits = new Limits(this);
    usage = new Usage(this);
    keys = new Keys(this);
    teams = new Teams(this);
    /** Batch workloads: bounded concurrency (`chat`, `embeddings`) or the Batch API (`runChat`, `runEmbeddings`). */
    batch = new BatchHelper(this);
    constructor(options = {}) {
        const apiKey = options.apiKey ?? readEnv('SOVEREIGN_API_KEY');
        if (!apiKey) {
            throw new OpenAIError('Missing API key: pass `apiKey` or set the SOVEREIGN_API_KEY environment variable.');
        }
        const envLog = readEnv('SOVEREIGN_LOG');
        const { maxRetryAfter = 60, ...rest } = options;
        super({
            ...rest,
            fetch: quotaAwareFetch(options.fetch, maxRetryAfter),
            apiKey,
            baseURL: options.baseURL ?? readEnv('SOVEREIGN_BASE_URL') ?? DEFAULT_BASE_URL,
            // Explicit values, so that no OPENAI_* variable leaks in.
            organization: null,
            project: null,
            adminAPIKey: null,
            webhookSecret: options.webhookSecret ?? readEnv('SOVEREIGN_WEBHOOK_SECRET') ?? null,
            logLevel: options.logLevel ?? (envLog && LOG_LEVELS.has(envLog) ? envLog : 'warn'),
        });
        // openai adds OPENAI_CUSTOM_HEADERS to the default headers: keep only the caller's.
        // withOptions() builds the copy from _options: keep the caller's fetch and maxRetryAfter there.
        this._options = { ...this._options, defaultHeaders: options.defaultHeaders, fetch: options.fetch, maxRetryAfter };
        this.idempotencyHeader = 'Idempotency-Key';
    }
    defaultIdempotencyKey() {
        const c = globalThis.crypto;
        if (c?.randomUUID)
            return `sov-${c.randomUUID()}`;
        return `sov-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    }
    makeStatusError(status, error, message, headers) {
        return makeSovereignError(status, error, message, headers);
    }
    /** Creates a client with the same options, some overridden. */
    withOptions(options) {
        return super.withOptions(options);
    }
}
