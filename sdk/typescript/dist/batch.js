import { toFile } from 'openai';
/** An item of a Batch API run that failed, with the server's error object. */
export class BatchItemError extends Error {
    code;
    status;
    body;
    constructor(message, code, status, body) {
        super(message);
        this.code = code;
        this.status = status;
        this.body = body;
        this.name = 'BatchItemError';
    }
}
const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);
export class BatchHelper {
    client;
    constructor(client) {
        this.client = client;
    }
    /** Runs `fn` over `items` with at most `concurrency` at once; results in input order. */
    async map(items, fn, opts = {}) {
        const concurrency = Math.max(1, Math.floor(opts.concurrency ?? 4));
        const results = new Array(items.length);
        const progress = { completed: 0, succeeded: 0, failed: 0, total: items.length };
        let next = 0;
        const worker = async () => {
            for (;;) {
                const i = next++;
                if (i >= items.length)
                    return;
                try {
                    if (opts.signal?.aborted)
                        throw opts.signal.reason ?? new Error('aborted');
                    results[i] = { index: i, ok: true, result: await fn(items[i], i) };
                    progress.succeeded++;
                }
                catch (err) {
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
    opts(o) {
        return {
            ...o.requestOptions,
            ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
            ...(o.timeout !== undefined ? { timeout: o.timeout } : {}),
            ...(o.signal ? { signal: o.signal } : {}),
        };
    }
    /** Many chat completions with bounded concurrency; ordered results, per-item errors. */
    chat(requests, opts = {}) {
        const ro = this.opts(opts);
        return this.map(requests, (req) => this.client.chat.completions.create({ ...req, stream: false }, ro), opts);
    }
    /** Many embedding requests with bounded concurrency; ordered results, per-item errors. */
    embeddings(requests, opts = {}) {
        const ro = this.opts(opts);
        return this.map(requests, (req) => this.client.embeddings.create(req, ro), opts);
    }
    /**
     * Runs the requests through the server's Batch API: uploads them as JSONL
     * (custom_id = index), creates the batch, polls until it ends, downloads the
     * output and error files and returns one result per request, in order.
     */
    async runChat(requests, opts = {}) {
        return this.runBatch('/v1/chat/completions', requests, opts);
    }
    /** runChat for embeddings. */
    async runEmbeddings(requests, opts = {}) {
        return this.runBatch('/v1/embeddings', requests, opts);
    }
    /** The Batch API run for any endpoint the server's batches take. */
    async runBatch(endpoint, requests, opts = {}) {
        const jsonl = requests
            .map((body, i) => JSON.stringify({ custom_id: String(i), method: 'POST', url: endpoint, body }))
            .join('\n') + '\n';
        const signal = opts.signal;
        const file = await this.client.files.create({ file: await toFile(new TextEncoder().encode(jsonl), 'batch.jsonl', { type: 'application/jsonl' }), purpose: 'batch' }, signal ? { signal } : undefined);
        let batch = await this.client.batches.create({
            input_file_id: file.id,
            endpoint: endpoint,
            completion_window: opts.completionWindow ?? '24h',
            ...(opts.metadata ? { metadata: opts.metadata } : {}),
        }, signal ? { signal } : undefined);
        const deadline = Date.now() + (opts.timeout ?? 3_600_000);
        opts.onProgress?.(batch);
        while (!TERMINAL.has(batch.status)) {
            if (Date.now() > deadline) {
                await this.client.batches.cancel(batch.id).catch(() => undefined);
                throw new Error(`batch ${batch.id} did not finish in time (status ${batch.status})`);
            }
            await new Promise((resolve, reject) => {
                const t = setTimeout(resolve, opts.pollInterval ?? 1000);
                signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason ?? new Error('aborted')); }, { once: true });
            });
            batch = await this.client.batches.retrieve(batch.id, signal ? { signal } : undefined);
            opts.onProgress?.(batch);
        }
        const lines = [];
        for (const fid of [batch.output_file_id, batch.error_file_id]) {
            if (!fid)
                continue;
            const text = await (await this.client.files.content(fid)).text();
            for (const line of text.split('\n'))
                if (line.trim())
                    lines.push(JSON.parse(line));
        }
        const byId = new Map(lines.map((l) => [l.custom_id, l]));
        const results = requests.map((_, i) => {
            const l = byId.get(String(i));
            if (!l) {
                const why = batch.status === 'completed' ? 'no result for this request' : `batch ${batch.status}`;
                return { index: i, ok: false, error: new BatchItemError(why, batch.status, undefined, batch.errors ?? null) };
            }
            const status = l.response?.status_code;
            if (l.error || !l.response || (status !== undefined && (status < 200 || status >= 300))) {
                const body = l.response?.body;
                const e = l.error ?? body?.error;
                return { index: i, ok: false, error: new BatchItemError(e?.message ?? `status ${status}`, e?.code ?? undefined, status, l.response?.body ?? l.error) };
            }
            return { index: i, ok: true, result: l.response.body };
        });
        return { batch, results };
    }
}
