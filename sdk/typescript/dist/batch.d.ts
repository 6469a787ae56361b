import type { OpenAI } from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse, EmbeddingCreateParams } from 'openai/resources/embeddings';
import type { Batch } from 'openai/resources/batches';
import type { RequestOptions } from './resources.js';
/** One item's outcome, at the item's index. */
export type BatchItemResult<R> = {
    index: number;
    ok: true;
    result: R;
    error?: undefined;
} | {
    index: number;
    ok: false;
    result?: undefined;
    error: Error;
};
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
export declare class BatchItemError extends Error {
    readonly code: string | undefined;
    readonly status: number | undefined;
    readonly body: unknown;
    constructor(message: string, code: string | undefined, status: number | undefined, body: unknown);
}
export declare class BatchHelper {
    private readonly client;
    constructor(client: OpenAI);
    /** Runs `fn` over `items` with at most `concurrency` at once; results in input order. */
    map<I, R>(items: readonly I[], fn: (item: I, index: number) => Promise<R>, opts?: BatchRunOptions): Promise<BatchItemResult<R>[]>;
    private opts;
    /** Many chat completions with bounded concurrency; ordered results, per-item errors. */
    chat(requests: readonly ChatCompletionCreateParamsNonStreaming[], opts?: BatchRunOptions): Promise<BatchItemResult<ChatCompletion>[]>;
    /** Many embedding requests with bounded concurrency; ordered results, per-item errors. */
    embeddings(requests: readonly EmbeddingCreateParams[], opts?: BatchRunOptions): Promise<BatchItemResult<CreateEmbeddingResponse>[]>;
    /**
     * Runs the requests through the server's Batch API: uploads them as JSONL
     * (custom_id = index), creates the batch, polls until it ends, downloads the
     * output and error files and returns one result per request, in order.
     */
    runChat(requests: readonly ChatCompletionCreateParamsNonStreaming[], opts?: BatchAPIOptions): Promise<BatchAPIResult<ChatCompletion>>;
    /** runChat for embeddings. */
    runEmbeddings(requests: readonly EmbeddingCreateParams[], opts?: BatchAPIOptions): Promise<BatchAPIResult<CreateEmbeddingResponse>>;
    /** The Batch API run for any endpoint the server's batches take. */
    runBatch<R>(endpoint: '/v1/chat/completions' | '/v1/embeddings' | '/v1/completions' | '/v1/responses', requests: readonly object[], opts?: BatchAPIOptions): Promise<BatchAPIResult<R>>;
}
