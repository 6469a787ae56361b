// Batch workloads: many requests with bounded concurrency (each retried by the
// client's own retry loop), or the same list through the server's Batch API.
import type { OpenAI } from 'openai';
import { toFile } from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse, EmbeddingCreateParams } from 'openai/resources/embeddings';
import type { Batch } from 'openai/resources/batches';
import type { RequestOptions } from './resources.js';

/** One item's outcome, at the item's index. */
export type BatchItemResult<R> =
  | { index: number; ok: true; result: R; error?: undefined }
  | { index: number; ok: false; result?: undefined; error: Error };

export interface BatchProgress {
  /** Items finished (succeeded or failed). */
  completed: number;
  succeeded: number;
  failed: number;
  total: number;
}

export interface BatchRunOptions {
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** Called after every finished item. */
  onProgress?: (progress: BatchProgress) => void;
  /** Retries per item (the client's default when not given). */
  maxRetries?: number;
  /** Per-request timeout in milliseconds. */
  timeout?: number;
  /** Stops starting new items; items not started fail with an abort error. */
  signal?: AbortSignal;
  /** Other per-request options (headers, ...). */
  requestOptions?: RequestOptions;
}

export interface BatchAPIOptions {
  /** Milliseconds between status polls. Default 1000. */
  pollInterval?: number;
  /** Give up waiting after this many milliseconds (the batch is cancelled). Default 1 hour. */
  timeout?: number;
  completionWindow?: '24h';
  metadata?: Record<string, string>;
  /** Called on every poll with the batch as the server reports it. */
  onProgress?: (batch: Batch) => void;
  signal?: AbortSignal;
}

export interface BatchAPIResult<R> {
  /** The batch in its final state. */
  batch: Batch;
  /** One per request, in the order given. */
  results: BatchItemResult<R>[];
}

/** An item of a Batch API run that failed, with the server's error object. */
export class BatchItemError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly status: number | undefined,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'BatchItemError';
  }
}

const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

export class BatchHelper {
  constructor(private readonly client: OpenAI) {}

  /** Runs `fn` over `items` with at most `concurrency` at once; results in input order. */
  async map<I, R>(items: readonly I[], fn: (item: I, index: number) => Promise<R>, opts: BatchRunOptions = {}): Promise<BatchItemResult<R>[]> {
    const concurrency = Math.max(1, Math.floor(opts.concurrency ?? 4));
    const results: BatchItemResult<R>[] = new Array(items.length);
    const progress: BatchProgress = { completed: 0, succeeded: 0, failed: 0, total: items.length };
    let next = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= items.length) return;
        try {
          if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
          results[i] = { index: i, ok: true, result: await fn(items[i]!, i) };
          progress.succeeded++;
        } catch (err) {
          results[i] = { index: i, ok: false, error: err instanceof Error ? err : new Error(String(err)) };
          progress.failed++;
        }
        progress.completed++;
        opts.onProgress?.({ ...progress });
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
    return results;
  }

  private opts(o: BatchRunOptions): RequestOptions {
    return {
      ...o.requestOptions,
      ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
      ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    };
  }

  /** Many chat completions with bounded concurrency; ordered results, per-item errors. */
  chat(requests: readonly ChatCompletionCreateParamsNonStreaming[], opts: BatchRunOptions = {}): Promise<BatchItemResult<ChatCompletion>[]> {
    const ro = this.opts(opts);
    return this.map(requests, (req) => this.client.chat.completions.create({ ...req, stream: false }, ro), opts);
  }

  /** Many embedding requests with bounded concurrency; ordered results, per-item errors. */
  embeddings(requests: readonly EmbeddingCreateParams[], opts: BatchRunOptions = {}): Promise<BatchItemResult<CreateEmbeddingResponse>[]> {
    const ro = this.opts(opts);
    return this.map(requests, (req) => this.client.embeddings.create(req, ro), opts);
  }

  /**
   * Runs the requests through the server's Batch API: uploads them as JSONL
   * (custom_id = index), creates the batch, polls until it ends, downloads the
   * output and error files and returns one result per request, in order.
   */
  async runChat(requests: readonly ChatCompletionCreateParamsNonStreaming[], opts: BatchAPIOptions = {}): Promise<BatchAPIResult<ChatCompletion>> {
    return this.runBatch<ChatCompletion>('/v1/chat/completions', requests, opts);
  }

  /** runChat for embeddings. */
  async runEmbeddings(requests: readonly EmbeddingCreateParams[], opts: BatchAPIOptions = {}): Promise<BatchAPIResult<CreateEmbeddingResponse>> {
    return this.runBatch<CreateEmbeddingResponse>('/v1/embeddings', requests, opts);
  }

  /** The Batch API run for any endpoint the server's batches take. */
  async runBatch<R>(
    endpoint: '/v1/chat/completions' | '/v1/embeddings' | '/v1/completions' | '/v1/responses',
    requests: readonly object[],
    opts: BatchAPIOptions = {},
  ): Promise<BatchAPIResult<R>> {
    const jsonl = requests
      .map((body, i) => JSON.stringify({ custom_id: String(i), method: 'POST', url: endpoint, body }))
      .join('\n') + '\n';
    const signal = opts.signal;
    const file = await this.client.files.create(
      { file: await toFile(new TextEncoder().encode(jsonl), 'batch.jsonl', { type: 'application/jsonl' }), purpose: 'batch' },
      signal ? { signal } : undefined,
    );
    let batch = await this.client.batches.create(
      {
        input_file_id: file.id,
        endpoint: endpoint as '/v1/chat/completions',
        completion_window: opts.completionWindow ?? '24h',
        ...(opts.metadata ? { metadata: opts.metadata } : {}),
      },
      signal ? { signal } : undefined,
    );
    const deadline = Date.now() + (opts.timeout ?? 3_600_000);
    opts.onProgress?.(batch);
    while (!TERMINAL.has(batch.status)) {
      if (Date.now() > deadline) {
        await this.client.batches.cancel(batch.id).catch(() => undefined);
        throw new Error(`batch ${batch.id} did not finish in time (status ${batch.status})`);
      }
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, opts.pollInterval ?? 1000);
        signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason ?? new Error('aborted')); }, { once: true });
      });
      batch = await this.client.batches.retrieve(batch.id, signal ? { signal } : undefined);
      opts.onProgress?.(batch);
    }
    const lines: Array<{ custom_id: string; response?: { status_code: number; body: unknown } | null; error?: { code?: string; message?: string } | null }> = [];
    for (const fid of [batch.output_file_id, batch.error_file_id]) {
      if (!fid) continue;
      const text = await (await this.client.files.content(fid)).text();
      for (const line of text.split('\n')) if (line.trim()) lines.push(JSON.parse(line));
    }
    const byId = new Map(lines.map((l) => [l.custom_id, l]));
    const results: BatchItemResult<R>[] = requests.map((_, i) => {
      const l = byId.get(String(i));
      if (!l) {
        const why = batch.status === 'completed' ? 'no result for this request' : `batch ${batch.status}`;
        return { index: i, ok: false, error: new BatchItemError(why, batch.status, undefined, batch.errors ?? null) };
      }
      const status = l.response?.status_code;
      if (l.error || !l.response || (status !== undefined && (status < 200 || status >= 300))) {
        const body = l.response?.body as { error?: { code?: string; message?: string } } | undefined;
        const e = l.error ?? body?.error;
        return { index: i, ok: false, error: new BatchItemError(e?.message ?? `status ${status}`, e?.code ?? undefined, status, l.response?.body ?? l.error) };
      }
      return { index: i, ok: true, result: l.response.body as R };
    });
    return { batch, results };
  }
}
