import { APIResource } from 'openai/core/resource';
import { CursorPage, Page, type CursorPageParams, type PagePromise } from 'openai/core/pagination';
import type { APIPromise } from 'openai/core/api-promise';
import { Models as OpenAIModels } from 'openai/resources/models';
import { Completions as OpenAICompletions } from 'openai/resources/completions';
import { Webhooks as OpenAIWebhooks } from 'openai/resources/webhooks/webhooks';
import { EventStream, type EventStreamOptions } from './sse.js';
import { type WebhookHeaders, type WebhookPayload } from './webhooks.js';
import type * as T from './types.js';
/** Per-call options: `timeout`, `maxRetries`, `headers`, `signal`, `idempotencyKey`, ... (openai's RequestOptions). */
export type RequestOptions = NonNullable<Parameters<OpenAIModels['retrieve']>[1]>;
/** `{ object: "list", data }` lists that come in one page. */
export declare class ListPage<Item> extends Page<Item> {
}
/** Cursor lists (`has_more`, `last_id`; `?after=&limit=`): `for await` walks every page. */
export declare class SovereignCursorPage<Item extends {
    id: string;
}> extends CursorPage<Item> {
    first_id?: string | null;
    last_id?: string | null;
}
/** Options of the polling helpers (`waitUntilReady`, `runs.wait`). */
export interface PollOptions {
    /** Milliseconds between polls. Default 500. */
    pollInterval?: number;
    /** Give up after this many milliseconds. Default 10 minutes. */
    timeout?: number;
    signal?: AbortSignal | null;
}
/** The rerank request (`POST /v1/rerank`). */
export type RerankParams = T.RerankRequest;
export declare class Rerank extends APIResource {
    /** Orders documents by relevance to a query. */
    create(body: RerankParams, options?: RequestOptions): APIPromise<T.RerankResponse>;
}
export declare class Tokenizer extends APIResource {
    /** Text to token ids (`POST /v1/tokenize`). */
    tokenize(body: T.TokenizeRequest, options?: RequestOptions): APIPromise<T.TokenizeResponse>;
    /** Token ids to text (`POST /v1/detokenize`). */
    detokenize(body: T.DetokenizeRequest, options?: RequestOptions): APIPromise<T.DetokenizeResponse>;
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
    messages: Array<{
        role: 'system' | 'developer' | 'user' | 'assistant';
        content: string;
    }>;
}
export interface CitedPromptParams extends CitedCompletionParamsBase {
    prompt: string;
}
/** OpenAI's completions, plus answers with citations. */
export declare class Completions extends OpenAICompletions {
    /**
     * An answer drawn from collections and inline documents, with `[n]` markers and
     * `citations` (docs/sources.md). `messages` → a chat.completion, `prompt` → a text_completion.
     */
    createWithCitations(body: CitedChatParams, options?: RequestOptions): APIPromise<T.CitedChatCompletion>;
    createWithCitations(body: CitedPromptParams, options?: RequestOptions): APIPromise<T.CitedTextCompletion>;
}
/** OpenAI's models (list, retrieve, delete), plus comparison and administration. */
export declare class Models extends OpenAIModels {
    /** Sends one chat request to several models and compares the answers (`POST /v1/models/compare`). */
    compare(body: T.CompareRequest, options?: RequestOptions): APIPromise<T.ModelComparison>;
    /** A model with every Sovereign field (backend, status, limits, stats, ...). */
    details(id: string, options?: RequestOptions): APIPromise<T.SovereignModel>;
    /** Every model with every Sovereign field. */
    listDetails(options?: RequestOptions): PagePromise<ListPage<T.SovereignModel>, T.SovereignModel>;
    /** Registers a model (admin). */
    create(id: string, body: Omit<T.ModelSpec, 'id'>, options?: RequestOptions): APIPromise<T.SovereignModel>;
    /** Changes a model's spec (admin). */
    update(id: string, body: T.ModelPatch, options?: RequestOptions): APIPromise<T.SovereignModel>;
    /** Starts a model's runner (admin). */
    load(id: string, options?: RequestOptions): APIPromise<T.SovereignModel>;
    /** Stops a model's runner (admin). */
    unload(id: string, options?: RequestOptions): APIPromise<T.SovereignModel>;
}
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
/** Encodes a multipart/form-data body as bytes (so that retries resend the same bytes). */
export declare function encodeMultipart(fields: Record<string, string | undefined>, file: {
    name: string;
    filename: string;
    data: Uint8Array;
    contentType?: string;
}): Promise<{
    body: Uint8Array;
    contentType: string;
}>;
export declare class Documents extends APIResource {
    /** Adds a document from text (`POST /v1/collections/{id}/documents`, JSON). */
    create(collectionId: string, body: T.CreateDocumentRequest, options?: RequestOptions): APIPromise<T.Document>;
    /**
     * Uploads a file (.txt, .md, .html, .pdf) into a collection (multipart). With
     * `onProgress`, the body is streamed to fetch and progress follows the bytes
     * fetch reads; the upload is retried with the same Idempotency-Key like any create.
     */
    upload(collectionId: string, params: DocumentUploadParams, options?: RequestOptions): Promise<T.Document>;
    list(collectionId: string, options?: RequestOptions): PagePromise<ListPage<T.Document>, T.Document>;
    retrieve(collectionId: string, documentId: string, options?: RequestOptions): APIPromise<T.Document>;
    delete(collectionId: string, documentId: string, options?: RequestOptions): APIPromise<T.DeletedDocument>;
    /** Polls a document until it is `ready` or `failed`. */
    waitUntilReady(collectionId: string, documentId: string, options?: PollOptions): Promise<T.Document>;
}
export declare class Collections extends APIResource {
    documents: Documents;
    create(body: T.CreateCollectionRequest, options?: RequestOptions): APIPromise<T.Collection>;
    list(options?: RequestOptions): PagePromise<ListPage<T.Collection>, T.Collection>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.Collection>;
    delete(id: string, options?: RequestOptions): APIPromise<T.DeletedCollection>;
    /** Hybrid, vector or keyword search over a collection's chunks. */
    search(id: string, body: T.SearchRequest, options?: RequestOptions): APIPromise<T.SearchResultList>;
}
export interface SourceLinkListParams extends CursorPageParams {
    response_id?: string;
    document_id?: string;
    collection_id?: string;
    created_after?: number;
    created_before?: number;
}
export declare class SourceLinks extends APIResource {
    /** Links from answers to the sources they cited (records). */
    list(query?: SourceLinkListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.SourceLink>, T.SourceLink>;
}
export interface WorkflowRunListParams extends CursorPageParams {
    workflow_id?: string;
    status?: string;
}
export interface RunEventsOptions extends EventStreamOptions {
}
export declare class Runs extends APIResource {
    /** Starts a run of a workflow (`POST /v1/workflows/{id}/runs`). */
    create(workflowId: string, body?: T.WorkflowRunRequest, options?: RequestOptions): APIPromise<T.WorkflowRun>;
    list(query?: WorkflowRunListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.WorkflowRun>, T.WorkflowRun>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.WorkflowRun>;
    cancel(id: string, options?: RequestOptions): APIPromise<T.WorkflowRun>;
    /** Polls a run until it has ended (succeeded, failed or cancelled). */
    wait(id: string, options?: PollOptions & {
        until?: (run: T.WorkflowRun) => boolean;
    }): Promise<T.WorkflowRun>;
    /**
     * The run's events (SSE) from its start — or after `lastEventId` — as an async
     * iterator that ends after the run's last event (also when resumed after it);
     * reconnects with Last-Event-ID if the connection drops.
     */
    events(id: string, options?: RunEventsOptions): EventStream<T.SovereignEvent>;
}
export declare class Workflows extends APIResource {
    /** Runs of workflows (also `client.runs`). */
    runs: Runs;
    create(body: T.WorkflowWrite, options?: RequestOptions): APIPromise<T.Workflow>;
    list(query?: CursorPageParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Workflow>, T.Workflow>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.Workflow>;
    update(id: string, body: T.WorkflowWrite, options?: RequestOptions): APIPromise<T.Workflow>;
    delete(id: string, options?: RequestOptions): APIPromise<{
        id: string;
        object: string;
        deleted: boolean;
    }>;
    /** Starts a run: the same as `runs.create(id, { input })`. */
    run(id: string, input?: Record<string, unknown>, options?: RequestOptions): APIPromise<T.WorkflowRun>;
}
export interface ApprovalListParams extends CursorPageParams {
    status?: 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled' | (string & {});
}
export declare class Approvals extends APIResource {
    list(query?: ApprovalListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Approval>, T.Approval>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.Approval>;
    /** Approves or rejects (`POST /v1/approvals/{id}`). */
    decide(id: string, body: T.ApprovalDecision, options?: RequestOptions): APIPromise<T.Approval>;
    approve(id: string, comment?: string, options?: RequestOptions): APIPromise<T.Approval>;
    reject(id: string, comment?: string, options?: RequestOptions): APIPromise<T.Approval>;
}
export interface EventStreamParams extends EventStreamOptions {
    /** Only these event types. */
    types?: string[];
    /** Admin keys: one team's events (and the deployment's). */
    team_id?: string;
}
export declare class Events extends APIResource {
    /**
     * The deployment's event log, live (`GET /v1/events`), as an async iterator.
     * It starts now, or after `lastEventId`; it never ends by itself (reconnecting
     * with Last-Event-ID when the connection drops) — `break` or `close()` to stop.
     */
    stream(params?: EventStreamParams): EventStream<T.SovereignEvent>;
}
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
export declare class Logs extends APIResource {
    /** Request records, newest first (`records:read`). */
    list(query?: LogListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.RequestLog>, T.RequestLog>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.RequestLog>;
    /** Every matching record (NDJSON export), as an async iterator. */
    export(query?: Omit<LogListParams, 'after' | 'limit'>, options?: RequestOptions): AsyncGenerator<T.RequestLog>;
    /** Inclusion proof of a record in the transparency log. */
    proof(id: string, query?: {
        checkpoint?: number;
    }, options?: RequestOptions): APIPromise<LogProof>;
    checkpoints(query?: {
        limit?: number;
    }, options?: RequestOptions): APIPromise<{
        object: 'list';
        data: LogCheckpoint[];
    }>;
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
export declare class Usage extends APIResource {
    /** Token and request totals from the records, grouped (`GET /v1/usage`). */
    retrieve(query?: UsageParams, options?: RequestOptions): APIPromise<UsageReport>;
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
export declare class PolicyDecisions extends APIResource {
    list(query?: PolicyDecisionListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.PolicyDecision>, T.PolicyDecision>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.PolicyDecision>;
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
export declare class Policies extends APIResource {
    create(body: T.PolicyWrite, options?: RequestOptions): APIPromise<T.Policy>;
    list(options?: RequestOptions): PagePromise<ListPage<T.Policy>, T.Policy>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.Policy>;
    update(id: string, body: T.PolicyWrite, options?: RequestOptions): APIPromise<T.Policy>;
    delete(id: string, options?: RequestOptions): APIPromise<{
        id: string;
        object: string;
        deleted: boolean;
    }>;
    /** Dry-runs a policy (stored or inline) against a request without sending it. */
    test(body: PolicyTestParams, options?: RequestOptions): APIPromise<PolicyTestResult>;
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
export declare class LimitRules extends APIResource {
    list(options?: RequestOptions): PagePromise<ListPage<T.LimitRule>, T.LimitRule>;
    retrieve(scope: LimitScope, subject: string, options?: RequestOptions): APIPromise<T.LimitRule>;
    /** Sets (replaces) a rule (`PUT`). */
    set(scope: LimitScope, subject: string, body: LimitRuleParams, options?: RequestOptions): APIPromise<T.LimitRule>;
    delete(scope: LimitScope, subject: string, options?: RequestOptions): APIPromise<{
        object: string;
        scope: string;
        subject: string;
        deleted: boolean;
    }>;
}
export declare class Limits extends APIResource {
    rules: LimitRules;
    /** The caller's current limits and what remains of them (`GET /v1/limits`). */
    retrieve(options?: RequestOptions): APIPromise<{
        object: 'list';
        data: LimitStatus[];
    }>;
}
export interface WebhookDeliveryListParams extends CursorPageParams {
    status?: string;
}
export declare class WebhookDeliveries extends APIResource {
    list(webhookId: string, query?: WebhookDeliveryListParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.WebhookDelivery>, T.WebhookDelivery>;
    retrieve(webhookId: string, deliveryId: string, options?: RequestOptions): APIPromise<T.WebhookDelivery>;
    /** Sends a delivery's message again (same webhook-id). */
    redeliver(webhookId: string, deliveryId: string, options?: RequestOptions): APIPromise<T.WebhookDelivery>;
}
/**
 * Webhook endpoints (CRUD, secret rotation, deliveries) and Standard Webhooks
 * verification. Extends openai's webhooks resource: `unwrap` and
 * `verifySignature` keep their signatures, with Sovereign's scheme.
 */
export declare class Webhooks extends OpenAIWebhooks {
    deliveries: WebhookDeliveries;
    create(body: T.CreateWebhookRequest, options?: RequestOptions): APIPromise<T.WebhookWithSecret>;
    list(query?: CursorPageParams, options?: RequestOptions): PagePromise<SovereignCursorPage<T.Webhook>, T.Webhook>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.Webhook>;
    update(id: string, body: T.UpdateWebhookRequest, options?: RequestOptions): APIPromise<T.Webhook>;
    delete(id: string, options?: RequestOptions): APIPromise<T.DeletedWebhook>;
    /** New secret; the old one keeps signing (second signature) for `grace_period_seconds`. */
    rotateSecret(id: string, body?: T.RotateWebhookSecretRequest, options?: RequestOptions): APIPromise<T.WebhookWithSecret>;
    private secretOr;
    /**
     * Verifies a delivery (Standard Webhooks: webhook-id, webhook-timestamp within
     * `tolerance` seconds, webhook-signature). Throws WebhookVerificationError.
     * `payload` is the raw body as received. `secret` defaults to the client's webhookSecret.
     */
    verify(payload: WebhookPayload, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<void>;
    verifySignature(payload: string, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<void>;
    /** Verifies, then parses the event. */
    unwrap<E = T.SovereignEvent>(payload: WebhookPayload, headers: WebhookHeaders, secret?: string | null, tolerance?: number): Promise<E>;
}
export declare class Keys extends APIResource {
    /** Creates a key; the secret (`key`) is in this response only. */
    create(body: T.CreateKeyRequest, options?: RequestOptions): APIPromise<T.ApiKeyWithSecret>;
    list(query?: {
        team_id?: string;
    }, options?: RequestOptions): PagePromise<ListPage<T.ApiKey>, T.ApiKey>;
    retrieve(id: string, options?: RequestOptions): APIPromise<T.ApiKey>;
    /** Revokes a key (`DELETE /v1/keys/{id}`). */
    revoke(id: string, options?: RequestOptions): APIPromise<T.ApiKey>;
    /** A new secret for the key; the old one works for `grace_seconds`. */
    rotate(id: string, body?: T.RotateKeyRequest, options?: RequestOptions): APIPromise<T.ApiKeyWithSecret>;
}
export declare class Teams extends APIResource {
    create(body: T.CreateTeamRequest, options?: RequestOptions): APIPromise<T.Team>;
    list(options?: RequestOptions): PagePromise<ListPage<T.Team>, T.Team>;
    /** Turns prompt/output capture in the records on or off for a team. */
    update(id: string, body: {
        capture: boolean;
    }, options?: RequestOptions): APIPromise<T.Team>;
}
