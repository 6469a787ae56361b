"""Sovereign's resources (synchronous).

``_async.py`` is generated from this file by ``tools/gen_async.py``: edit this one and regenerate.
"""

from __future__ import annotations

import json
import time
from typing import IO, Any, Iterable, List, Mapping, Optional, Sequence, Union, cast

from openai._compat import cached_property
from typing_extensions import Literal, Unpack

from .. import types as t
from .._resource import FileInput, ProgressCallback, RequestOpts, SyncResource, _body, _opts, _path, open_upload
from .._streams import EventStream
from ..pagination import SyncCursorPage, SyncPage

__all__ = [
    "Models",
    "Rerank",
    "Collections",
    "Documents",
    "SourceLinks",
    "Workflows",
    "WorkflowRuns",
    "Approvals",
    "Events",
    "Logs",
    "PolicyDecisions",
    "Policies",
    "Limits",
    "LimitRules",
    "UsageResource",
    "Webhooks",
    "WebhookDeliveries",
    "Keys",
    "Teams",
]

Scope = Literal["key", "team", "model"]


class Models(SyncResource):
    """``/v1/models``: the catalog (``list``, ``retrieve``), admin (``create``, ``update``,
    ``delete``, ``load``, ``unload``) and ``compare``."""

    def list(self, **opts: Unpack[RequestOpts]) -> SyncPage[t.Model]:
        return self._get_api_list("/models", page=SyncPage[t.Model], model=t.Model, options=_opts(opts))

    def retrieve(self, model: str, **opts: Unpack[RequestOpts]) -> t.Model:
        return self._get(_path("/models/{}", model), cast_to=t.Model, options=_opts(opts))

    def create(self, model: str, *, spec: Optional[Mapping[str, Any]] = None, **opts: Unpack[RequestOpts]) -> t.Model:
        """Registers a model (admin): ``spec`` is the ModelSpec (``backend``, ``path`` or ``base_url``, …)."""
        return self._post(_path("/models/{}", model), body=dict(spec or {}), cast_to=t.Model, options=_opts(opts))

    def update(self, model: str, *, patch: Mapping[str, Any], **opts: Unpack[RequestOpts]) -> t.Model:
        """Changes a model's spec (admin); only the given fields change."""
        return self._patch(_path("/models/{}", model), body=dict(patch), cast_to=t.Model, options=_opts(opts))

    def delete(self, model: str, **opts: Unpack[RequestOpts]) -> t.DeletedModel:
        return self._delete(_path("/models/{}", model), cast_to=t.DeletedModel, options=_opts(opts))

    def load(self, model: str, **opts: Unpack[RequestOpts]) -> t.Model:
        return self._post(_path("/models/{}/load", model), cast_to=t.Model, options=_opts(opts))

    def unload(self, model: str, **opts: Unpack[RequestOpts]) -> t.Model:
        return self._post(_path("/models/{}/unload", model), cast_to=t.Model, options=_opts(opts))

    def compare(
        self,
        *,
        models: Sequence[str],
        messages: Iterable[Mapping[str, Any]],
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        seed: Optional[int] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.ModelComparison:
        """Runs the same chat request on several models, side by side."""
        body = _body(
            models=list(models), messages=list(messages), max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        return self._post("/models/compare", body=body, cast_to=t.ModelComparison, options=_opts(opts))


class Rerank(SyncResource):
    """``POST /v1/rerank``."""

    def create(
        self,
        *,
        model: str,
        query: str,
        documents: Sequence[Union[str, Mapping[str, Any]]],
        top_n: Optional[int] = None,
        return_documents: Optional[bool] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.RerankResponse:
        body = _body(model=model, query=query, documents=list(documents), top_n=top_n, return_documents=return_documents)
        return self._post("/rerank", body=body, cast_to=t.RerankResponse, options=_opts(opts))


class Documents(SyncResource):
    """``/v1/collections/{id}/documents``."""

    def create(
        self,
        collection_id: str,
        *,
        text: str,
        title: Optional[str] = None,
        url: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Document:
        """Adds a document from its text (JSON); ingestion goes on in the background (``wait``)."""
        body = _body(text=text, title=title, url=url, metadata=metadata)
        return self._post(
            _path("/collections/{}/documents", collection_id), body=body, cast_to=t.Document, options=_opts(opts)
        )

    def upload(
        self,
        collection_id: str,
        *,
        file: FileInput,
        filename: Optional[str] = None,
        title: Optional[str] = None,
        url: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        on_progress: Optional[ProgressCallback] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Document:
        """Uploads a file (txt, md, html, pdf) from a path, bytes or a binary file object.

        ``on_progress(sent, total)`` is called as the file's bytes are sent.  The upload is retried
        like any request (the file is re-read from its start).
        """
        name, reader = open_upload(file, filename, on_progress)
        try:
            form = _body(title=title, url=url, metadata=json.dumps(dict(metadata)) if metadata is not None else None)
            o = _opts(opts)
            o["headers"] = {"Content-Type": "multipart/form-data", **dict(o.get("headers") or {})}
            return self._post(
                _path("/collections/{}/documents", collection_id),
                body=form,
                files=[("file", (name, cast(IO[bytes], reader)))],
                cast_to=t.Document,
                options=o,
            )
        finally:
            reader.close()

    def list(self, collection_id: str, **opts: Unpack[RequestOpts]) -> SyncPage[t.Document]:
        return self._get_api_list(
            _path("/collections/{}/documents", collection_id),
            page=SyncPage[t.Document],
            model=t.Document,
            options=_opts(opts),
        )

    def retrieve(self, collection_id: str, document_id: str, **opts: Unpack[RequestOpts]) -> t.Document:
        return self._get(
            _path("/collections/{}/documents/{}", collection_id, document_id), cast_to=t.Document, options=_opts(opts)
        )

    def delete(self, collection_id: str, document_id: str, **opts: Unpack[RequestOpts]) -> t.DeletedDocument:
        return self._delete(
            _path("/collections/{}/documents/{}", collection_id, document_id),
            cast_to=t.DeletedDocument,
            options=_opts(opts),
        )

    def wait(
        self, collection_id: str, document_id: str, *, timeout: float = 300.0, poll_interval: float = 0.5
    ) -> t.Document:
        """Polls a document until its ingestion ends (``ready`` or ``failed``); returns it."""
        deadline = time.monotonic() + timeout
        while True:
            doc = self.retrieve(collection_id, document_id)
            if doc.status in ("ready", "failed") or time.monotonic() >= deadline:
                return doc
            self._sleep(poll_interval)


class Collections(SyncResource):
    """``/v1/collections``: document collections for retrieval, and ``search``."""

    @cached_property
    def documents(self) -> Documents:
        return Documents(self._client)

    def create(
        self,
        *,
        name: str,
        description: Optional[str] = None,
        embedding_model: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Collection:
        body = _body(name=name, description=description, embedding_model=embedding_model, metadata=metadata)
        return self._post("/collections", body=body, cast_to=t.Collection, options=_opts(opts))

    def list(self, **opts: Unpack[RequestOpts]) -> SyncPage[t.Collection]:
        return self._get_api_list("/collections", page=SyncPage[t.Collection], model=t.Collection, options=_opts(opts))

    def retrieve(self, collection_id: str, **opts: Unpack[RequestOpts]) -> t.Collection:
        return self._get(_path("/collections/{}", collection_id), cast_to=t.Collection, options=_opts(opts))

    def delete(self, collection_id: str, **opts: Unpack[RequestOpts]) -> t.DeletedCollection:
        return self._delete(_path("/collections/{}", collection_id), cast_to=t.DeletedCollection, options=_opts(opts))

    def search(
        self,
        collection_id: str,
        *,
        query: str,
        top_k: Optional[int] = None,
        mode: Optional[Literal["hybrid", "vector", "keyword"]] = None,
        rerank: Union[bool, str, None] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.SearchResultList:
        body = _body(query=query, top_k=top_k, mode=mode, rerank=rerank)
        return self._post(
            _path("/collections/{}/search", collection_id), body=body, cast_to=t.SearchResultList, options=_opts(opts)
        )


class SourceLinks(SyncResource):
    """``GET /v1/source_links``: which sources each cited answer used."""

    def list(
        self,
        *,
        response_id: Optional[str] = None,
        document_id: Optional[str] = None,
        collection_id: Optional[str] = None,
        created_after: Optional[int] = None,
        created_before: Optional[int] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.SourceLink]:
        q = dict(
            response_id=response_id,
            document_id=document_id,
            collection_id=collection_id,
            created_after=created_after,
            created_before=created_before,
            limit=limit,
            after=after,
        )
        return self._get_api_list(
            "/source_links", page=SyncCursorPage[t.SourceLink], model=t.SourceLink, options=_opts(opts, q)
        )


class WorkflowRuns(SyncResource):
    """Workflow runs: ``client.workflows.runs`` and ``client.workflow_runs``."""

    def create(self, workflow_id: str, *, input: Any = None, **opts: Unpack[RequestOpts]) -> t.WorkflowRun:
        """Starts a run of a workflow with ``input``."""
        body = {"input": input} if input is not None else {}
        return self._post(_path("/workflows/{}/runs", workflow_id), body=body, cast_to=t.WorkflowRun, options=_opts(opts))

    def list(
        self,
        *,
        workflow_id: Optional[str] = None,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.WorkflowRun]:
        q = dict(workflow_id=workflow_id, status=status, limit=limit, after=after)
        return self._get_api_list(
            "/workflow_runs", page=SyncCursorPage[t.WorkflowRun], model=t.WorkflowRun, options=_opts(opts, q)
        )

    def retrieve(self, run_id: str, **opts: Unpack[RequestOpts]) -> t.WorkflowRun:
        return self._get(_path("/workflow_runs/{}", run_id), cast_to=t.WorkflowRun, options=_opts(opts))

    def cancel(self, run_id: str, **opts: Unpack[RequestOpts]) -> t.WorkflowRun:
        return self._post(_path("/workflow_runs/{}/cancel", run_id), cast_to=t.WorkflowRun, options=_opts(opts))

    def events(
        self,
        run_id: str,
        *,
        last_event_id: Optional[str] = None,
        timeout: Optional[float] = None,
        max_reconnects: int = 5,
    ) -> EventStream:
        """The run's events (SSE): every event from its start (or after ``last_event_id``), then
        live; the iterator ends after the run's last event."""
        return EventStream(
            self._client,
            _path("/workflow_runs/{}/events", run_id),
            query=None,
            last_event_id=last_event_id,
            timeout=timeout,
            headers=None,
            ends_with_run=True,
            reconnect=True,
            max_reconnects=max_reconnects,
            reconnect_delay=0.5,
        )

    def wait(self, run_id: str, *, timeout: float = 300.0, poll_interval: float = 0.5) -> t.WorkflowRun:
        """Polls a run until it ends or waits for an approval; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.retrieve(run_id)
            if run.status in ("succeeded", "failed", "cancelled", "waiting_approval") or time.monotonic() >= deadline:
                return run
            self._sleep(poll_interval)


class Workflows(SyncResource):
    """``/v1/workflows``: definitions; ``runs`` starts and follows them."""

    @cached_property
    def runs(self) -> WorkflowRuns:
        return WorkflowRuns(self._client)

    def create(
        self,
        *,
        name: str,
        definition: Mapping[str, Any],
        description: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Workflow:
        body = _body(name=name, definition=dict(definition), description=description)
        return self._post("/workflows", body=body, cast_to=t.Workflow, options=_opts(opts))

    def list(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, **opts: Unpack[RequestOpts]
    ) -> SyncCursorPage[t.Workflow]:
        q = dict(limit=limit, after=after)
        return self._get_api_list("/workflows", page=SyncCursorPage[t.Workflow], model=t.Workflow, options=_opts(opts, q))

    def retrieve(self, workflow_id: str, **opts: Unpack[RequestOpts]) -> t.Workflow:
        return self._get(_path("/workflows/{}", workflow_id), cast_to=t.Workflow, options=_opts(opts))

    def update(
        self,
        workflow_id: str,
        *,
        name: str,
        definition: Mapping[str, Any],
        description: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Workflow:
        body = _body(name=name, definition=dict(definition), description=description)
        return self._put(_path("/workflows/{}", workflow_id), body=body, cast_to=t.Workflow, options=_opts(opts))

    def delete(self, workflow_id: str, **opts: Unpack[RequestOpts]) -> t.DeletedWorkflow:
        return self._delete(_path("/workflows/{}", workflow_id), cast_to=t.DeletedWorkflow, options=_opts(opts))


class Approvals(SyncResource):
    """``/v1/approvals``: the approval steps of workflow runs."""

    def list(
        self,
        *,
        status: Optional[Literal["pending", "approved", "rejected", "expired"]] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.Approval]:
        q = dict(status=status, limit=limit, after=after)
        return self._get_api_list("/approvals", page=SyncCursorPage[t.Approval], model=t.Approval, options=_opts(opts, q))

    def retrieve(self, approval_id: str, **opts: Unpack[RequestOpts]) -> t.Approval:
        return self._get(_path("/approvals/{}", approval_id), cast_to=t.Approval, options=_opts(opts))

    def decide(
        self,
        approval_id: str,
        *,
        decision: Literal["approve", "reject"],
        comment: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Approval:
        body = _body(decision=decision, comment=comment)
        return self._post(_path("/approvals/{}", approval_id), body=body, cast_to=t.Approval, options=_opts(opts))

    def approve(self, approval_id: str, *, comment: Optional[str] = None, **opts: Unpack[RequestOpts]) -> t.Approval:
        return self.decide(approval_id, decision="approve", comment=comment, **opts)

    def reject(self, approval_id: str, *, comment: Optional[str] = None, **opts: Unpack[RequestOpts]) -> t.Approval:
        return self.decide(approval_id, decision="reject", comment=comment, **opts)


class Events(SyncResource):
    """``GET /v1/events``: the deployment's event log, live (SSE)."""

    def stream(
        self,
        *,
        types: Optional[Sequence[str]] = None,
        team_id: Optional[str] = None,
        last_event_id: Optional[str] = None,
        timeout: Optional[float] = None,
        max_reconnects: int = 5,
    ) -> EventStream:
        """Follows the log: from now, or after ``last_event_id``.  The iterator never ends by
        itself; it reconnects with ``Last-Event-ID`` when the connection drops."""
        return EventStream(
            self._client,
            "/events",
            query={"types": ",".join(types) if types else None, "team_id": team_id},
            last_event_id=last_event_id,
            timeout=timeout,
            headers=None,
            ends_with_run=False,
            reconnect=True,
            max_reconnects=max_reconnects,
            reconnect_delay=0.5,
        )


class Logs(SyncResource):
    """``/v1/logs``: the tamper-evident request log."""

    def list(
        self,
        *,
        since: Optional[int] = None,
        until: Optional[int] = None,
        model: Optional[str] = None,
        key_id: Optional[str] = None,
        route: Optional[str] = None,
        user: Optional[str] = None,
        status: Optional[str] = None,
        team_id: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.RequestLog]:
        q = dict(
            since=since,
            until=until,
            model=model,
            key_id=key_id,
            route=route,
            user=user,
            status=status,
            team_id=team_id,
            limit=limit,
            after=after,
        )
        return self._get_api_list("/logs", page=SyncCursorPage[t.RequestLog], model=t.RequestLog, options=_opts(opts, q))

    def retrieve(self, log_id: str, **opts: Unpack[RequestOpts]) -> t.RequestLog:
        return self._get(_path("/logs/{}", log_id), cast_to=t.RequestLog, options=_opts(opts))

    def export(
        self,
        *,
        since: Optional[int] = None,
        until: Optional[int] = None,
        model: Optional[str] = None,
        key_id: Optional[str] = None,
        team_id: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> List[t.RequestLog]:
        """Every matching record (``GET /v1/logs/export``, NDJSON), parsed."""
        q = dict(since=since, until=until, model=model, key_id=key_id, team_id=team_id)
        text = self._get("/logs/export", cast_to=str, options=_opts(opts, q))
        return [t.RequestLog.construct(**json.loads(line)) for line in text.splitlines() if line.strip()]

    def proof(self, log_id: str, *, checkpoint: Optional[int] = None, **opts: Unpack[RequestOpts]) -> t.LogProof:
        """The record's RFC 6962 inclusion proof (in the current tree, or in a checkpoint)."""
        q = dict(checkpoint=checkpoint)
        return self._get(_path("/logs/{}/proof", log_id), cast_to=t.LogProof, options=_opts(opts, q))

    def checkpoints(self, *, limit: Optional[int] = None, **opts: Unpack[RequestOpts]) -> t.LogCheckpointList:
        q = dict(limit=limit)
        return self._get("/logs/checkpoints", cast_to=t.LogCheckpointList, options=_opts(opts, q))


class PolicyDecisions(SyncResource):
    """``/v1/policy_decisions``: what the policies flagged, redacted or denied."""

    def list(
        self,
        *,
        policy_id: Optional[str] = None,
        rule: Optional[str] = None,
        action: Optional[Literal["deny", "redact", "flag"]] = None,
        key_id: Optional[str] = None,
        request_id: Optional[str] = None,
        model: Optional[str] = None,
        team_id: Optional[str] = None,
        since: Optional[int] = None,
        until: Optional[int] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.PolicyDecision]:
        q = dict(
            policy_id=policy_id,
            rule=rule,
            action=action,
            key_id=key_id,
            request_id=request_id,
            model=model,
            team_id=team_id,
            since=since,
            until=until,
            limit=limit,
            after=after,
        )
        return self._get_api_list(
            "/policy_decisions", page=SyncCursorPage[t.PolicyDecision], model=t.PolicyDecision, options=_opts(opts, q)
        )

    def retrieve(self, decision_id: str, **opts: Unpack[RequestOpts]) -> t.PolicyDecision:
        return self._get(_path("/policy_decisions/{}", decision_id), cast_to=t.PolicyDecision, options=_opts(opts))


class Policies(SyncResource):
    """``/v1/policies``: input and output policies (CEL rules, PII detectors)."""

    def list(self, **opts: Unpack[RequestOpts]) -> SyncPage[t.Policy]:
        return self._get_api_list("/policies", page=SyncPage[t.Policy], model=t.Policy, options=_opts(opts))

    def create(
        self,
        *,
        name: str,
        scope: Literal["deployment", "team", "key"],
        rules: Iterable[Mapping[str, Any]],
        scope_id: Optional[str] = None,
        description: Optional[str] = None,
        enabled: Optional[bool] = None,
        detectors: Optional[Mapping[str, Any]] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Policy:
        body = _body(
            name=name,
            scope=scope,
            rules=[dict(r) for r in rules],
            scope_id=scope_id,
            description=description,
            enabled=enabled,
            detectors=detectors,
        )
        return self._post("/policies", body=body, cast_to=t.Policy, options=_opts(opts))

    def retrieve(self, policy_id: str, **opts: Unpack[RequestOpts]) -> t.Policy:
        return self._get(_path("/policies/{}", policy_id), cast_to=t.Policy, options=_opts(opts))

    def update(
        self,
        policy_id: str,
        *,
        name: str,
        scope: Literal["deployment", "team", "key"],
        rules: Iterable[Mapping[str, Any]],
        scope_id: Optional[str] = None,
        description: Optional[str] = None,
        enabled: Optional[bool] = None,
        detectors: Optional[Mapping[str, Any]] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Policy:
        """Replaces a policy (``PUT``)."""
        body = _body(
            name=name,
            scope=scope,
            rules=[dict(r) for r in rules],
            scope_id=scope_id,
            description=description,
            enabled=enabled,
            detectors=detectors,
        )
        return self._put(_path("/policies/{}", policy_id), body=body, cast_to=t.Policy, options=_opts(opts))

    def delete(self, policy_id: str, **opts: Unpack[RequestOpts]) -> t.DeletedPolicy:
        return self._delete(_path("/policies/{}", policy_id), cast_to=t.DeletedPolicy, options=_opts(opts))

    def test(
        self,
        *,
        input: Mapping[str, Any],
        policy: Optional[Mapping[str, Any]] = None,
        policy_id: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.PolicyTestResult:
        """Evaluates a policy (given, or stored: ``policy_id``) on a sample ``input`` without a model call."""
        body = _body(input=dict(input), policy=dict(policy) if policy is not None else None, policy_id=policy_id)
        return self._post("/policies/test", body=body, cast_to=t.PolicyTestResult, options=_opts(opts))


class LimitRules(SyncResource):
    """``/v1/limits/rules`` (admin): rate limits and quotas per key, team or model."""

    def list(self, **opts: Unpack[RequestOpts]) -> t.LimitRuleList:
        return self._get("/limits/rules", cast_to=t.LimitRuleList, options=_opts(opts))

    def retrieve(self, scope: Scope, subject: str, **opts: Unpack[RequestOpts]) -> t.LimitRule:
        return self._get(_path("/limits/rules/{}/{}", scope, subject), cast_to=t.LimitRule, options=_opts(opts))

    def set(
        self,
        scope: Scope,
        subject: str,
        *,
        requests_per_minute: Optional[int] = None,
        tokens_per_minute: Optional[int] = None,
        concurrent_requests: Optional[int] = None,
        tokens_per_day: Optional[int] = None,
        tokens_per_month: Optional[int] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.LimitRule:
        """Sets the rule (``PUT``): the limits not given are unlimited."""
        body = _body(
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            concurrent_requests=concurrent_requests,
            tokens_per_day=tokens_per_day,
            tokens_per_month=tokens_per_month,
        )
        return self._put(_path("/limits/rules/{}/{}", scope, subject), body=body, cast_to=t.LimitRule, options=_opts(opts))

    def delete(self, scope: Scope, subject: str, **opts: Unpack[RequestOpts]) -> t.DeletedLimitRule:
        return self._delete(_path("/limits/rules/{}/{}", scope, subject), cast_to=t.DeletedLimitRule, options=_opts(opts))


class Limits(SyncResource):
    """``GET /v1/limits``: the caller's limits and what remains of them; ``rules`` (admin)."""

    @cached_property
    def rules(self) -> LimitRules:
        return LimitRules(self._client)

    def retrieve(self, **opts: Unpack[RequestOpts]) -> t.LimitList:
        return self._get("/limits", cast_to=t.LimitList, options=_opts(opts))


class UsageResource(SyncResource):
    """``GET /v1/usage``: requests and tokens, grouped."""

    def retrieve(
        self,
        *,
        group_by: Optional[Literal["model", "key", "team", "user", "day"]] = None,
        since: Optional[int] = None,
        until: Optional[int] = None,
        team_id: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Usage:
        q = dict(group_by=group_by, since=since, until=until, team_id=team_id)
        return self._get("/usage", cast_to=t.Usage, options=_opts(opts, q))


class WebhookDeliveries(SyncResource):
    """``/v1/webhooks/{id}/deliveries``: the delivery log, and redelivery."""

    def list(
        self,
        webhook_id: str,
        *,
        status: Optional[Literal["pending", "delivering", "succeeded", "failed"]] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **opts: Unpack[RequestOpts],
    ) -> SyncCursorPage[t.WebhookDelivery]:
        q = dict(status=status, limit=limit, after=after)
        return self._get_api_list(
            _path("/webhooks/{}/deliveries", webhook_id),
            page=SyncCursorPage[t.WebhookDelivery],
            model=t.WebhookDelivery,
            options=_opts(opts, q),
        )

    def retrieve(self, webhook_id: str, delivery_id: str, **opts: Unpack[RequestOpts]) -> t.WebhookDelivery:
        return self._get(
            _path("/webhooks/{}/deliveries/{}", webhook_id, delivery_id), cast_to=t.WebhookDelivery, options=_opts(opts)
        )

    def redeliver(self, webhook_id: str, delivery_id: str, **opts: Unpack[RequestOpts]) -> t.WebhookDelivery:
        return self._post(
            _path("/webhooks/{}/deliveries/{}/redeliver", webhook_id, delivery_id),
            cast_to=t.WebhookDelivery,
            options=_opts(opts),
        )


class Webhooks(SyncResource):
    """``/v1/webhooks``: endpoints that receive the events, signed the Standard Webhooks way.

    ``verify`` / ``unwrap`` check a delivery's signature (see ``sovereign.verify_webhook``).
    """

    @cached_property
    def deliveries(self) -> WebhookDeliveries:
        return WebhookDeliveries(self._client)

    def create(
        self, *, url: str, events: Sequence[str], description: Optional[str] = None, **opts: Unpack[RequestOpts]
    ) -> t.Webhook:
        """Registers an endpoint; the answer carries the signing ``secret`` (shown once)."""
        body = _body(url=url, events=list(events), description=description)
        return self._post("/webhooks", body=body, cast_to=t.Webhook, options=_opts(opts))

    def list(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, **opts: Unpack[RequestOpts]
    ) -> SyncCursorPage[t.Webhook]:
        q = dict(limit=limit, after=after)
        return self._get_api_list("/webhooks", page=SyncCursorPage[t.Webhook], model=t.Webhook, options=_opts(opts, q))

    def retrieve(self, webhook_id: str, **opts: Unpack[RequestOpts]) -> t.Webhook:
        return self._get(_path("/webhooks/{}", webhook_id), cast_to=t.Webhook, options=_opts(opts))

    def update(
        self,
        webhook_id: str,
        *,
        url: Optional[str] = None,
        events: Optional[Sequence[str]] = None,
        description: Optional[str] = None,
        enabled: Optional[bool] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.Webhook:
        body = _body(url=url, events=list(events) if events is not None else None, description=description, enabled=enabled)
        return self._patch(_path("/webhooks/{}", webhook_id), body=body, cast_to=t.Webhook, options=_opts(opts))

    def delete(self, webhook_id: str, **opts: Unpack[RequestOpts]) -> t.DeletedWebhook:
        return self._delete(_path("/webhooks/{}", webhook_id), cast_to=t.DeletedWebhook, options=_opts(opts))

    def rotate_secret(
        self, webhook_id: str, *, grace_period_seconds: Optional[int] = None, **opts: Unpack[RequestOpts]
    ) -> t.Webhook:
        """A new secret (in the answer); the old one keeps signing for the grace period."""
        body = _body(grace_period_seconds=grace_period_seconds)
        return self._post(_path("/webhooks/{}/rotate_secret", webhook_id), body=body, cast_to=t.Webhook, options=_opts(opts))

    def verify(
        self, payload: Union[str, bytes], headers: Any, secret: str, *, tolerance: int = 300
    ) -> None:
        """Raises ``sovereign.WebhookVerificationError`` unless the delivery is signed with ``secret``."""
        from .._webhooks import verify_webhook

        verify_webhook(payload, headers, secret, tolerance=tolerance)

    def unwrap(
        self, payload: Union[str, bytes], headers: Any, secret: str, *, tolerance: int = 300
    ) -> t.Event:
        """Verifies a delivery and returns its ``Event``."""
        from .._webhooks import unwrap_webhook

        return unwrap_webhook(payload, headers, secret, tolerance=tolerance)


class Keys(SyncResource):
    """``/v1/keys`` (admin): API keys."""

    def create(
        self,
        *,
        name: str,
        scopes: Sequence[str],
        team_id: Optional[str] = None,
        expires_in: Optional[int] = None,
        **opts: Unpack[RequestOpts],
    ) -> t.ApiKey:
        """A new key; the answer's ``key`` is the secret (shown once)."""
        body = _body(name=name, scopes=list(scopes), team_id=team_id, expires_in=expires_in)
        return self._post("/keys", body=body, cast_to=t.ApiKey, options=_opts(opts))

    def list(self, *, team_id: Optional[str] = None, **opts: Unpack[RequestOpts]) -> SyncPage[t.ApiKey]:
        return self._get_api_list("/keys", page=SyncPage[t.ApiKey], model=t.ApiKey, options=_opts(opts, dict(team_id=team_id)))

    def retrieve(self, key_id: str, **opts: Unpack[RequestOpts]) -> t.ApiKey:
        return self._get(_path("/keys/{}", key_id), cast_to=t.ApiKey, options=_opts(opts))

    def revoke(self, key_id: str, **opts: Unpack[RequestOpts]) -> t.ApiKey:
        return self._delete(_path("/keys/{}", key_id), cast_to=t.ApiKey, options=_opts(opts))

    def rotate(self, key_id: str, *, grace_seconds: Optional[int] = None, **opts: Unpack[RequestOpts]) -> t.ApiKey:
        """A new secret for the key; the old one works for ``grace_seconds``."""
        body = _body(grace_seconds=grace_seconds)
        return self._post(_path("/keys/{}/rotate", key_id), body=body, cast_to=t.ApiKey, options=_opts(opts))


class Teams(SyncResource):
    """``/v1/teams`` (admin)."""

    def create(self, *, name: str, **opts: Unpack[RequestOpts]) -> t.Team:
        return self._post("/teams", body={"name": name}, cast_to=t.Team, options=_opts(opts))

    def list(self, **opts: Unpack[RequestOpts]) -> SyncPage[t.Team]:
        return self._get_api_list("/teams", page=SyncPage[t.Team], model=t.Team, options=_opts(opts))

    def update(self, team_id: str, *, capture: bool, **opts: Unpack[RequestOpts]) -> t.Team:
        return self._patch(_path("/teams/{}", team_id), body={"capture": capture}, cast_to=t.Team, options=_opts(opts))
