import { OpenAI, type ClientOptions as OpenAIClientOptions } from 'openai';
import { OpenAIError } from 'openai/core/error';
import { makeSovereignError, parseRetryAfter } from './errors.js';
import {
  Approvals, Collections, Completions, Documents, Events, Keys, Limits, Logs, Models, Policies,
  PolicyDecisions, Rerank, Runs, SourceLinks, Teams, Tokenizer, Usage, Webhooks, Workflows,
} from './resources.js';
import { BatchHelper } from './batch.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/v1';
export const VERSION = '0.1.0';

/**
 * Reads an environment variable from `process.env`, only where `globalThis.process`
 * exists (Node, Bun, Deno 2); in other runtimes pass the options explicitly.
 */
export function readEnv(name: string): string | undefined {
  const g = globalThis as { process?: { env?: Record<string, string | undefined> } };
  if (typeof g.process === 'undefined') return undefined;
  try {
    return g.process.env?.[name]?.trim() || undefined;
  } catch {
    return undefined; // an environment that refuses access (e.g. Deno without --allow-env)
  }
}

export interface ClientOptions
  extends Omit<OpenAIClientOptions, 'apiKey' | 'baseURL' | 'organization' | 'project' | 'adminAPIKey' | 'workloadIdentity' | 'provider' | 'webhookSecret'> {
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

type Fetch = NonNullable<OpenAIClientOptions['fetch']>;

/**
 * Wraps fetch so that a 429 that no retry can fix — a spent daily or monthly
 * quota (`quota_exceeded`), or a `Retry-After` beyond `maxRetryAfter` — is
 * marked `x-should-retry: false`, which the OpenAI client honours: it raises the
 * error instead of sleeping until midnight.
 */
function quotaAwareFetch(inner: Fetch | undefined, maxRetryAfter: number): Fetch {
  return (async (url: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const f: Fetch = inner ?? (globalThis.fetch as unknown as Fetch);
    const res = (await f(url, init)) as unknown as Response;
    if (res.status !== 429 || res.headers.has('x-should-retry')) return res;
    let final = false;
    const wait = parseRetryAfter(res.headers);
    if (wait !== undefined && wait > maxRetryAfter) final = true;
    if (!final) {
      try {
        const body = (await res.clone().json()) as { error?: { code?: unknown; type?: unknown } };
        final = body?.error?.code === 'quota_exceeded' || body?.error?.type === 'insufficient_quota';
      } catch {
        // not JSON: leave the decision to the client
      }
    }
    if (!final) return res;
    const headers = new Headers(res.headers);
    headers.set('x-should-retry', 'false');
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }) as unknown as Fetch;
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
  override completions: Completions = new Completions(this);
  override models: Models = new Models(this);
  override webhooks: Webhooks = new Webhooks(this);
  rerank: Rerank = new Rerank(this);
  tokenizer: Tokenizer = new Tokenizer(this);
  collections: Collections = new Collections(this);
  /** The documents of collections (also `collections.documents`). */
  documents: Documents = this.collections.documents;
  sourceLinks: SourceLinks = new SourceLinks(this);
  workflows: Workflows = new Workflows(this);
  /** Workflow runs (also `workflows.runs`). */
  runs: Runs = this.workflows.runs;
  approvals: Approvals = new Approvals(this);
  events: Events = new Events(this);
  logs: Logs = new Logs(this);
  policyDecisions: PolicyDecisions = new PolicyDecisions(this);
  policies: Policies = new Policies(this);
  limits: Limits = new Limits(this);
  usage: Usage = new Usage(this);
  keys: Keys = new Keys(this);
  teams: Teams = new Teams(this);
  /** Batch workloads: bounded concurrency (`chat`, `embeddings`) or the Batch API (`runChat`, `runEmbeddings`). */
  batch: BatchHelper = new BatchHelper(this);

  constructor(options: ClientOptions = {}) {
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
      logLevel: options.logLevel ?? (envLog && LOG_LEVELS.has(envLog) ? (envLog as OpenAIClientOptions['logLevel']) : 'warn'),
    });
    // openai adds OPENAI_CUSTOM_HEADERS to the default headers: keep only the caller's.
    // withOptions() builds the copy from _options: keep the caller's fetch and maxRetryAfter there.
    this._options = { ...this._options, defaultHeaders: options.defaultHeaders, fetch: options.fetch, maxRetryAfter } as typeof this._options;
    this.idempotencyHeader = 'Idempotency-Key';
  }

  protected override defaultIdempotencyKey(): string {
    const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
    if (c?.randomUUID) return `sov-${c.randomUUID()}`;
    return `sov-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  }

  protected override makeStatusError(status: number, error: Object, message: string | undefined, headers: Headers) {
    return makeSovereignError(status, error, message, headers);
  }

  /** Creates a client with the same options, some overridden. */
  override withOptions(options: Partial<ClientOptions>): this {
    return super.withOptions(options as Partial<OpenAIClientOptions>);
  }
}
