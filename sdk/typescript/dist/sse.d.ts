import type { SovereignEvent } from './types.js';
/** One raw SSE message. */
export interface SSEMessage {
    id: string | undefined;
    event: string | undefined;
    data: string;
}
/** Parses an SSE byte stream into messages (comments and keep-alives are skipped). */
export declare function parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage>;
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
export declare class EventStream<T = SovereignEvent> implements AsyncIterable<T> {
    private readonly open;
    private readonly opts;
    /** Id of the last event received. Pass it as `lastEventId` to resume later. */
    lastEventId: string | undefined;
    private readonly controller;
    private started;
    constructor(open: SSEOpener, opts: EventStreamOptions & {
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
    });
    /** Stops the stream (also ends a running `for await`). */
    close(): void;
    [Symbol.asyncIterator](): AsyncIterator<T>;
}
