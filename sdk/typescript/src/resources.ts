// Sovereign's own resources, in the official client's style: each method is a
// thin call of the client's get/post/put/patch/delete, so retries, timeouts,
// idempotency keys, typed errors and per-call options all come from the client.
import { APIResource } from 'openai/core/resource';
import { CursorPage, Page, type CursorPageParams, type PagePromise } from 'openai/core/pagination';
import type { APIPromise } from 'openai/core/api-promise';
import { Models as OpenAIModels } from 'openai/resources/models';
import { Completions as OpenAICompletions } from 'openai/resources/completions';
import { Webhooks as OpenAIWebhooks } from 'openai/resources/webhooks/webhooks';
import type { OpenAI } from 'openai';
import { APIConnectionError, APIError } from 'openai/core/error';
import { EventStream, type EventStreamOptions } from './sse.js';
import { unwrapWebhook, verifyWebhook, type WebhookHeaders, type WebhookPayload } from './webhooks.js';
import type * as T from './types.js';

/** Per-call options: `timeout`, `maxRetries`, `headers`, `signal`, `idempotencyKey`, ... (openai's RequestOptions). */
export type RequestOptions = NonNullable<Parameters<OpenAIModels['retrieve']>[1]>;

const seg = (s: string): string => encodeURIComponent(s);

function randomId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
}

/** `{ object: "list", data }` lists that come in one page. */
export class ListPage<Item> extends Page<Item> {}
/** Cursor lists (`has_more`, `last_id`; `?after=&limit=`): `for await` walks every page. */
export class SovereignCursorPage<Item extends { id: string }> extends CursorPage<Item> {
  first_id?: string | null;
  last_id?: string | null;
}

const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason ?? new Error('aborted')); }, { once: true });
  });

/** Options of the polling helpers (`waitUntilReady`, `runs.wait`). */
export interface PollOptions {
  /** Milliseconds between polls. Default 500. */
  pollInterval?: number;
  /** Give up after this many milliseconds. Default 10 minutes. */
  timeout?: number;
  signal?: AbortSignal | null;
}

async function poll<R>(get: () => Promise<R>, done: (r: R) => boolean, what: string, o: PollOptions = {}): Promise<R> {
  const deadline = Date.now() + (o.timeout ?? 600_000);
  for (;;) {
    const r = await get();
    if (done(r)) return r;
    if (Date.now() > deadline) throw new APIConnectionError({ message: `timed out waiting for ${what}` });
    await sleep(o.pollInterval ?? 500, o.signal);
  }
}

// ------------------------------------------------------------------ inference
/** The rerank request (`POST /v1/rerank`). */
export type RerankParams = T.RerankRequest;
export class Rerank extends APIResource {
  /** Orders documents by relevance to a query. */
  create(body: RerankParams, options?: RequestOptions): APIPromise<T.RerankResponse> {
    return this._client.post('/rerank', { body, ...options });
  }
}

export class Tokenizer extends APIResource {
  /** Text to token ids (`POST /v1/tokenize`). */
  tokenize(body: T.TokenizeRequest, options?: RequestOptions): APIPromise<T.TokenizeResponse> {
    return this._client.post('/tokenize', { body, ...options });
  }
  /** Token ids to text (`POST /v1/detokenize`). */
  detokenize(body: T.DetokenizeRequest, options?: RequestOptions): APIPromise<T.DetokenizeResponse> {
    return this._client.post('/detokenize', { body, ...options });
  }
}

/** Parameters of an answer drawn from sources (`POST /v1/completions` with `citations`/`sources`). */
export interface CitedCompletionParamsBase {
  model: string;
  citations?: boolean;
  sources?: T.SourcesParam;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  stop?: string | string[];
  user?: string;
  [extra: string]: unknown;
}
export interface CitedChatParams extends CitedCompletionParamsBase {
  messages: Array<{ role: 'system' | 'developer' | 'user' | 'assistant'; content: string }>;
}
export interface CitedPromptParams extends CitedCompletionParamsBase {
  prompt: string;
}

/** OpenAI's completions, plus answers with citations. */
export class Completions extends OpenAICompletions {
  /**
   * An answer drawn from collections and inline documents, with `[n]` markers and
   * `citations` (docs/sources.md). `messages` → a chat.completion, `prompt` → a text_completion.
   */
  createWithCitations(body: CitedChatParams, options?: RequestOptions): APIPromise<T.CitedChatCompletion>;
  createWithCitations(body: CitedPromptParams, options?: RequestOptions): APIPromise<T.CitedTextCompletion>;
  createWithCitations(
    body: CitedChatParams | CitedPromptParams,
    options?: RequestOptions,
  ): APIPromise<T.CitedChatCompletion | T.CitedTextCompletion> {
    return this._client.post('/completions', { body: { citations: true, ...body, stream: false }, ...options });
  }
}

// ------------------------------------------------------------------ models
/** OpenAI's models (list, retrieve, delete), plus comparison and administration. */
export class Models extends OpenAIModels {
  /** Sends one chat request to several models and compares the answers (`POST /v1/models/compare`). */
  compare(body: T.CompareRequest, options?: RequestOptions): APIPromise<T.ModelComparison> {
    return this._client.post('/models/compare', { body, ...options });
  }
  /** A model with every Sovereign field (backend, status, limits, stats, ...). */
  details(id: string, options?: RequestOptions): APIPromise<T.SovereignModel> {
    return this._client.get(`/models/${seg(id)}`, options);
  }
  /** Every model with every Sovereign field. */
  listDetails(options?: RequestOptions): PagePromise<ListPage<T.SovereignModel>, T.SovereignModel> {
    return this._client.getAPIList('/models', ListPage<T.SovereignModel>, options);
  }
  /** Registers a model (admin). */
  create(id: string, body: Omit<T.ModelSpec, 'id'>, options?: RequestOptions): APIPromise<T.SovereignModel> {
    return this._client.post(`/models/${seg(id)}`, { body, ...options });
  }
  /** Changes a model's spec (admin). */
  update(id: string, body: T.ModelPatch, options?: RequestOptions): APIPromise<T.SovereignModel> {
    return this._client.patch(`/models/${seg(id)}`, { body, ...options });
  }
  /** Starts a model's runner (admin). */
  load(id: string, options?: RequestOptions): APIPromise<T.SovereignModel> {
    return this._client.post(`/models/${seg(id)}/load`, options);
  }
  /** Stops a model's runner (admin). */
  unload(id: string, options?: RequestOptions): APIPromise<T.SovereignModel> {
    return this._client.post(`/models/${seg(id)}/unload`, options);
  }
}

// ------------------------------------------------------------------ collections & documents
export type UploadBody = Blob | Uint8Array | ArrayBuffer | string;

/** Parameters of a document upload (multipart). */
export interface DocumentUploadParams {
  /** The file's bytes (a string is sent as UTF-8 text). */
  file: UploadBody;
  /** File name; its extension picks the format (.txt, .md, .html, .pdf). Default: the Blob's name, else "document.txt". */
  filename?: string;
  title?: string;
  url?: string;
  metadata?: Record<string, unknown>;
  /** Called as the body is sent: (bytes sent so far, total bytes). */
  onProgress?: (loaded: number, total: number) => void;
}

const CRLF = '\r\n';

function escapeQuoted(s: string): string {
  return s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

async function bytesOf(b: UploadBody): Promise<Uint8Array> {
  if (typeof b === 'string') return new TextEncoder().encode(b);
  if (b instanceof Uint8Array) return b;
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  return new Uint8Array(await b.arrayBuffer());
}

/** Encodes a multipart/form-data body as bytes (so that retries resend the same bytes). */
export async function encodeMultipart(
  fields: Record<string, string | undefined>,
  file: { name: string; filename: string; data: Uint8Array; contentType?: string },
): Promise<{ body: Uint8Array; contentType: string }> {
  const boundary = '----sovereign' + randomId().replace(/[^A-Za-z0-9]/g, '');
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    parts.push(enc.encode(`--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeQuoted(k)}"${CRLF}${CRLF}${v}${CRLF}`));
  }
  parts.push(
    enc.encode(
      `--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeQuoted(file.name)}"; filename="${escapeQuoted(file.filename)}"${CRLF}` +
        `Content-Type: ${file.contentType ?? 'application/octet-stream'}${CRLF}${CRLF}`,
    ),
  );
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
function progressStream(body: Uint8Array, onProgress: (loaded: number, total: number) => void, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream<Uint8Array>({
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

function retryable(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true;
  if (err instanceof APIError && typeof err.status === 'number') {
    const s = err.status;
    return s === 408 || s === 409 || s === 429 || s >= 500;
  }
  return false;
}

export class Documents extends APIResource {
  /** Adds a document from text (`POST /v1/collections/{id}/documents`, JSON). */
  create(collectionId: string, body: T.CreateDocumentRequest, options?: RequestOptions): APIPromise<T.Document> {
    return this._client.post(`/collections/${seg(collectionId)}/documents`, { body, ...options });
  }

  /**
   * Uploads a file (.txt, .md, .html, .pdf) into a collection (multipart). With
   * `onProgress`, the body is streamed to fetch and progress follows the bytes
   * fetch reads; the upload is retried with the same Idempotency-Key like any create.
   */
  async upload(collectionId: string, params: DocumentUploadParams, options: RequestOptions = {}): Promise<T.Document> {
    const data = await bytesOf(params.file);
    const filename =
      params.filename ?? (typeof Blob !== 'undefined' && params.file instanceof Blob && 'name' in params.file ? String((params.file as { name: unknown }).name) : 'document.txt');
    const { body, contentType } = await encodeMultipart(
      {
        title: params.title,
        url: params.url,
        metadata: params.metadata === undefined ? undefined : JSON.stringify(params.metadata),
      },
      { name: 'file', filename, data },
    );
    const path = `/collections/${seg(collectionId)}/documents`;
    const own = options.headers instanceof Headers ? Object.fromEntries(options.headers.entries()) : (options.headers as Record<string, string> | undefined);
    const headers = { 'Content-Type': contentType, ...own };
    if (!params.onProgress) {
      return this._client.post(path, { ...options, headers, body });
    }
    // A streamed body cannot be replayed by the client's own retry loop: retry here,
    // with one idempotency key for every attempt.
    const client = this._client as OpenAI & { maxRetries: number };
    const maxRetries = options.maxRetries ?? client.maxRetries;
    const idempotencyKey = options.idempotencyKey ?? `sov-upload-${randomId()}`;
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await this._client.post<T.Document>(path, {
          ...options,
          headers,
          idempotencyKey,
          maxRetries: 0,
          body: progressStream(body, params.onProgress),
        });
        params.onProgress(body.length, body.length);
        return doc;
      } catch (err) {
        if (attempt >= maxRetries || !retryable(err)) throw err;
        const ra = err instanceof APIError ? Number(err.headers?.get('retry-after')) : NaN;
        const wait = Number.isFinite(ra) && ra >= 0 ? ra * 1000 : Math.min(500 * 2 ** attempt, 8000) * (1 - Math.random() * 0.25);
        await sleep(wait, options.signal);
      }
    }
  }

  list(collectionId: string, options?: RequestOptions): PagePromise<ListPage<T.Document>, T.Document> {
    return this._client.getAPIList(`/collections/${seg(collectionId)}/documents`, ListPage<T.Document>, options);
  }
  retrieve(collectionId: string, documentId: string, options?: RequestOptions): APIPromise<T.Document> {
    return this._client.get(`/collections/${seg(collectionId)}/documents/${seg(documentId)}`, options);
  }
  delete(collectionId: string, documentId: string, options?: RequestOptions): APIPromise<T.DeletedDocument> {
    return this._client.delete(`/collections/${seg(collectionId)}/documents/${seg(documentId)}`, options);
  }
  /** Polls a document until it is `ready` or `failed`. */
  waitUntilReady(collectionId: string, documentId: string, options?: PollOptions): Promise<T.Document> {
    return poll(() => this.retrieve(collectionId, documentId), (d) => d.status !== 'processing', `document ${documentId}`, options);
  }
}

export class Collections extends APIResource {
  documents: Documents = new Documents(this._client);
  create(body: T.CreateCollectionRequest, options?: RequestOptions): APIPromise<T.Collection> {
    return this._client.post('/collections', { body, ...options });
  }
  list(options?: RequestOptions): PagePromise<ListPage<T.Collection>, T.Collection> {
    return this._client.getAPIList('/collections', ListPage<T.Collection>, options);
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.Collection> {
    return this._client.get(`/collections/${seg(id)}`, options);
  }
  delete(id: string, options?: RequestOptions): APIPromise<T.DeletedCollection> {
    return this._client.delete(`/collections/${seg(id)}`, options);
  }
  /** Hybrid, vector or keyword search over a collection's chunks. */
  search(id: string, body: T.SearchRequest, options?: RequestOptions): APIPromise<T.SearchResultList> {
    return this._client.post(`/collections/${seg(id)}/search`, { body, ...options });
  }
}

export interface SourceLinkListParams extends CursorPageParams {
  response_id?: string;
  document_id?: string;
  collection_id?: string;
  created_after?: number;
  created_before?: number;
}
export class SourceLinks extends APIResource {
  /** Links from answers to the sources they cited (records). */
  list(query: SourceLinkListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.SourceLink>, T.SourceLink> {
    return this._client.getAPIList('/source_links', SovereignCursorPage<T.SourceLink>, { query, ...options });
  }
}

// ------------------------------------------------------------------ workflows, runs, approvals, events
export interface WorkflowRunListParams extends CursorPageParams {
  workflow_id?: string;
  status?: string;
}
export interface RunEventsOptions extends EventStreamOptions {}

const TERMINAL_RUN = new Set(['succeeded', 'failed', 'cancelled']);
const TERMINAL_RUN_EVENTS = new Set(['workflow.run.succeeded', 'workflow.run.failed', 'workflow.run.cancelled']);

export class Runs extends APIResource {
  /** Starts a run of a workflow (`POST /v1/workflows/{id}/runs`). */
  create(workflowId: string, body: T.WorkflowRunRequest = {}, options?: RequestOptions): APIPromise<T.WorkflowRun> {
    return this._client.post(`/workflows/${seg(workflowId)}/runs`, { body, ...options });
  }
  list(query: WorkflowRunListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.WorkflowRun>, T.WorkflowRun> {
    return this._client.getAPIList('/workflow_runs', SovereignCursorPage<T.WorkflowRun>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.WorkflowRun> {
    return this._client.get(`/workflow_runs/${seg(id)}`, options);
  }
  cancel(id: string, options?: RequestOptions): APIPromise<T.WorkflowRun> {
    return this._client.post(`/workflow_runs/${seg(id)}/cancel`, options);
  }
  /** Polls a run until it has ended (succeeded, failed or cancelled). */
  wait(id: string, options?: PollOptions & { until?: (run: T.WorkflowRun) => boolean }): Promise<T.WorkflowRun> {
    return poll(() => this.retrieve(id), options?.until ?? ((r) => TERMINAL_RUN.has(r.status)), `run ${id}`, options);
  }
  /**
   * The run's events (SSE) from its start — or after `lastEventId` — as an async
   * iterator that ends after the run's last event (also when resumed after it);
   * reconnects with Last-Event-ID if the connection drops.
   */
  events(id: string, options: RunEventsOptions = {}): EventStream<T.SovereignEvent> {
    return new EventStream<T.SovereignEvent>(
      (last, signal) =>
        this._client
          .get(`/workflow_runs/${seg(id)}/events`, {
            headers: { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) },
            signal,
          })
          .asResponse(),
      {
        ...options,
        endsNaturally: true,
        isTerminal: (e) => TERMINAL_RUN_EVENTS.has(e.type),
        // The server keeps a stream resumed after a finished run's last event open
        // (keep-alives only); for a finished run, replay it and skip what was seen.
        replayInstead: async () => TERMINAL_RUN.has((await this.retrieve(id)).status),
      },
    );
  }
}

export class Workflows extends APIResource {
  /** Runs of workflows (also `client.runs`). */
  runs: Runs = new Runs(this._client);
  create(body: T.WorkflowWrite, options?: RequestOptions): APIPromise<T.Workflow> {
    return this._client.post('/workflows', { body, ...options });
  }
  list(query: CursorPageParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Workflow>, T.Workflow> {
    return this._client.getAPIList('/workflows', SovereignCursorPage<T.Workflow>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.Workflow> {
    return this._client.get(`/workflows/${seg(id)}`, options);
  }
  update(id: string, body: T.WorkflowWrite, options?: RequestOptions): APIPromise<T.Workflow> {
    return this._client.put(`/workflows/${seg(id)}`, { body, ...options });
  }
  delete(id: string, options?: RequestOptions): APIPromise<{ id: string; object: string; deleted: boolean }> {
    return this._client.delete(`/workflows/${seg(id)}`, options);
  }
  /** Starts a run: the same as `runs.create(id, { input })`. */
  run(id: string, input: Record<string, unknown> = {}, options?: RequestOptions): APIPromise<T.WorkflowRun> {
    return this.runs.create(id, { input }, options);
  }
}

export interface ApprovalListParams extends CursorPageParams {
  status?: 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled' | (string & {});
}
export class Approvals extends APIResource {
  list(query: ApprovalListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Approval>, T.Approval> {
    return this._client.getAPIList('/approvals', SovereignCursorPage<T.Approval>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.Approval> {
    return this._client.get(`/approvals/${seg(id)}`, options);
  }
  /** Approves or rejects (`POST /v1/approvals/{id}`). */
  decide(id: string, body: T.ApprovalDecision, options?: RequestOptions): APIPromise<T.Approval> {
    return this._client.post(`/approvals/${seg(id)}`, { body, ...options });
  }
  approve(id: string, comment?: string, options?: RequestOptions): APIPromise<T.Approval> {
    return this.decide(id, comment === undefined ? { decision: 'approve' } : { decision: 'approve', comment }, options);
  }
  reject(id: string, comment?: string, options?: RequestOptions): APIPromise<T.Approval> {
    return this.decide(id, comment === undefined ? { decision: 'reject' } : { decision: 'reject', comment }, options);
  }
}

export interface EventStreamParams extends EventStreamOptions {
  /** Only these event types. */
  types?: string[];
  /** Admin keys: one team's events (and the deployment's). */
  team_id?: string;
}
export class Events extends APIResource {
  /**
   * The deployment's event log, live (`GET /v1/events`), as an async iterator.
   * It starts now, or after `lastEventId`; it never ends by itself (reconnecting
   * with Last-Event-ID when the connection drops) — `break` or `close()` to stop.
   */
  stream(params: EventStreamParams = {}): EventStream<T.SovereignEvent> {
    const { types, team_id, ...opts } = params;
    const query: Record<string, string> = {};
    if (types?.length) query['types'] = types.join(',');
    if (team_id) query['team_id'] = team_id;
    return new EventStream<T.SovereignEvent>(
      (last, signal) =>
        this._client
          .get('/events', {
            query,
            headers: { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) },
            signal,
          })
          .asResponse(),
      { ...opts, endsNaturally: false },
    );
  }
}

// ------------------------------------------------------------------ records & governance
export interface LogListParams extends CursorPageParams {
  since?: number;
  until?: number;
  model?: string;
  key_id?: string;
  route?: string;
  user?: string;
  status?: number;
  team_id?: string;
}
export interface LogProof {
  object: 'log.inclusion_proof';
  id: string;
  seq: number;
  leaf_index: number;
  leaf_hash: string;
  tree_size: number;
  root: string;
  proof: string[];
  checkpoint?: number | null;
  hasher?: string;
}
export interface LogCheckpoint {
  object: 'log.checkpoint';
  id: number;
  created_at: number;
  first_seq: number;
  last_seq: number;
  tree_size: number;
  root: string;
}
export class Logs extends APIResource {
  /** Request records, newest first (`records:read`). */
  list(query: LogListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.RequestLog>, T.RequestLog> {
    return this._client.getAPIList('/logs', SovereignCursorPage<T.RequestLog>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.RequestLog> {
    return this._client.get(`/logs/${seg(id)}`, options);
  }
  /** Every matching record (NDJSON export), as an async iterator. */
  async *export(query: Omit<LogListParams, 'after' | 'limit'> = {}, options?: RequestOptions): AsyncGenerator<T.RequestLog> {
    const res = await this._client.get('/logs/export', { query, ...options, headers: { Accept: 'application/x-ndjson' } }).asResponse();
    if (!res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (value) buf += dec.decode(value, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) yield JSON.parse(line) as T.RequestLog;
        }
        if (done) break;
      }
      if (buf.trim()) yield JSON.parse(buf) as T.RequestLog;
    } finally {
      reader.releaseLock();
      await res.body.cancel().catch(() => {});
    }
  }
  /** Inclusion proof of a record in the transparency log. */
  proof(id: string, query: { checkpoint?: number } = {}, options?: RequestOptions): APIPromise<LogProof> {
    return this._client.get(`/logs/${seg(id)}/proof`, { query, ...options });
  }
  checkpoints(query: { limit?: number } = {}, options?: RequestOptions): APIPromise<{ object: 'list'; data: LogCheckpoint[] }> {
    return this._client.get('/logs/checkpoints', { query, ...options });
  }
}

export interface UsageParams {
  group_by?: 'model' | 'key' | 'team' | 'day' | 'user' | (string & {});
  since?: number;
  until?: number;
  team_id?: string;
}
export interface UsageRow {
  group: string;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}
export interface UsageReport {
  object: 'usage';
  group_by: string;
  since: number;
  until: number | null;
  data: UsageRow[];
}
export class Usage extends APIResource {
  /** Token and request totals from the records, grouped (`GET /v1/usage`). */
  retrieve(query: UsageParams = {}, options?: RequestOptions): APIPromise<UsageReport> {
    return this._client.get('/usage', { query, ...options });
  }
}

export interface PolicyDecisionListParams extends CursorPageParams {
  policy_id?: string;
  rule?: string;
  action?: string;
  key_id?: string;
  request_id?: string;
  model?: string;
  team_id?: string;
  since?: number;
  until?: number;
}
export class PolicyDecisions extends APIResource {
  list(query: PolicyDecisionListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.PolicyDecision>, T.PolicyDecision> {
    return this._client.getAPIList('/policy_decisions', SovereignCursorPage<T.PolicyDecision>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.PolicyDecision> {
    return this._client.get(`/policy_decisions/${seg(id)}`, options);
  }
}

export interface PolicyTestParams {
  policy?: T.PolicyWrite;
  policy_id?: string;
  input?: {
    stage?: 'input' | 'output';
    model?: string;
    model_tags?: string[];
    backend?: 'local' | 'upstream';
    team_id?: string;
    key_id?: string;
    user?: string;
    route?: string;
    max_tokens?: number;
    input?: string;
    output?: string;
    [k: string]: unknown;
  };
}
export interface PolicyTestResult {
  object: 'policy.test';
  stage: 'input' | 'output';
  action: 'allow' | 'deny' | 'redact' | 'flag';
  decisions: T.PolicyDecision[];
  redact: T.PolicySpan[];
  redacted_text: string;
}
export class Policies extends APIResource {
  create(body: T.PolicyWrite, options?: RequestOptions): APIPromise<T.Policy> {
    return this._client.post('/policies', { body, ...options });
  }
  list(options?: RequestOptions): PagePromise<ListPage<T.Policy>, T.Policy> {
    return this._client.getAPIList('/policies', ListPage<T.Policy>, options);
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.Policy> {
    return this._client.get(`/policies/${seg(id)}`, options);
  }
  update(id: string, body: T.PolicyWrite, options?: RequestOptions): APIPromise<T.Policy> {
    return this._client.put(`/policies/${seg(id)}`, { body, ...options });
  }
  delete(id: string, options?: RequestOptions): APIPromise<{ id: string; object: string; deleted: boolean }> {
    return this._client.delete(`/policies/${seg(id)}`, options);
  }
  /** Dry-runs a policy (stored or inline) against a request without sending it. */
  test(body: PolicyTestParams, options?: RequestOptions): APIPromise<PolicyTestResult> {
    return this._client.post('/policies/test', { body, ...options });
  }
}

export interface LimitStatus {
  object: 'limit';
  scope: 'key' | 'team' | 'model';
  subject: string;
  name: 'requests_per_minute' | 'tokens_per_minute' | 'concurrent_requests' | 'tokens_per_day' | 'tokens_per_month';
  limit: number;
  remaining: number;
  reset_seconds: number;
  reset_at: number;
}
export type LimitScope = 'key' | 'team' | 'model' | (string & {});
export interface LimitRuleParams {
  requests_per_minute?: number | null;
  tokens_per_minute?: number | null;
  concurrent_requests?: number | null;
  tokens_per_day?: number | null;
  tokens_per_month?: number | null;
}
export class LimitRules extends APIResource {
  list(options?: RequestOptions): PagePromise<ListPage<T.LimitRule>, T.LimitRule> {
    return this._client.getAPIList('/limits/rules', ListPage<T.LimitRule>, options);
  }
  retrieve(scope: LimitScope, subject: string, options?: RequestOptions): APIPromise<T.LimitRule> {
    return this._client.get(`/limits/rules/${seg(scope)}/${seg(subject)}`, options);
  }
  /** Sets (replaces) a rule (`PUT`). */
  set(scope: LimitScope, subject: string, body: LimitRuleParams, options?: RequestOptions): APIPromise<T.LimitRule> {
    return this._client.put(`/limits/rules/${seg(scope)}/${seg(subject)}`, { body, ...options });
  }
  delete(scope: LimitScope, subject: string, options?: RequestOptions): APIPromise<{ object: string; scope: string; subject: string; deleted: boolean }> {
    return this._client.delete(`/limits/rules/${seg(scope)}/${seg(subject)}`, options);
  }
}
export class Limits extends APIResource {
  rules: LimitRules = new LimitRules(this._client);
  /** The caller's current limits and what remains of them (`GET /v1/limits`). */
  retrieve(options?: RequestOptions): APIPromise<{ object: 'list'; data: LimitStatus[] }> {
    return this._client.get('/limits', options);
  }
}

// ------------------------------------------------------------------ webhooks
export interface WebhookDeliveryListParams extends CursorPageParams {
  status?: string;
}
export class WebhookDeliveries extends APIResource {
  list(webhookId: string, query: WebhookDeliveryListParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.WebhookDelivery>, T.WebhookDelivery> {
    return this._client.getAPIList(`/webhooks/${seg(webhookId)}/deliveries`, SovereignCursorPage<T.WebhookDelivery>, { query, ...options });
  }
  retrieve(webhookId: string, deliveryId: string, options?: RequestOptions): APIPromise<T.WebhookDelivery> {
    return this._client.get(`/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}`, options);
  }
  /** Sends a delivery's message again (same webhook-id). */
  redeliver(webhookId: string, deliveryId: string, options?: RequestOptions): APIPromise<T.WebhookDelivery> {
    return this._client.post(`/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/redeliver`, options);
  }
}

/**
 * Webhook endpoints (CRUD, secret rotation, deliveries) and Standard Webhooks
 * verification. Extends openai's webhooks resource: `unwrap` and
 * `verifySignature` keep their signatures, with Sovereign's scheme.
 */
export class Webhooks extends OpenAIWebhooks {
  deliveries: WebhookDeliveries = new WebhookDeliveries(this._client);
  create(body: T.CreateWebhookRequest, options?: RequestOptions): APIPromise<T.WebhookWithSecret> {
    return this._client.post('/webhooks', { body, ...options });
  }
  list(query: CursorPageParams = {}, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Webhook>, T.Webhook> {
    return this._client.getAPIList('/webhooks', SovereignCursorPage<T.Webhook>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.Webhook> {
    return this._client.get(`/webhooks/${seg(id)}`, options);
  }
  update(id: string, body: T.UpdateWebhookRequest, options?: RequestOptions): APIPromise<T.Webhook> {
    return this._client.patch(`/webhooks/${seg(id)}`, { body, ...options });
  }
  delete(id: string, options?: RequestOptions): APIPromise<T.DeletedWebhook> {
    return this._client.delete(`/webhooks/${seg(id)}`, options);
  }
  /** New secret; the old one keeps signing (second signature) for `grace_period_seconds`. */
  rotateSecret(id: string, body: T.RotateWebhookSecretRequest = {}, options?: RequestOptions): APIPromise<T.WebhookWithSecret> {
    return this._client.post(`/webhooks/${seg(id)}/rotate_secret`, { body, ...options });
  }

  private secretOr(secret: string | null | undefined): string {
    const s = secret ?? this._client.webhookSecret;
    if (!s) throw new Error('no webhook secret: pass one, or set webhookSecret / SOVEREIGN_WEBHOOK_SECRET');
    return s;
  }
  /**
   * Verifies a delivery (Standard Webhooks: webhook-id, webhook-timestamp within
   * `tolerance` seconds, webhook-signature). Throws WebhookVerificationError.
   * `payload` is the raw body as received. `secret` defaults to the client's webhookSecret.
   */
  async verify(payload: WebhookPayload, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<void> {
    return verifyWebhook(payload, headers, this.secretOr(secret), tolerance);
  }
  override async verifySignature(payload: string, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<void> {
    return this.verify(payload, headers, secret, tolerance);
  }
  /** Verifies, then parses the event. */
  override async unwrap<E = T.SovereignEvent>(payload: WebhookPayload, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<E> {
    return unwrapWebhook<E>(payload, headers, this.secretOr(secret), tolerance);
  }
}

// ------------------------------------------------------------------ keys & teams
export class Keys extends APIResource {
  /** Creates a key; the secret (`key`) is in this response only. */
  create(body: T.CreateKeyRequest, options?: RequestOptions): APIPromise<T.ApiKeyWithSecret> {
    return this._client.post('/keys', { body, ...options });
  }
  list(query: { team_id?: string } = {}, options?: RequestOptions): PagePromise<ListPage<T.ApiKey>, T.ApiKey> {
    return this._client.getAPIList('/keys', ListPage<T.ApiKey>, { query, ...options });
  }
  retrieve(id: string, options?: RequestOptions): APIPromise<T.ApiKey> {
    return this._client.get(`/keys/${seg(id)}`, options);
  }
  /** Revokes a key (`DELETE /v1/keys/{id}`). */
  revoke(id: string, options?: RequestOptions): APIPromise<T.ApiKey> {
    return this._client.delete(`/keys/${seg(id)}`, options);
  }
  /** A new secret for the key; the old one works for `grace_seconds`. */
  rotate(id: string, body: T.RotateKeyRequest = {}, options?: RequestOptions): APIPromise<T.ApiKeyWithSecret> {
    return this._client.post(`/keys/${seg(id)}/rotate`, { body, ...options });
  }
}

export class Teams extends APIResource {
  create(body: T.CreateTeamRequest, options?: RequestOptions): APIPromise<T.Team> {
    return this._client.post('/teams', { body, ...options });
  }
  list(options?: RequestOptions): PagePromise<ListPage<T.Team>, T.Team> {
    return this._client.getAPIList('/teams', ListPage<T.Team>, options);
  }
  /** Turns prompt/output capture in the records on or off for a team. */
  update(id: string, body: { capture: boolean }, options?: RequestOptions): APIPromise<T.Team> {
    return this._client.patch(`/teams/${seg(id)}`, { body, ...options });
  }
}
