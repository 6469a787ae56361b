"""Typed models of Sovereign's own API objects.

Every model extends the official SDK's ``openai.BaseModel``: unknown fields the
server adds later are kept (``model.model_extra``), and ``to_dict()`` /
``to_json()`` work as on OpenAI's types.  Fields are optional where the server
may leave them out, so that a response is never rejected for a missing field.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from openai import BaseModel

__all__ = [
    "Model",
    "ModelLimits",
    "ModelStats",
    "ModelDeprecation",
    "DeletedModel",
    "ModelComparison",
    "ComparisonResult",
    "Collection",
    "DeletedCollection",
    "Document",
    "DeletedDocument",
    "SearchResult",
    "SearchResultList",
    "CitedSource",
    "SourceLink",
    "RerankResult",
    "RerankResponse",
    "Event",
    "Workflow",
    "DeletedWorkflow",
    "WorkflowRun",
    "WorkflowRunStep",
    "WorkflowRunError",
    "Approval",
    "RequestLog",
    "LogProof",
    "LogCheckpoint",
    "LogCheckpointList",
    "PolicyRule",
    "Policy",
    "DeletedPolicy",
    "PolicySpan",
    "PolicyDecision",
    "PolicyTestResult",
    "Limit",
    "LimitList",
    "LimitRule",
    "LimitRuleList",
    "DeletedLimitRule",
    "UsageRow",
    "Usage",
    "Webhook",
    "DeletedWebhook",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "ApiKey",
    "Team",
    "BatchItemResult",
]


# ---------------------------------------------------------------- models


class ModelLimits(BaseModel):
    max_input_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None


class ModelDeprecation(BaseModel):
    deprecated_at: Optional[str] = None
    sunset: Optional[str] = None
    replacement: Optional[str] = None


class ModelStats(BaseModel):
    window: Optional[str] = None
    requests: Optional[int] = None
    errors: Optional[int] = None
    latency_p50_ms: Optional[float] = None
    ttft_p50_ms: Optional[float] = None
    decode_tokens_per_second: Optional[float] = None


class Model(BaseModel):
    """A model of the catalog (``GET /v1/models/{id}``): OpenAI's fields and Sovereign's."""

    id: str
    object: str = "model"
    created: Optional[int] = None
    owned_by: Optional[str] = None
    backend: Optional[str] = None
    source: Optional[str] = None
    family: Optional[str] = None
    capabilities: Optional[List[str]] = None
    tags: Optional[List[str]] = None
    rerank_method: Optional[str] = None
    context_length: Optional[int] = None
    parameters: Optional[int] = None
    quantization: Optional[str] = None
    size: Optional[int] = None
    tokenizer: Optional[str] = None
    status: Optional[str] = None
    status_reason: Optional[str] = None
    aliases: Optional[List[str]] = None
    limits: Optional[ModelLimits] = None
    deprecation: Optional[ModelDeprecation] = None
    upstream: Optional[Dict[str, Any]] = None
    stats: Optional[ModelStats] = None


class DeletedModel(BaseModel):
    id: str
    object: str = "model"
    deleted: bool


class ComparisonResult(BaseModel):
    model: str
    status: str
    output: Optional[Dict[str, Any]] = None
    usage: Optional[Dict[str, Any]] = None
    latency_ms: Optional[float] = None
    ttft_ms: Optional[float] = None
    tokens_per_second: Optional[float] = None
    error: Optional[Dict[str, Any]] = None


class ModelComparison(BaseModel):
    object: str = "model.comparison"
    created: Optional[int] = None
    results: List[ComparisonResult]


# ---------------------------------------------------------------- collections


class Collection(BaseModel):
    id: str
    object: str = "collection"
    name: str
    description: Optional[str] = None
    embedding_model: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    created_at: Optional[int] = None
    document_count: Optional[int] = None
    chunk_count: Optional[int] = None


class DeletedCollection(BaseModel):
    id: str
    object: str = "collection"
    deleted: bool


class Document(BaseModel):
    id: str
    object: str = "document"
    collection_id: Optional[str] = None
    title: Optional[str] = None
    url: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    format: Optional[str] = None
    status: Optional[str] = None
    """``processing``, ``ready`` or ``failed``."""
    progress: Optional[float] = None
    error: Optional[str] = None
    chars: Optional[int] = None
    chunk_count: Optional[int] = None
    created_at: Optional[int] = None
    updated_at: Optional[int] = None


class DeletedDocument(BaseModel):
    id: str
    object: str = "document"
    deleted: bool


class SearchResult(BaseModel):
    object: str = "search_result"
    chunk_id: str
    document_id: str
    collection_id: Optional[str] = None
    title: Optional[str] = None
    url: Optional[str] = None
    text: str
    start: Optional[int] = None
    end: Optional[int] = None
    score: float
    vector_score: Optional[float] = None
    keyword_score: Optional[float] = None
    rerank_score: Optional[float] = None


class SearchResultList(BaseModel):
    object: str = "list"
    data: List[SearchResult]
    search_ms: Optional[float] = None


class CitedSource(BaseModel):
    id: Optional[str] = None
    collection_id: Optional[str] = None
    document_id: Optional[str] = None
    chunk_id: Optional[str] = None
    title: Optional[str] = None
    url: Optional[str] = None
    snippet: Optional[str] = None
    number: Optional[int] = None


class SourceLink(BaseModel):
    id: str
    object: str = "source_link"
    response_id: str
    model: Optional[str] = None
    key_id: Optional[str] = None
    citation: Optional[Dict[str, Any]] = None
    source: Optional[CitedSource] = None
    created_at: Optional[int] = None


class RerankResult(BaseModel):
    index: int
    relevance_score: float
    document: Optional[Dict[str, Any]] = None


class RerankResponse(BaseModel):
    object: str = "list"
    model: str
    results: List[RerankResult]
    usage: Optional[Dict[str, Any]] = None


# ---------------------------------------------------------------- events


class Event(BaseModel):
    """An event of the deployment's log, as ``GET /v1/events`` streams it and webhooks deliver it."""

    id: str
    object: str = "event"
    type: str
    created_at: int
    data: Dict[str, Any]


# ---------------------------------------------------------------- workflows


class Workflow(BaseModel):
    id: str
    object: str = "workflow"
    name: str
    description: Optional[str] = None
    version: Optional[int] = None
    definition: Dict[str, Any]
    created_at: Optional[int] = None
    updated_at: Optional[int] = None


class DeletedWorkflow(BaseModel):
    id: str
    object: str = "workflow.deleted"
    deleted: bool


class WorkflowRunError(BaseModel):
    code: str
    message: str
    step: Optional[str] = None


class WorkflowRunStep(BaseModel):
    id: str
    type: str
    status: str
    output: Optional[Any] = None
    error: Optional[WorkflowRunError] = None
    attempts: Optional[int] = None
    started_at: Optional[int] = None
    ended_at: Optional[int] = None
    duration_ms: Optional[float] = None


class WorkflowRun(BaseModel):
    id: str
    object: str = "workflow.run"
    workflow_id: str
    version: Optional[int] = None
    status: str
    """``queued``, ``running``, ``waiting_approval``, ``succeeded``, ``failed`` or ``cancelled``."""
    input: Optional[Any] = None
    output: Optional[Any] = None
    error: Optional[WorkflowRunError] = None
    current_step: Optional[str] = None
    steps: Optional[List[WorkflowRunStep]] = None
    created_at: Optional[int] = None
    started_at: Optional[int] = None
    ended_at: Optional[int] = None
    duration_ms: Optional[float] = None
    key_id: Optional[str] = None
    cancel_requested: Optional[bool] = None


class Approval(BaseModel):
    id: str
    object: str = "workflow.approval"
    run_id: str
    workflow_id: Optional[str] = None
    step_id: Optional[str] = None
    status: str
    instructions: Optional[str] = None
    approvers: Optional[Dict[str, Any]] = None
    comment: Optional[str] = None
    decided_by: Optional[str] = None
    decided_at: Optional[int] = None
    expires_at: Optional[int] = None
    created_at: Optional[int] = None


# ---------------------------------------------------------------- records


class RequestLog(BaseModel):
    id: str
    object: str = "request_log"
    seq: Optional[int] = None
    time: Optional[str] = None
    team_id: Optional[str] = None
    key_id: Optional[str] = None
    method: Optional[str] = None
    route: Optional[str] = None
    model: Optional[str] = None
    backend: Optional[str] = None
    replica: Optional[str] = None
    status: Optional[int] = None
    error_code: Optional[str] = None
    latency_ms: Optional[float] = None
    ttft_ms: Optional[float] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    client_ip: Optional[str] = None
    user: Optional[str] = None
    prompt: Optional[str] = None
    output: Optional[str] = None
    prev_hash: Optional[str] = None
    hash: Optional[str] = None


class LogProof(BaseModel):
    object: str = "log.inclusion_proof"
    id: str
    seq: int
    leaf_index: int
    leaf_hash: str
    tree_size: int
    root: str
    proof: List[str]
    checkpoint: Optional[int] = None
    hasher: Optional[str] = None


class LogCheckpoint(BaseModel):
    object: str = "log.checkpoint"
    id: int
    created_at: int
    first_seq: int
    last_seq: int
    tree_size: int
    root: str


class LogCheckpointList(BaseModel):
    object: str = "list"
    data: List[LogCheckpoint]


class UsageRow(BaseModel):
    group: str
    requests: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Usage(BaseModel):
    object: str = "usage"
    group_by: str
    since: Optional[int] = None
    until: Optional[int] = None
    data: List[UsageRow]


# ---------------------------------------------------------------- policies


class PolicyRule(BaseModel):
    name: str
    stage: str
    when: str
    action: str
    reason: Optional[str] = None
    redact: Optional[List[str]] = None


class Policy(BaseModel):
    id: str
    object: str = "policy"
    name: str
    description: Optional[str] = None
    scope: str
    scope_id: Optional[str] = None
    enabled: Optional[bool] = None
    detectors: Optional[Dict[str, Any]] = None
    rules: List[PolicyRule]
    created_at: Optional[int] = None
    updated_at: Optional[int] = None


class DeletedPolicy(BaseModel):
    id: str
    object: str = "policy.deleted"
    deleted: bool


class PolicySpan(BaseModel):
    kind: str
    start: int
    end: int


class PolicyDecision(BaseModel):
    id: str
    object: str = "policy_decision"
    created_at: Optional[int] = None
    request_id: Optional[str] = None
    team_id: Optional[str] = None
    key_id: Optional[str] = None
    model: Optional[str] = None
    route: Optional[str] = None
    policy_id: Optional[str] = None
    policy: Optional[str] = None
    rule: Optional[str] = None
    stage: Optional[str] = None
    action: Optional[str] = None
    reason: Optional[str] = None
    spans: Optional[List[PolicySpan]] = None


class PolicyTestResult(BaseModel):
    object: str = "policy.test"
    stage: str
    action: str
    decisions: List[PolicyDecision]
    redact: Optional[List[PolicySpan]] = None
    redacted_text: Optional[str] = None


# ---------------------------------------------------------------- limits


class Limit(BaseModel):
    object: str = "limit"
    scope: str
    subject: str
    name: str
    limit: int
    remaining: int
    reset_seconds: Optional[float] = None
    reset_at: Optional[int] = None


class LimitList(BaseModel):
    object: str = "list"
    data: List[Limit]


class LimitRule(BaseModel):
    object: str = "limit_rule"
    scope: str
    subject: str
    requests_per_minute: Optional[int] = None
    tokens_per_minute: Optional[int] = None
    concurrent_requests: Optional[int] = None
    tokens_per_day: Optional[int] = None
    tokens_per_month: Optional[int] = None
    source: Optional[str] = None
    updated_at: Optional[int] = None


class LimitRuleList(BaseModel):
    object: str = "list"
    data: List[LimitRule]


class DeletedLimitRule(BaseModel):
    object: str = "limit_rule.deleted"
    scope: str
    subject: str
    deleted: bool


# ---------------------------------------------------------------- webhooks


class Webhook(BaseModel):
    id: str
    object: str = "webhook"
    url: str
    events: List[str]
    description: Optional[str] = None
    enabled: Optional[bool] = None
    disabled_reason: Optional[str] = None
    disabled_at: Optional[int] = None
    consecutive_failures: Optional[int] = None
    previous_secret_expires_at: Optional[int] = None
    team_id: Optional[str] = None
    created_at: Optional[int] = None
    updated_at: Optional[int] = None
    secret: Optional[str] = None
    """``whsec_…``: only in the answers of create and rotate_secret."""


class DeletedWebhook(BaseModel):
    id: str
    object: str = "webhook"
    deleted: bool


class WebhookDeliveryAttempt(BaseModel):
    attempt: int
    started_at: Optional[int] = None
    duration_ms: Optional[float] = None
    status_code: Optional[int] = None
    response_body: Optional[str] = None
    error: Optional[str] = None


class WebhookDelivery(BaseModel):
    id: str
    object: str = "webhook.delivery"
    webhook_id: str
    message_id: Optional[str] = None
    event_id: Optional[str] = None
    event_type: Optional[str] = None
    status: str
    attempt_count: Optional[int] = None
    last_attempt_at: Optional[int] = None
    last_status_code: Optional[int] = None
    last_error: Optional[str] = None
    next_attempt_at: Optional[int] = None
    redelivery_of: Optional[str] = None
    created_at: Optional[int] = None
    ended_at: Optional[int] = None
    attempts: Optional[List[WebhookDeliveryAttempt]] = None


# ---------------------------------------------------------------- keys and teams


class ApiKey(BaseModel):
    id: str
    object: str = "api_key"
    name: str
    prefix: Optional[str] = None
    team_id: Optional[str] = None
    scopes: List[str]
    created_at: Optional[int] = None
    expires_at: Optional[int] = None
    last_used_at: Optional[int] = None
    revoked_at: Optional[int] = None
    key: Optional[str] = None
    """The secret: only in the answers of create and rotate."""


class Team(BaseModel):
    id: str
    object: str = "team"
    name: str
    created_at: Optional[int] = None
    capture: Optional[bool] = None


# ---------------------------------------------------------------- batch helper


class BatchItemResult(BaseModel):
    """One item of ``client.batch.chat`` / ``embeddings`` / ``run``: the result or the error, in input order."""

    index: int
    custom_id: Optional[str] = None
    response: Optional[Any] = None
    """The parsed answer (``ChatCompletion``, ``CreateEmbeddingResponse``, …) when the item succeeded."""
    error: Optional[Any] = None
    """The exception (``client.batch.chat``) or the error object (Batch API) when it failed."""

    @property
    def ok(self) -> bool:
        return self.error is None


JSONValue = Union[str, int, float, bool, None, Dict[str, Any], List[Any]]
