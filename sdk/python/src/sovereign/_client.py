"""``Sovereign`` and ``AsyncSovereign``: the official OpenAI clients, pointed at Sovereign, with
Sovereign's resources, typed errors and idempotent retries added."""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable, Mapping, Optional, Union

import httpx2
import openai
from openai import DEFAULT_MAX_RETRIES, NotGiven, not_given
from openai._compat import cached_property
from typing_extensions import override

from . import resources as r
from ._errors import SovereignError, make_status_error
from .batch import AsyncBatchResource, BatchResource

__all__ = ["Sovereign", "AsyncSovereign", "DEFAULT_BASE_URL", "IDEMPOTENCY_HEADER"]

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
IDEMPOTENCY_HEADER = "Idempotency-Key"
_MISSING_KEY = "Missing API key: pass api_key=... or set the SOVEREIGN_API_KEY environment variable."


def _resolve(api_key: Any, base_url: Any) -> "tuple[Any, Any]":
    if api_key is None:
        api_key = os.environ.get("SOVEREIGN_API_KEY") or None
    if api_key is None:
        raise SovereignError(_MISSING_KEY)
    if base_url is None or isinstance(base_url, NotGiven):
        base_url = os.environ.get("SOVEREIGN_BASE_URL") or DEFAULT_BASE_URL
    return api_key, base_url


def _own_settings(
    client: Union[openai.OpenAI, openai.AsyncOpenAI],
    organization: Optional[str],
    project: Optional[str],
    webhook_secret: Optional[str],
    admin_api_key: Optional[str],
    default_headers: Optional[Mapping[str, str]],
) -> None:
    """Undoes what the parent read from OPENAI_* variables for what was not given (none of them
    applies to a Sovereign server) and turns on Idempotency-Key for non-GET requests."""
    client.organization = organization
    client.project = project
    client.webhook_secret = webhook_secret
    client.admin_api_key = admin_api_key
    client._custom_headers = dict(default_headers or {})
    client._ambient_authorizations = frozenset()
    client._idempotency_header = IDEMPOTENCY_HEADER


class Sovereign(openai.OpenAI):
    """A client of a Sovereign server: every ``openai.OpenAI`` resource (chat, completions,
    responses, embeddings, files, batches, …) unchanged, plus Sovereign's own.

    ``api_key`` defaults to ``$SOVEREIGN_API_KEY``, ``base_url`` to ``$SOVEREIGN_BASE_URL`` or
    ``http://127.0.0.1:8080/v1``; no ``OPENAI_*`` variable is read.  Retries (``max_retries``,
    default 2) back off exponentially with jitter on connection errors, 408, 409, 429 and 5xx and
    honour ``Retry-After``; every non-GET request carries an ``Idempotency-Key`` that its retries
    reuse, so that a retried create returns the object the first attempt created.
    """

    def __init__(
        self,
        *,
        api_key: Union[str, Callable[[], str], None] = None,
        base_url: Union[str, httpx2.URL, None, NotGiven] = not_given,
        timeout: Union[float, httpx2.Timeout, None, NotGiven] = not_given,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Optional[Mapping[str, str]] = None,
        default_query: Optional[Mapping[str, object]] = None,
        http_client: Optional[httpx2.Client] = None,
        organization: Optional[str] = None,
        project: Optional[str] = None,
        webhook_secret: Optional[str] = None,
        websocket_base_url: Union[str, httpx2.URL, None] = None,
        admin_api_key: Optional[str] = None,
        _strict_response_validation: bool = False,
        **kwargs: Any,
    ) -> None:
        api_key, base_url = _resolve(api_key, base_url)
        kwargs.pop("_enforce_credentials", None)
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            default_query=default_query,
            http_client=http_client,
            organization=organization,
            project=project,
            webhook_secret=webhook_secret,
            websocket_base_url=websocket_base_url,
            admin_api_key=admin_api_key,
            _strict_response_validation=_strict_response_validation,
            **kwargs,
        )
        _own_settings(self, organization, project, webhook_secret, admin_api_key, default_headers)

    @override
    def _idempotency_key(self) -> str:
        return f"sovereign-python-{uuid.uuid4()}"

    @override
    def _make_status_error(self, err_msg: str, *, body: object, response: httpx2.Response) -> openai.APIStatusError:
        return make_status_error(err_msg, body=body, response=response)

    # ------------------------------------------------------------ Sovereign's resources

    @cached_property
    def models(self) -> r.Models:  # type: ignore[override]
        """The catalog, admin and ``compare`` (replaces OpenAI's ``models``; same list/retrieve/delete)."""
        return r.Models(self)

    @cached_property
    def rerank(self) -> r.Rerank:
        return r.Rerank(self)

    @cached_property
    def collections(self) -> r.Collections:
        return r.Collections(self)

    @cached_property
    def source_links(self) -> r.SourceLinks:
        return r.SourceLinks(self)

    @cached_property
    def workflows(self) -> r.Workflows:
        return r.Workflows(self)

    @cached_property
    def workflow_runs(self) -> r.WorkflowRuns:
        return r.WorkflowRuns(self)

    @cached_property
    def approvals(self) -> r.Approvals:
        return r.Approvals(self)

    @cached_property
    def events(self) -> r.Events:
        return r.Events(self)

    @cached_property
    def logs(self) -> r.Logs:
        return r.Logs(self)

    @cached_property
    def policy_decisions(self) -> r.PolicyDecisions:
        return r.PolicyDecisions(self)

    @cached_property
    def policies(self) -> r.Policies:
        return r.Policies(self)

    @cached_property
    def limits(self) -> r.Limits:
        return r.Limits(self)

    @cached_property
    def usage(self) -> r.UsageResource:
        return r.UsageResource(self)

    @cached_property
    def webhooks(self) -> r.Webhooks:  # type: ignore[override]
        """Sovereign's webhooks (CRUD, deliveries) and Standard Webhooks ``verify`` / ``unwrap``."""
        return r.Webhooks(self)

    @cached_property
    def keys(self) -> r.Keys:
        return r.Keys(self)

    @cached_property
    def teams(self) -> r.Teams:
        return r.Teams(self)

    @cached_property
    def batch(self) -> BatchResource:
        """Batch workloads: ``chat`` / ``embeddings`` with bounded concurrency, ``run_batch_api``."""
        return BatchResource(self)


class AsyncSovereign(openai.AsyncOpenAI):
    """The async twin of ``Sovereign`` (``openai.AsyncOpenAI`` with Sovereign's resources)."""

    def __init__(
        self,
        *,
        api_key: Union[str, Callable[[], Any], None] = None,
        base_url: Union[str, httpx2.URL, None, NotGiven] = not_given,
        timeout: Union[float, httpx2.Timeout, None, NotGiven] = not_given,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Optional[Mapping[str, str]] = None,
        default_query: Optional[Mapping[str, object]] = None,
        http_client: Optional[httpx2.AsyncClient] = None,
        organization: Optional[str] = None,
        project: Optional[str] = None,
        webhook_secret: Optional[str] = None,
        websocket_base_url: Union[str, httpx2.URL, None] = None,
        admin_api_key: Optional[str] = None,
        _strict_response_validation: bool = False,
        **kwargs: Any,
    ) -> None:
        api_key, base_url = _resolve(api_key, base_url)
        kwargs.pop("_enforce_credentials", None)
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            default_query=default_query,
            http_client=http_client,
            organization=organization,
            project=project,
            webhook_secret=webhook_secret,
            websocket_base_url=websocket_base_url,
            admin_api_key=admin_api_key,
            _strict_response_validation=_strict_response_validation,
            **kwargs,
        )
        _own_settings(self, organization, project, webhook_secret, admin_api_key, default_headers)

    @override
    def _idempotency_key(self) -> str:
        return f"sovereign-python-{uuid.uuid4()}"

    @override
    def _make_status_error(self, err_msg: str, *, body: object, response: httpx2.Response) -> openai.APIStatusError:
        return make_status_error(err_msg, body=body, response=response)

    @cached_property
    def models(self) -> r.AsyncModels:  # type: ignore[override]
        return r.AsyncModels(self)

    @cached_property
    def rerank(self) -> r.AsyncRerank:
        return r.AsyncRerank(self)

    @cached_property
    def collections(self) -> r.AsyncCollections:
        return r.AsyncCollections(self)

    @cached_property
    def source_links(self) -> r.AsyncSourceLinks:
        return r.AsyncSourceLinks(self)

    @cached_property
    def workflows(self) -> r.AsyncWorkflows:
        return r.AsyncWorkflows(self)

    @cached_property
    def workflow_runs(self) -> r.AsyncWorkflowRuns:
        return r.AsyncWorkflowRuns(self)

    @cached_property
    def approvals(self) -> r.AsyncApprovals:
        return r.AsyncApprovals(self)

    @cached_property
    def events(self) -> r.AsyncEvents:
        return r.AsyncEvents(self)

    @cached_property
    def logs(self) -> r.AsyncLogs:
        return r.AsyncLogs(self)

    @cached_property
    def policy_decisions(self) -> r.AsyncPolicyDecisions:
        return r.AsyncPolicyDecisions(self)

    @cached_property
    def policies(self) -> r.AsyncPolicies:
        return r.AsyncPolicies(self)

    @cached_property
    def limits(self) -> r.AsyncLimits:
        return r.AsyncLimits(self)

    @cached_property
    def usage(self) -> r.AsyncUsageResource:
        return r.AsyncUsageResource(self)

    @cached_property
    def webhooks(self) -> r.AsyncWebhooks:  # type: ignore[override]
        return r.AsyncWebhooks(self)

    @cached_property
    def keys(self) -> r.AsyncKeys:
        return r.AsyncKeys(self)

    @cached_property
    def teams(self) -> r.AsyncTeams:
        return r.AsyncTeams(self)

    @cached_property
    def batch(self) -> AsyncBatchResource:
        return AsyncBatchResource(self)
