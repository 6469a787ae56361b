// Server-Sent Events as async iterators, resumable with Last-Event-ID.
// Only web APIs (fetch's ReadableStream, TextDecoder): runs on every runtime.
import type { SovereignEvent } from './types.js';

/** One raw SSE message. */
export interface SSEMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** Parses an SSE byte stream into messages (comments and keep-alives are skipped). */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let id: string | undefined;
  let event: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { id, event, data: data.join('\n') };
          event = undefined;
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

/** Opens the stream: called with the id of the last event received (undefined at first). */
export type SSEOpener = (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>;

export interface EventStreamOptions {
  /** Resume after this event id (sent as `Last-Event-ID`). */
  lastEventId?: string | undefined;
  /**
   * How many times to reconnect (with `Last-Event-ID`) when the connection drops
   * or, for a stream that never ends by itself, when it ends. Default 5; 0 disables.
   */
  maxReconnects?: number;
  /** Milliseconds to wait before reconnecting. Default 1000. */
  reconnectDelay?: number;
  /** Aborts the stream. */
  signal?: AbortSignal | undefined;
}

/**
 * An SSE stream of Sovereign events. Iterate with `for await`; `lastEventId`
 * is the id of the last event handed out, ready to resume with.
 */
export class EventStream<T = SovereignEvent> implements AsyncIterable<T> {
  /** Id of the last event received. Pass it as `lastEventId` to resume later. */
  lastEventId: string | undefined;
  private readonly controller = new AbortController();
  private started = false;

  constructor(
    private readonly open: SSEOpener,
    private readonly opts: EventStreamOptions & {
      /** true when the stream ends by itself once complete (a run's events). */
      endsNaturally: boolean;
      /** true when this event is the last one of the stream. */
      isTerminal?: (event: T) => boolean;
      /**
       * Called before resuming after `lastEventId`: true makes the stream replay from
       * the start and drop the events up to that id itself (for a stream that would
       * otherwise stay open with nothing more to send).
       */
      replayInstead?: (lastEventId: string) => Promise<boolean>;
    },
  ) {
    this.lastEventId = opts.lastEventId;
    opts.signal?.addEventListener('abort', () => this.controller.abort(), { once: true });
  }

  /** Stops the stream (also ends a running `for await`). */
  close(): void {
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.started) throw new Error('an EventStream can be iterated once; open a new one with lastEventId');
    this.started = true;
    let reconnects = 0;
    const max = this.opts.maxReconnects ?? 5;
    const signal = this.controller.signal;
    for (;;) {
      let failure: unknown;
      let ended = false;
      try {
        let send = this.lastEventId;
        let skipThrough: string | undefined;
        if (send !== undefined && this.opts.replayInstead && (await this.opts.replayInstead(send))) {
          skipThrough = send;
          send = undefined;
        }
        const res = await this.open(send, signal);
        if (!res.body) throw new Error('the event stream has no body');
        for await (const msg of parseSSE(res.body)) {
          if (signal.aborted) return;
          reconnects = 0;
          if (skipThrough !== undefined) {
            if (msg.id === skipThrough) skipThrough = undefined;
            continue;
          }
          if (msg.id !== undefined) this.lastEventId = msg.id;
          const ev = JSON.parse(msg.data) as T;
          yield ev;
          if (this.opts.isTerminal?.(ev)) return;
        }
        ended = true;
      } catch (err) {
        if (signal.aborted) return;
        // HTTP errors (4xx/5xx after the client's own retries) are final.
        if (err && typeof err === 'object' && 'status' in err && typeof (err as { status: unknown }).status === 'number') throw err;
        failure = err;
      }
      if (signal.aborted) return;
      if (ended && this.opts.endsNaturally) return;
      if (reconnects >= max) {
        if (failure !== undefined) throw failure;
        return;
      }
      reconnects++;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.opts.reconnectDelay ?? 1000);
        signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
      });
      if (signal.aborted) return;
    }
  }
}
