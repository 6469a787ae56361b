/** OpenAI's error envelope. */
export interface ErrorResponse {
    error: ErrorObject;
}
export interface ErrorObject {
    /** A human-readable explanation. */
    message: string;
    /** OpenAI's error type, fixed by `code`. */
    type: 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'rate_limit_error' | 'insufficient_quota' | 'server_error';
    /** The request field at fault, or null. */
    param: string | null;
    code: ErrorCode;
    /** (Extension) `policy_violation` only — the name of the policy that denied the request. */
    policy?: string;
    /** (Extension) `policy_violation` only — the name of the rule that denied the request. */
    rule?: string;
}
/** Machine-readable code, and its HTTP status and type: */
export type ErrorCode = 'invalid_request_error' | 'invalid_json' | 'missing_api_key' | 'invalid_api_key' | 'permission_denied' | 'model_not_allowed' | 'not_found' | 'model_not_found' | 'unsupported_api_version' | 'method_not_allowed' | 'conflict' | 'request_too_large' | 'rate_limit_exceeded' | 'quota_exceeded' | 'internal_error' | 'model_crashed' | 'model_overloaded' | 'model_loading' | 'model_failed' | 'request_cancelled' | 'model_retired' | 'upstream_error' | 'upstream_unavailable' | 'upstream_timeout' | 'policy_violation' | 'limits_unavailable' | 'database_unavailable' | 'request_log_unavailable' | 'idempotency_key_in_use' | 'idempotency_key_reused';
/** A legacy function call. */
export interface FunctionCall {
    name: string;
    /** The arguments as JSON text (in an answer cut short by `max_tokens`, as far as they were written). */
    arguments: string;
}
/** `stop`: end of turn or a stop sequence; `length`: `max_tokens` or the context was reached (tool calls cut short keep their arguments so far); `tool_calls`: the answer is tool calls; `function_call`: the same for a request with the legacy `functions`. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'function_call';
/** (Sovereign) What an answer draws on: chunks that retrieval finds for */
export interface SourcesParam {
    /** Ids of the team's collections; another team's is a 404 (`param: sources.collections[i]`). */
    collections?: Array<string>;
    /** Sources given inline, numbered after the retrieved chunks. */
    documents?: Array<InlineDocument>;
    /** How many chunks retrieval contributes. */
    top_k?: number;
    mode?: SearchMode;
    rerank?: RerankOption;
}
export interface InlineDocument {
    /** The id citations and source links show (default `doc_<position from 1>`). */
    id?: string;
    title?: string;
    url?: string;
    /** The document's text (at most 100,000 bytes; upload longer ones to a collection). */
    text: string;
}
/** A span of the answer and the sources that support it. `start` and */
export interface Citation {
    /** The citation's position in the array. */
    index: number;
    start: number;
    end: number;
    text: string;
    sources: Array<CitedSource>;
}
/** A source as a citation shows it. A collection's chunk has `id` and */
export interface CitedSource {
    id: string;
    collection_id: string;
    document_id: string;
    chunk_id: string;
    title: string;
    url: string;
    /** The start of the source's text, verbatim, cut at about 300 characters (then marked with an ellipsis). */
    snippet: string;
    /** The source's marker number in the answer (`[number]`). */
    number: number;
}
/** The answer's citations, in order. */
export type Citations = Array<Citation>;
/** Sentences without a marker because a number or a capitalised name */
export type UnsupportedSentences = Array<{
    start: number;
    end: number;
    text: string;
}>;
/** (Sovereign) The answer to `POST /v1/completions` with `messages`: a */
export interface CitedChatCompletion {
    /** The `response_id` of the answer's source links. */
    id: string;
    object: 'chat.completion';
    created: UnixTime;
    model: string;
    choices: Array<unknown>;
    usage: TokenUsage | null;
    system_fingerprint: string;
    citations?: Citations;
    unsupported?: UnsupportedSentences;
}
/** (Sovereign) The answer to `POST /v1/completions` with a `prompt` and */
export interface CitedTextCompletion {
    /** The `response_id` of the answer's source links. */
    id: string;
    object: 'text_completion';
    created: UnixTime;
    model: string;
    system_fingerprint: string;
    choices: Array<unknown>;
    usage?: TokenUsage;
    citations?: Citations;
    unsupported?: UnsupportedSentences;
}
/** (Sovereign) The chunk of a streamed answer to `messages` with */
export interface CitedChatCompletionChunk {
    id: string;
    object: 'chat.completion.chunk';
    created: UnixTime;
    model: string;
    system_fingerprint: string;
    /** Always empty. */
    choices: Array<unknown>;
    citations: Citations;
    unsupported?: UnsupportedSentences;
}
export interface PolicyRule {
    name: string;
    stage: 'input' | 'output';
    /** A CEL expression of type bool (docs/policies.md lists the variables). */
    when: string;
    action: 'allow' | 'deny' | 'redact' | 'flag';
    reason?: string;
    /** PII kinds a redact rule removes (default: every kind). */
    redact?: Array<string>;
}
export interface PolicyWrite {
    /** Ignored (set by the server). */
    id?: string;
    /** Ignored. */
    object?: string;
    /** Ignored. */
    created_at?: number;
    /** Ignored. */
    updated_at?: number;
    name: string;
    description?: string;
    scope: 'deployment' | 'team' | 'key';
    /** The team's or key's id (none for the deployment). */
    scope_id?: string;
    enabled?: boolean;
    /** Custom PII detectors: kind → RE2 pattern. */
    detectors?: Record<string, string>;
    rules: Array<PolicyRule>;
}
export interface Policy {
    id: string;
    object: 'policy';
    name: string;
    description?: string;
    scope: 'deployment' | 'team' | 'key';
    scope_id?: string;
    enabled: boolean;
    detectors?: Record<string, string>;
    rules: Array<PolicyRule>;
    created_at: number;
    updated_at: number;
}
export interface PolicySpan {
    kind: string;
    start: number;
    end: number;
}
export interface PolicyDecision {
    id: string;
    object: 'policy_decision';
    created_at: number;
    request_id: string;
    team_id: string;
    key_id: string;
    model?: string;
    route?: string;
    policy_id: string;
    /** The policy's name. */
    policy: string;
    rule: string;
    stage: 'input' | 'output';
    action: 'deny' | 'redact' | 'flag';
    reason?: string;
    /** The matched PII (kind and byte offsets in the stage's text), never the text itself. */
    spans: Array<PolicySpan>;
}
/** One event of the log, as `GET /v1/events` sends it in `data:` and */
export interface SovereignEvent {
    /** `evt_…`, also the SSE `id:` to resume after. */
    id: string;
    object: 'event';
    type: 'model.ready' | 'model.failed' | 'model.unloaded' | 'audit.triggered' | 'workflow.run.succeeded' | 'workflow.run.failed' | 'workflow.run.cancelled' | 'workflow.approval.requested' | 'workflow.run.updated' | 'workflow.step.updated' | 'batch.completed' | 'batch.failed' | 'batch.cancelled' | 'batch.expired' | 'document.ready' | 'document.failed' | 'webhook.disabled';
    /** Unix seconds. */
    created_at: number;
    data: Record<string, unknown>;
}
/** A workflow to create, or its next version. Unknown fields are a 400. */
export interface WorkflowWrite {
    /** 1 to 200 bytes. */
    name: string;
    /** At most 4096 bytes. */
    description?: string;
    definition: WorkflowDefinition;
}
/** The steps, run in order (a `condition` step jumps forward), and the */
export interface WorkflowDefinition {
    steps: Array<WorkflowStep>;
    /** The run's output: any JSON value whose strings are templates, */
    output?: unknown | null;
}
/** One step. Which fields a step takes depends on its `type`; a field */
export type WorkflowStep = (WorkflowChatStep | WorkflowRetrieveStep | WorkflowRerankStep | WorkflowAnswerWithSourcesStep | WorkflowHTTPStep | WorkflowTransformStep | WorkflowConditionStep | WorkflowApprovalStep | WorkflowWaitStep);
/** 1 to 64 letters, digits or `_`, not starting with a digit. */
export type WorkflowStepId = string;
/** A CEL condition over `input`, `steps` and `run`; false skips the step (`skipped`). */
export type WorkflowStepIf = string;
/** A Jinja template (at most 64 KiB; rendered at most 1 MiB) over `input`, `steps` and `run`. */
export type WorkflowTemplate = string;
/** A Go duration: `500ms`, `30s`, `10m`, `1h30m`. */
export type WorkflowDuration = string;
/** Tries in all (1 to 10), the second after `backoff` (default `1s`, at */
export interface WorkflowRetry {
    max_attempts: number;
    backoff?: WorkflowDuration;
}
/** Bounds each try of the step (default `10m`, at most `24h`). */
export type WorkflowStepTimeout = WorkflowDuration;
/** Who may decide: keys of the run's team holding one of `scopes` (as */
export interface WorkflowApprovers {
    scopes?: Array<string>;
    teams?: Array<string>;
    key_ids?: Array<string>;
}
/** Calls `POST /v1/chat/completions`. Output: `{text, finish_reason, model, usage}`. */
export interface WorkflowChatStep {
    id: WorkflowStepId;
    type: 'chat';
    if?: WorkflowStepIf;
    model: string;
    messages: Array<{
        role: 'system' | 'developer' | 'user' | 'assistant';
        content: WorkflowTemplate;
    }>;
    max_tokens?: number;
    temperature?: number;
    retry?: WorkflowRetry;
    timeout?: WorkflowStepTimeout;
}
/** Searches each collection (`POST /v1/collections/{id}/search`) and */
export interface WorkflowRetrieveStep {
    id: WorkflowStepId;
    type: 'retrieve';
    if?: WorkflowStepIf;
    collection_ids: Array<string>;
    query: WorkflowTemplate;
    top_k?: number;
    mode?: 'hybrid' | 'vector' | 'keyword';
    retry?: WorkflowRetry;
    timeout?: WorkflowStepTimeout;
}
/** Calls `POST /v1/rerank` (documents returned). Output: `{results}`, the rerank results. */
export interface WorkflowRerankStep {
    id: WorkflowStepId;
    type: 'rerank';
    if?: WorkflowStepIf;
    model?: string;
    query: WorkflowTemplate;
    /** A CEL expression giving the list of documents to rank, e.g. `steps.find.output.hits.map(h, h.text)`. */
    documents: string;
    /** How many to keep (0 or absent: all). */
    top_n?: number;
    retry?: WorkflowRetry;
    timeout?: WorkflowStepTimeout;
}
/** Answers `question` from the collections with citations (`POST /v1/completions` with `messages`, `citations: true` and `sources`). Output: `{text, citations}`. */
export interface WorkflowAnswerWithSourcesStep {
    id: WorkflowStepId;
    type: 'answer_with_sources';
    if?: WorkflowStepIf;
    model: string;
    collection_ids: Array<string>;
    question: WorkflowTemplate;
    max_tokens?: number;
    temperature?: number;
    retry?: WorkflowRetry;
    timeout?: WorkflowStepTimeout;
}
/** An outbound HTTP call through the SSRF guard (docs/outbound.md). */
export interface WorkflowHTTPStep {
    id: WorkflowStepId;
    type: 'http';
    if?: WorkflowStepIf;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    /** A template; when it has no `{{`, an http or https URL checked against the outbound policy when the definition is saved. */
    url: string;
    headers?: Record<string, WorkflowTemplate>;
    body?: WorkflowTemplate;
    retry?: WorkflowRetry;
    timeout?: WorkflowStepTimeout;
}
/** A `template` (output `{text}`) or a CEL `expression` (output `{value}`): one of them. */
export interface WorkflowTransformStep {
    id: WorkflowStepId;
    type: 'transform';
    if?: WorkflowStepIf;
    template?: WorkflowTemplate;
    /** A CEL expression whose value is JSON. */
    expression?: string;
}
/** Evaluates `when` and continues at `then` (true) or `else` (false), */
export interface WorkflowConditionStep {
    id: WorkflowStepId;
    type: 'condition';
    if?: WorkflowStepIf;
    /** A CEL condition (a bool). */
    when: string;
    then?: WorkflowStepId;
    else?: WorkflowStepId;
}
/** Creates an approval and waits for its decision: approved, the step */
export interface WorkflowApprovalStep {
    id: WorkflowStepId;
    type: 'approval';
    if?: WorkflowStepIf;
    approvers?: WorkflowApprovers;
    instructions?: WorkflowTemplate;
    /** How long the approval waits (default `24h`, at most `720h`). */
    timeout?: WorkflowDuration;
}
/** Waits `duration` (at most `720h`), durably. Output: `{waited}`. */
export interface WorkflowWaitStep {
    id: WorkflowStepId;
    type: 'wait';
    if?: WorkflowStepIf;
    duration: WorkflowDuration;
}
export interface Workflow {
    id: string;
    object: 'workflow';
    name: string;
    description: string;
    /** 1 when created, one more at each update. */
    version: number;
    definition: WorkflowDefinition;
    created_at: number;
    /** When the current version was stored. */
    updated_at: number;
}
export interface WorkflowList {
    object: 'list';
    data: Array<Workflow>;
    has_more: boolean;
    first_id: string | null;
    last_id: string | null;
}
export interface WorkflowRunRequest {
    /** The run's input, any JSON value (`{}` when absent); expressions and templates see it as `input`. */
    input?: unknown | null;
}
/** Why a run or a step failed. */
export interface WorkflowRunError {
    code: 'step_failed' | 'expression_error' | 'template_error' | 'invalid_definition' | 'approval_rejected' | 'approval_expired' | 'cancelled';
    message: string;
    /** The step at fault, when it is a step's error. */
    step?: string;
}
export interface WorkflowRunStep {
    /** The step's id in the definition. */
    id: string;
    type: 'chat' | 'retrieve' | 'rerank' | 'answer_with_sources' | 'http' | 'transform' | 'condition' | 'approval' | 'wait';
    status: 'pending' | 'running' | 'waiting_approval' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';
    /** The step's output once it succeeded (its shape depends on the type), else null. */
    output: unknown | null;
    error: WorkflowRunError | null;
    /** Tries so far (retries count). */
    attempts: number;
    started_at: number | null;
    ended_at: number | null;
    duration_ms: number | null;
}
/** A run of a workflow at the version it started with. `status` goes */
export interface WorkflowRun {
    id: string;
    object: 'workflow.run';
    workflow_id: string;
    version: number;
    status: 'queued' | 'running' | 'waiting_approval' | 'succeeded' | 'failed' | 'cancelled';
    /** The run's input. */
    input: unknown | null;
    /** The run's output once it succeeded (the definition's `output` rendered, or the last step's output), else null. */
    output: unknown | null;
    /** Why the run failed or was cancelled, else null. */
    error: WorkflowRunError | null;
    /** The step running or waiting for an approval. */
    current_step: string | null;
    /** Every step of the definition, in order (null in lists). */
    steps: Array<WorkflowRunStep> | null;
    created_at: number;
    started_at: number | null;
    ended_at: number | null;
    /** From start to end, once ended. */
    duration_ms: number | null;
    /** The key that started the run: the steps' API calls run as it. */
    key_id: string;
    cancel_requested: boolean;
}
export interface WorkflowRunList {
    object: 'list';
    data: Array<WorkflowRun>;
    has_more: boolean;
    first_id: string | null;
    last_id: string | null;
}
/** A decision a run waits for at an approval step. */
export interface Approval {
    id: string;
    object: 'workflow.approval';
    run_id: string;
    workflow_id: string;
    step_id: string;
    status: 'pending' | 'approved' | 'rejected' | 'expired';
    /** The step's instructions, rendered. */
    instructions: string;
    approvers: WorkflowApprovers;
    /** The decision's comment (`the run was cancelled` for an approval its run's cancellation expired); empty for none. */
    comment: string;
    /** The deciding key's id; null while pending and for an expired approval. */
    decided_by: string | null;
    /** When it was decided or expired. */
    decided_at: number | null;
    expires_at: number;
    created_at: number;
}
export interface ApprovalList {
    object: 'list';
    data: Array<Approval>;
    has_more: boolean;
    first_id: string | null;
    last_id: string | null;
}
export interface ApprovalDecision {
    decision: 'approve' | 'reject';
    /** At most 4096 bytes; a rejection's comment is the run's error message. */
    comment?: string;
}
export interface LimitRule {
    object: 'limit_rule';
    scope: 'key' | 'team' | 'model';
    subject: string;
    requests_per_minute?: number;
    tokens_per_minute?: number;
    concurrent_requests?: number;
    tokens_per_day?: number;
    tokens_per_month?: number;
    source: 'config' | 'api';
    updated_at?: number;
}
export interface TokenUsage {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details: {
        /** Prompt tokens served from the KV cache of an earlier request. */
        cached_tokens: number;
    };
}
/** One API call. Never the key itself; `hash` chains the record to the one before (docs/records.md). */
export interface RequestLog {
    object: 'request_log';
    /** The record's place in the chain. */
    seq: number;
    /** The request id (`x-request-id`). */
    id: string;
    time: string;
    team_id: string;
    key_id: string;
    /** The person whose key made the request (their own key or their console sign-in's); absent for a service account's key. */
    user_id?: string;
    method: string;
    route: string;
    model: string;
    backend: string;
    replica: string;
    status: number;
    error_code: string;
    latency_ms: number;
    ttft_ms: number | null;
    prompt_tokens: number;
    completion_tokens: number;
    client_ip: string;
    user: string;
    /** The request's text, only for teams that capture (`PATCH /v1/teams/{id}`), redacted by their policies; at most 64 KiB. */
    prompt?: string;
    /** The answer's text as the client got it, only for teams that capture. */
    output?: string;
    prev_hash: string;
    hash: string;
}
export interface TokenizeRequest {
    model: string;
    /** The text to tokenize. */
    input?: string;
    /** Add the model's special tokens (such as BOS) as inference would. */
    add_special?: boolean;
}
export interface TokenizeResponse {
    tokens: Array<number>;
    count: number;
}
export interface DetokenizeRequest {
    model: string;
    tokens: Array<number>;
}
export interface DetokenizeResponse {
    text: string;
}
/** A chat completion request with `models` instead of `model`, not streamed, with one choice. */
export interface CompareRequest {
    /** The models to compare (ids or aliases), 2 to 5. */
    models: Array<string>;
    messages: Array<unknown>;
    max_tokens?: unknown;
    /** Same as `max_tokens`; wins when both are given. */
    max_completion_tokens?: unknown;
    temperature?: unknown;
    top_p?: unknown;
    top_k?: unknown;
    min_p?: unknown;
    repeat_penalty?: unknown;
    presence_penalty?: unknown;
    frequency_penalty?: unknown;
    seed?: unknown;
    logit_bias?: unknown;
    stop?: unknown;
    response_format?: unknown;
    user?: unknown;
    /** One completion per model. */
    n?: 1;
    /** Comparisons are not streamed. */
    stream?: false;
}
export interface ModelComparison {
    object: 'model.comparison';
    created: UnixTime;
    /** One per requested model, in the order of `models`. */
    results: Array<ComparisonResult>;
}
export interface ComparisonResult {
    /** The model's id (an alias is resolved), or the name as sent when it names no model. */
    model: string;
    status: 'succeeded' | 'failed';
    /** Only with `status: succeeded`. */
    output?: {
        content: string;
        /** `stop` or `length` (an upstream's own reason passes through). */
        finish_reason: string;
    };
    /** Only with `status: succeeded`, when the backend reported or counted usage. */
    usage?: TokenUsage;
    /** From the start of this model's run to its last token (or its error). */
    latency_ms: number;
    /** Time to the first generated text; null when there was none. */
    ttft_ms: number | null;
    /** Decode speed, completion tokens after the first over the time from the first to the last; null with fewer than two tokens. */
    tokens_per_second: number | null;
    /** Only with `status: failed`: the error envelope the model's request would have got. */
    error?: ErrorResponse;
}
export interface RerankRequest {
    /** A model with the `rerank` capability. */
    model: string;
    query: string;
    documents: Array<(string | {
        text: string;
    })>;
    /** Return only the best `top_n` results (default all). */
    top_n?: number;
    /** Include each result's `document`. */
    return_documents?: boolean;
}
export interface RerankResponse {
    object: 'list';
    model: string;
    results: Array<{
        /** The document's position in the request. */
        index: number;
        relevance_score: number;
        /** Unless `return_documents` is false. */
        document?: {
            text: string;
        };
    }>;
    usage: {
        prompt_tokens: number;
        total_tokens: number;
    };
}
/** OpenAI's model object plus what a platform team needs to choose and operate a model. */
export interface SovereignModel {
    id: string;
    object: 'model';
    /** Unix seconds when the model was installed or configured (0 for models from the configuration file). */
    created: number;
    owned_by: 'sovereign';
    /** `local`: a GGUF run by this server's engine; `upstream`: served by OpenAI-compatible servers (vLLM, llama-server, Ollama, TGI, another Sovereign). */
    backend: 'local' | 'upstream';
    /** `installed`: a GGUF in the models directory, unconfigured; `config`: the YAML file (read-only through the API); `api`: created or changed through the admin API. */
    source: 'installed' | 'config' | 'api';
    /** The architecture (llama, gemma3, bert, …), from the GGUF or the configuration. */
    family: string;
    /** What the model serves. Local chat models also have `rerank` (method `query-likelihood`) and `tools` (function calling). */
    capabilities: Array<'chat' | 'completions' | 'embeddings' | 'rerank' | 'tools' | 'vision' | 'audio'>;
    /** The operator's labels from the model's configuration (for example `eu` for where it runs), which policies can require (`model_tags`, docs/policies.md). */
    tags?: Array<string>;
    /** How the model serves `POST /v1/rerank`, present only with the `rerank` capability: */
    rerank_method?: 'cross-encoder' | 'query-likelihood' | 'chat-logits';
    /** Context length in tokens (0 if unknown). */
    context_length: number;
    /** Number of weights (0 if unknown). */
    parameters: number;
    /** The GGUF file type (Q4_K_M, F16, …); for upstream models as configured. */
    quantization: string;
    /** Size of the weights file in bytes (0 for upstream models). */
    size: number;
    /** The local model whose vocabulary counts this model's tokens; empty when none is known (an upstream model then reports its own usage, or usage is estimated). */
    tokenizer: string;
    /** `available`: nothing running or checked; `loading`; `ready`: loaded, or an upstream replica is healthy; `failed`: see `status_reason`. */
    status: 'available' | 'loading' | 'ready' | 'failed';
    /** Why the model failed; only with `status: failed`. */
    status_reason?: string;
    /** Other names that resolve to this model (`default`, `fast`). */
    aliases: Array<string>;
    limits: ModelLimits;
    deprecation?: ModelDeprecation;
    /** Where an upstream model is served; only for `backend: upstream`. The API key is never shown. */
    upstream?: {
        /** The model's name on the upstream. */
        model: string;
        api_key_set: boolean;
        replicas: Array<{
            url: string;
            healthy: boolean;
            breaker: 'closed' | 'open' | 'half_open';
            inflight: number;
            last_error?: string;
        }>;
    };
    stats: ModelStats;
}
/** What one request may ask of the model. */
export interface ModelLimits {
    /** Longer prompts are refused with 400 (defaults to the context length). */
    max_input_tokens?: number;
    /** A larger `max_tokens` is refused with 400; it is the default when a request sets none. */
    max_output_tokens?: number;
}
/** A deprecated model's responses carry `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `Link` to the replacement; after the sunset requests get 410 `model_retired`. */
export interface ModelDeprecation {
    deprecated_at?: string;
    sunset?: string;
    replacement?: string;
}
/** Figures the server measured for this model over the last hour. */
export interface ModelStats {
    window: '1h';
    requests: number;
    /** Requests that failed, including streams that failed after they started. */
    errors: number;
    latency_p50_ms: number;
    /** Median time to the first generated text. */
    ttft_p50_ms: number;
    decode_tokens_per_second: number;
}
export interface DeletedModel {
    id: string;
    object: 'model';
    deleted: true;
}
/** A model's configuration: the body of `POST /v1/models/{id}`, and the */
export interface ModelSpec {
    /** The model id; when present it must equal the path's. */
    id?: string;
    /** Default `upstream` when `base_url` or `replicas` is set, else `local`. */
    backend?: 'local' | 'upstream';
    /** A local model's GGUF file outside the models directory (a path on the server; checked when stored). */
    path?: string;
    /** An upstream's OpenAI base URL, up to where the OpenAI paths start: `http(s)://host[:port]/v1`, without credentials or query. */
    base_url?: string;
    /** More base URLs serving the same model; requests are balanced over `base_url` and these. */
    replicas?: Array<string>;
    /** Sent to every replica as `Authorization: Bearer`. Stored in the database in plain text and never returned (see `upstream.api_key_set`). */
    api_key?: string;
    /** The model's name on the upstream (default the id). */
    upstream_model?: string;
    timeouts?: ModelTimeouts;
    /** How often each replica is checked with `GET {base_url}/models` (default 10s; `off` disables checks). */
    health_check_interval?: Duration;
    /** Shown in the catalog (for local models read from the GGUF; set here it overrides). */
    family?: string;
    /** What the model can do (upstream default `[chat, completions]`; local models' come from the GGUF). */
    capabilities?: Array<'chat' | 'completions' | 'embeddings' | 'rerank' | 'tools' | 'vision' | 'audio'>;
    /** Labels for policies, e.g. `eu` where the model runs (`model_tags` in a policy's CEL rules). */
    tags?: Array<string>;
    /** How the model reranks, shown in the catalog (local models' come from the GGUF). */
    rerank_method?: 'cross-encoder' | 'query-likelihood' | 'chat-logits';
    /** Shown in the catalog and the default input limit. */
    context_length?: number;
    parameters?: number;
    quantization?: string;
    /** A local model with the same vocabulary; an upstream model uses it for `/v1/tokenize`, for the input limit, and to count usage its upstream does not report. */
    tokenizer?: string;
    /** Other names that resolve to this model (`default`, `fast`); same characters as ids, unique across ids and aliases. */
    aliases?: Array<string>;
    limits?: ModelLimits;
    deprecation?: ModelDeprecation;
}
/** A JSON merge patch of a `ModelSpec` (top-level fields): a field */
export interface ModelPatch {
    id?: string;
    backend?: 'local' | 'upstream' | null;
    path?: string | null;
    base_url?: string | null;
    replicas?: Array<string> | null;
    api_key?: string | null;
    upstream_model?: string | null;
    timeouts?: ModelTimeouts | null;
    health_check_interval?: Duration | null;
    family?: string | null;
    capabilities?: Array<'chat' | 'completions' | 'embeddings' | 'rerank' | 'tools' | 'vision' | 'audio'> | null;
    context_length?: number | null;
    parameters?: number | null;
    quantization?: string | null;
    tokenizer?: string | null;
    aliases?: Array<string> | null;
    limits?: ModelLimits | null;
    deprecation?: ModelDeprecation | null;
}
/** Bounds on the phases of an upstream request; an absent or zero one takes its default. */
export interface ModelTimeouts {
    /** Connecting to a replica (default 3s). A connection that cannot be made moves the request to the next replica. */
    connect?: Duration;
    /** Waiting for the response headers (default 60s; a busy upstream may queue the request). Past it, a 504 `upstream_timeout`. */
    first_byte?: Duration;
    /** Silence between two reads of a streamed answer before it is abandoned as stalled (default 30s). */
    idle?: Duration;
    /** A whole request (default 10m). */
    total?: Duration;
}
/** A Go duration string ("500ms", "30s", "2m", "1h30m"), a number of seconds, or (for `health_check_interval`) "off". */
export type Duration = (string | number);
export interface ModelList {
    object: 'list';
    data: Array<SovereignModel>;
}
export interface CreateCollectionRequest {
    /** Unique within the team (trimmed). `default` is the collection completions with `citations` and no `sources` use. */
    name: string;
    description?: string;
    /** A model with the `embeddings` capability (default `all-minilm-l6-v2`); an alias is stored as its model id. */
    embedding_model?: string;
    metadata?: Metadata;
}
/** Free-form JSON values, for the caller's own use (at most 32 keys). */
export type Metadata = Record<string, unknown>;
export interface Collection {
    id: string;
    object: 'collection';
    name: string;
    description: string;
    /** The model that embeds the collection's chunks and the queries searched in it. */
    embedding_model: string;
    metadata: Metadata;
    created_at: UnixTime;
    document_count: number;
    chunk_count: number;
}
export interface CollectionList {
    object: 'list';
    data: Array<Collection>;
}
export interface DeletedCollection {
    id: string;
    object: 'collection';
    deleted: true;
}
export interface CreateDocumentRequest {
    title?: string;
    /** Where the document comes from; shown in search results and citations. */
    url?: string;
    /** The document's text; chunk offsets point into it. */
    text: string;
    metadata?: Metadata;
}
/** A `multipart/form-data` upload. */
export interface DocumentUpload {
    /** The file (`.txt`, `.md`, `.html` or `.pdf`), with its file name. */
    file: string;
    /** The title (default the file's own title, then its name). */
    title?: string;
    url?: string;
    /** A JSON object, as text (at most 32 keys). */
    metadata?: string;
}
/** A document of a collection (without its text). */
export interface Document {
    id: string;
    object: 'document';
    collection_id: string;
    title: string;
    url: string;
    metadata: Metadata;
    /** `text` for a JSON body; an upload's detected format otherwise. */
    format: 'text' | 'txt' | 'md' | 'html' | 'pdf';
    /** `processing` until chunked, embedded and indexed; then `ready`, or `failed` with `error`. */
    status: 'processing' | 'ready' | 'failed';
    /** The share of the document's chunks embedded so far. */
    progress: number;
    /** Why ingestion failed; null otherwise. */
    error: string | null;
    /** The length of the document's text in characters (code points). */
    chars: number;
    chunk_count: number;
    created_at: UnixTime;
    updated_at: UnixTime;
}
export interface DocumentList {
    object: 'list';
    data: Array<Document>;
}
export interface DeletedDocument {
    id: string;
    object: 'document';
    deleted: true;
}
/** `hybrid`: vector and keyword search fused by reciprocal rank fusion; `vector` or `keyword`: one of them alone. */
export type SearchMode = 'hybrid' | 'vector' | 'keyword';
/** Reorder the best candidates with a rerank model: `true` (the */
export type RerankOption = (boolean | string) | null;
export interface SearchRequest {
    query: string;
    /** How many chunks to return. */
    top_k?: number;
    mode?: SearchMode;
    rerank?: RerankOption;
}
/** A chunk found by search. */
export interface SearchResult {
    object: 'search_result';
    chunk_id: string;
    document_id: string;
    collection_id: string;
    /** The document's title. */
    title: string;
    /** The document's URL. */
    url: string;
    /** The chunk's text. */
    text: string;
    /** Character (code point) offset of the chunk in its document's text. */
    start: number;
    /** End of the chunk (exclusive). */
    end: number;
    /** The fused score (Σ 1/(60 + rank)), or the rerank score when reranked; higher is better. */
    score: number;
    /** The vector search's similarity; null when vector search did not find the chunk. */
    vector_score: number | null;
    /** The keyword search's score; null when keyword search did not find the chunk. */
    keyword_score: number | null;
    /** The rerank model's score; only when reranked. */
    rerank_score?: number;
}
export interface SearchResultList {
    object: 'list';
    data: Array<SearchResult>;
    /** How long the search took, in milliseconds. */
    search_ms: number;
}
/** A record that a span of an answer cited a source (one per citation and cited source). */
export interface SourceLink {
    id: string;
    object: 'source_link';
    /** The `id` of the completion that holds the answer. */
    response_id: string;
    model: string;
    /** The API key that asked for the answer. */
    key_id: string;
    /** The cited span, as in the answer's `citations`. */
    citation: {
        index: number;
        start: number;
        end: number;
        text: string;
    };
    source: CitedSource;
    created_at: UnixTime;
}
export interface SourceLinkList {
    object: 'list';
    data: Array<SourceLink>;
    /** The first link's id; null on an empty page. */
    first_id: string | null;
    /** The last link's id (the `after` of the next page); null on an empty page. */
    last_id: string | null;
    /** Whether more links follow this page. */
    has_more: boolean;
}
export interface CreateWebhookRequest {
    /** Where events are POSTed; `http` or `https` (https is recommended). Checked against the outbound policy. */
    url: string;
    /** Event types (those of `Event.type`), or `["*"]` for all. */
    events: Array<string>;
    description?: string;
}
export interface UpdateWebhookRequest {
    url?: string;
    events?: Array<string>;
    description?: string;
    /** `true` re-enables a disabled webhook and resets its failure count. */
    enabled?: boolean;
}
export interface RotateWebhookSecretRequest {
    /** How long the previous secret keeps signing (a second signature). */
    grace_period_seconds?: number;
}
export interface Webhook {
    id: string;
    object: 'webhook';
    url: string;
    /** The subscribed event types, or `["*"]`. */
    events: Array<string>;
    description: string;
    enabled: boolean;
    /** Why the webhook is disabled (through the API, or after repeated failed deliveries); null while enabled. */
    disabled_reason: string | null;
    disabled_at: UnixTime | null;
    /** Deliveries that failed for good since the last successful attempt (10 disable the webhook). */
    consecutive_failures: number;
    /** While a rotation's grace period lasts, when the previous secret stops signing. */
    previous_secret_expires_at: UnixTime | null;
    team_id: string;
    created_at: UnixTime;
    updated_at: UnixTime;
    /** The signing secret (`whsec_` and base64); only in the answers of create and rotate_secret. */
    secret?: string;
}
/** A webhook object whose `secret` is present. */
export type WebhookWithSecret = (Webhook & Record<string, unknown>);
export interface WebhookList {
    object: 'list';
    data: Array<Webhook>;
    has_more: boolean;
    first_id: string | null;
    /** The `after` of the next page; null on an empty page. */
    last_id: string | null;
}
export interface DeletedWebhook {
    id: string;
    object: 'webhook';
    deleted: true;
}
export interface WebhookDelivery {
    id: string;
    object: 'webhook.delivery';
    webhook_id: string;
    /** The `webhook-id` header; the same for every delivery of the event to this webhook (retries and redeliveries), for receivers to dedupe. */
    message_id: string;
    event_id: string;
    event_type: string;
    /** `pending`: no attempt yet; `delivering`: attempted without success, */
    status: 'pending' | 'delivering' | 'succeeded' | 'failed';
    attempt_count: number;
    last_attempt_at: UnixTime | null;
    /** The last answer's HTTP status; null when none came. */
    last_status_code: number | null;
    last_error: string | null;
    next_attempt_at: UnixTime | null;
    /** The delivery this one repeats (a manual redelivery). */
    redelivery_of: string | null;
    created_at: UnixTime;
    ended_at: UnixTime | null;
    /** Every attempt, first first; only when retrieving one delivery. */
    attempts?: Array<WebhookDeliveryAttempt>;
}
export interface WebhookDeliveryAttempt {
    attempt: number;
    started_at: UnixTime;
    duration_ms: number;
    /** Null when no answer came (a refused target, a timeout, a network error). */
    status_code: number | null;
    /** The first KiB of the answer's body. */
    response_body: string;
    /** Why the attempt failed: a non-2xx answer, or the error that kept an answer from coming (a refused redirect says so). */
    error: string | null;
}
export interface WebhookDeliveryList {
    object: 'list';
    data: Array<WebhookDelivery>;
    has_more: boolean;
    first_id: string | null;
    /** The `after` of the next page; null on an empty page. */
    last_id: string | null;
}
/** See the `bearerAuth` security scheme. */
export type Scope = 'inference' | 'models:read' | 'models:write' | 'keys:read' | 'records:read' | 'workflows' | 'approvals' | 'webhooks' | 'console' | 'scim' | 'admin';
export interface CreateKeyRequest {
    /** A label for people. */
    name: string;
    /** The team the key belongs to; default the calling key's team. */
    team_id?: string;
    scopes: Array<Scope>;
    /** Seconds from now until the key expires; null or absent never expires. */
    expires_in?: number | null;
    /** `service` (an administrator's default; a team admin or owner may make one for their team) or `user` (a person's default: their own key, within their role). */
    kind?: 'service' | 'user';
    /** An administrator making a key for a user (kind `user`); the user must be a member of the team. */
    owner_user_id?: string;
}
export interface RotateKeyRequest {
    /** How long the old key keeps working. */
    grace_seconds?: number;
}
export interface ApiKey {
    id: string;
    object: 'api_key';
    name: string;
    /** The first 12 characters of the secret, to recognise the key in lists and logs. */
    prefix: string;
    team_id: string;
    scopes: Array<Scope>;
    created_at: UnixTime;
    expires_at: UnixTime | null;
    last_used_at: UnixTime | null;
    /** When the key was revoked. (A rotated key is not revoked; its `expires_at` becomes the end of the grace period.) */
    revoked_at: UnixTime | null;
    /** `service`: the team's key, made by an administrator; `user`: a person's own key, acting with at most its owner's role in the team; `session`: a console sign-in's (never listed). */
    kind?: 'service' | 'user' | 'session';
    /** The user who owns a `user` or `session` key. */
    owner_user_id?: string;
    /** The secret; only in the responses of create and rotate. */
    key?: string;
}
/** A key object whose `key` (the secret) is present. */
export type ApiKeyWithSecret = (ApiKey & Record<string, unknown>);
export interface ApiKeyList {
    object: 'list';
    data: Array<ApiKey>;
}
export interface CreateTeamRequest {
    /** Unique among teams. */
    name: string;
}
export interface Team {
    id: string;
    object: 'team';
    name: string;
    created_at: UnixTime;
    /** The team's request records keep their prompt and output text (off by default). */
    capture?: boolean;
}
export interface Invitation {
    id: string;
    object: 'invitation';
    email: string;
    team_id: string;
    role: Role;
    created_at: UnixTime;
    expires_at: UnixTime;
    accepted_at: UnixTime | null;
    /** Who accepted it. */
    user_id?: string;
    /** The link to send; only in the answer that makes the invitation. */
    url?: string;
}
/** A user's role in a team (docs/users.md): viewer (console, models:read, */
export type Role = 'viewer' | 'developer' | 'admin' | 'owner';
export interface Membership {
    object: 'team.membership';
    user_id: string;
    team_id: string;
    role: Role;
    /** What made it: `api`, `scim` or `oidc:<provider>`. */
    source: string;
    created_at: UnixTime;
}
export interface MembershipList {
    object: 'list';
    data: Array<Membership>;
}
export interface Person {
    id: string;
    object: 'user';
    email: string;
    name: string;
    active: boolean;
    /** Holds the admin scope, for every team. */
    instance_admin: boolean;
    /** Whether the user can sign in with a password (the hash is never shown). */
    has_password: boolean;
    /** Whether a password sign-in also asks for a code from an authenticator app (TOTP); the user turns it on in the console. */
    two_step: boolean;
    /** Password sign-in is locked after repeated failures (15 minutes). */
    locked: boolean;
    created_at: UnixTime;
    last_login_at: UnixTime | null;
    memberships: Array<Membership>;
}
export interface UserList {
    object: 'list';
    data: Array<Person>;
}
export interface CreateUserRequest {
    email: string;
    name?: string;
    password?: string;
    instance_admin?: boolean;
    memberships?: Array<{
        team_id: string;
        role: Role;
    }>;
}
export interface TeamList {
    object: 'list';
    data: Array<Team>;
}
/** Unix time in seconds. */
export type UnixTime = number;
/** A line of a batch's output or error file. A line the API answered */
export interface BatchRequestOutput {
    id: string;
    custom_id: string;
    response: {
        status_code: number;
        request_id: string;
        /** The endpoint's answer (JSON). */
        body: unknown;
    } | null;
    error: {
        code: string;
        message: string;
    } | null;
}
