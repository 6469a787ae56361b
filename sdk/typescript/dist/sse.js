/** Parses an SSE byte stream into messages (comments and keep-alives are skipped). */
export async function* parseSSE(body) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let id;
    let event;
    let data = [];
    try {
        for (;;) {
            const { value, done } = await reader.read();
            if (done)
                break;
            buf += decoder.decode(value, { stream: true });
            let nl;
            while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
                const line = buf.slice(0, nl);
                buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
                if (line === '') {
                    if (data.length > 0)
                        yield { id, event, data: data.join('\n') };
                    event = undefined;
                    data = [];
                    continue;
                }
                if (line.startsWith(':'))
                    continue;
                const colon = line.indexOf(':');
                const field = colon < 0 ? line : line.slice(0, colon);
                let value = colon < 0 ? '' : line.slice(colon + 1);
                if (value.startsWith(' '))
                    value = value.slice(1);
                if (field === 'data')
                    data.push(value);
                else if (field === 'event')
                    event = value;
                else if (field === 'id' && !value.includes('\0'))
                    id = value;
            }
        }
    }
    finally {
        reader.releaseLock();
        await body.cancel().catch(() => { });
    }
}
/**
 * An SSE stream of Sovereign events. Iterate with `for await`; `lastEventId`
 * is the id of the last event handed out, ready to resume with.
 */
export class EventStream {
    open;
    opts;
    /** Id of the last event received. Pass it as `lastEventId` to resume later. */
    lastEventId;
    controller = new AbortController();
    started = false;
    constructor(open, opts) {
        this.open = open;
        this.opts = opts;
        this.lastEventId = opts.lastEventId;
        opts.signal?.addEventListener('abort', () => this.controller.abort(), { once: true });
    }
    /** Stops the stream (also ends a running `for await`). */
    close() {
        this.controller.abort();
    }
    async *[Symbol.asyncIterator]() {
        if (this.started)
            throw new Error('an EventStream can be iterated once; open a new one with lastEventId');
        this.started = true;
        let reconnects = 0;
        const max = this.opts.maxReconnects ?? 5;
        const signal = this.controller.signal;
        for (;;) {
            let failure;
            let ended = false;
            try {
                let send = this.lastEventId;
                let skipThrough;
                if (send !== undefined && this.opts.replayInstead && (await this.opts.replayInstead(send))) {
                    skipThrough = send;
                    send = undefined;
                }
                const res = await this.open(send, signal);
                if (!res.body)
                    throw new Error('the event stream has no body');
                for await (const msg of parseSSE(res.body)) {
                    if (signal.aborted)
                        return;
                    reconnects = 0;
                    if (skipThrough !== undefined) {
                        if (msg.id === skipThrough)
                            skipThrough = undefined;
                        continue;
                    }
                    if (msg.id !== undefined)
                        this.lastEventId = msg.id;
                    const ev = JSON.parse(msg.data);
                    yield ev;
                    if (this.opts.isTerminal?.(ev))
                        return;
                }
                ended = true;
            }
            catch (err) {
                if (signal.aborted)
                    return;
                // HTTP errors (4xx/5xx after the client's own retries) are final.
                if (err && typeof err === 'object' && 'status' in err && typeof err.status === 'number')
                    throw err;
                failure = err;
            }
            if (signal.aborted)
                return;
            if (ended && this.opts.endsNaturally)
                return;
            if (reconnects >= max) {
                if (failure !== undefined)
                    throw failure;
                return;
            }
            reconnects++;
            await new Promise((resolve) => {
                const t = setTimeout(resolve, this.opts.reconnectDelay ?? 1000);
                signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
            });
            if (signal.aborted)
                return;
        }
    }
}
