import { OpenAI, type ClientOptions as OpenAIClientOptions } from 'openai';
import { Approvals, Collections, Completions, Documents, Events, Keys, Limits, Logs, Models, Policies, PolicyDecisions, Rerank, Runs, SourceLinks, Teams, Tokenizer, Usage, Webhooks, Workflows } from './resources.js';
import { BatchHelper } from './batch.js';
export declare const DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1";
export declare const VERSION = "0.1.0";
/**
 * Reads an environment variable from `process.env`, only where `globalThis.process`
 * exists (Node, Bun, Deno 2); in other runtimes pass the options explicitly.
 */
export declare function readEnv(name: string): string | undefined;
export interface ClientOptions extends Omit<OpenAIClientOptions, 'apiKey' | 'baseURL' | 'organization' | 'project' | 'adminAPIKey' | 'workloadIdentity' | 'provider' | 'webhookSecret'> {
    /** Defaults to `process.env.SOVEREIGN_API_KEY` (where `process` exists). */
    apiKey?: string | (() => Promise<string>) | null | undefined;
    /** Defaults to `process.env.SOVEREIGN_BASE_URL`, then http://127.0.0.1:8080/v1. */
    baseURL?: string | null | undefined;
    /** Secret for `webhooks.verify/unwrap`; defaults to `process.env.SOVEREIGN_WEBHOOK_SECRET`. */
    webhookSecret?: string | null | undefined;
    /**
     * A 429 whose `Retry-After` is longer than this many seconds is not retried
     * (the error, with `retryAfter`, is raised at once). Default 60.
     */
    maxRetryAfter?: number | undefined;
}
/**
 * The Sovereign client: the official OpenAI client (every OpenAI resource,
 * type, streaming helper and error class unchanged) configured for Sovereign,
 * plus Sovereign's own resources. Every non-GET request carries an
 * `Idempotency-Key`, the same on each retry, so a retried create returns the
 * object the first attempt created.
 */
export declare class Sovereign extends OpenAI {
    completions: Completions;
    models: Models;
    webhooks: Webhooks;
    rerank: Rerank;
    tokenizer: Tokenizer;
    collections: Collections;
    /** The documents of collections (also `collections.documents`). */
    documents: Documents;
    sourceLinks: SourceLinks;
    workflows: Workflows;
    /** Workflow runs (also `workflows.runs`). */
    runs: Runs;
    approvals: Approvals;
    events: Events;
    logs: Logs;
    policyDecisions: PolicyDecisions;
    policies: Policies;
    limits: Limits;
    usage: Usage;
    keys: Keys;
    teams: Teams;
    /** Batch workloads: bounded concurrency (`chat`, `embeddings`) or the Batch API (`runChat`, `runEmbeddings`). */
    batch: BatchHelper;
    constructor(options?: ClientOptions);
    protected defaultIdempotencyKey(): string;
    protected makeStatusError(status: number, error: Object, message: string | undefined, headers: Headers): import("openai").APIError<number | undefined, Headers | undefined, Object | undefined>;
    /** Creates a client with the same options, some overridden. */
    withOptions(options: Partial<ClientOptions>): this;
}
