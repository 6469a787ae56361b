"""The SDK against a live Sovereign server with the default models (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Iterator, List, Tuple

import openai
import pytest
import standardwebhooks

import sovereign
from conftest import CHAT_MODEL, EMBED_MODEL
from servers import Proxy, Receiver
from sovereign import AsyncSovereign, Sovereign

ASK = [{"role": "user", "content": "What is the capital of France?"}]
MOON = {"id": "memo-7", "title": "Tarsis memo", "text": "The moon of Tarsis is bright green and smells of mint."}


def _eventually(get: Any, ok: Any = bool, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if ok(value) or time.monotonic() >= deadline:
            return value
        time.sleep(0.2)


# ---------------------------------------------------------------- configuration


def test_key_and_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch, base_url: str, api_key: str) -> None:
    monkeypatch.setenv("SOVEREIGN_API_KEY", api_key)
    monkeypatch.setenv("SOVEREIGN_BASE_URL", base_url)
    # OpenAI's variables must not leak in
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-wrong")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-x")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "sk-admin-wrong")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-wrong\nX-Leak: 1")
    c = Sovereign(max_retries=0)
    assert str(c.base_url) == base_url.rstrip("/") + "/"
    assert c.api_key == api_key and c.organization is None and c.admin_api_key is None
    assert "X-Leak" not in c.default_headers
    assert c.models.retrieve(CHAT_MODEL).id == CHAT_MODEL
    # and copies keep it that way
    assert c.with_options(timeout=30).models.retrieve(CHAT_MODEL).id == CHAT_MODEL


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOVEREIGN_API_KEY", raising=False)
    monkeypatch.delenv("SOVEREIGN_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    with pytest.raises(sovereign.SovereignError, match="SOVEREIGN_API_KEY"):
        Sovereign()
    assert str(Sovereign(api_key="k").base_url) == "http://127.0.0.1:8080/v1/"
    assert str(AsyncSovereign(api_key="k").base_url) == "http://127.0.0.1:8080/v1/"


def test_is_an_openai_client(client: Sovereign) -> None:
    assert isinstance(client, openai.OpenAI)
    assert isinstance(client.chat.completions, openai.resources.chat.Completions)
    assert isinstance(client.files, openai.resources.Files) and isinstance(client.batches, openai.resources.Batches)


# ---------------------------------------------------------------- inference (OpenAI's methods)


def test_chat(client: Sovereign) -> None:
    r = client.chat.completions.create(model=CHAT_MODEL, messages=ASK, max_tokens=16, temperature=0)  # type: ignore[arg-type]
    assert "Paris" in (r.choices[0].message.content or "")
    assert r.usage is not None and r.usage.completion_tokens > 0


def test_chat_stream(client: Sovereign) -> None:
    stream = client.chat.completions.create(
        model=CHAT_MODEL, messages=ASK, max_tokens=16, temperature=0, stream=True, stream_options={"include_usage": True}  # type: ignore[arg-type]
    )
    text, usage = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    assert "Paris" in text and usage is not None and usage.completion_tokens > 0


def test_chat_tools(client: Sovereign) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather of a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    r = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=tools,  # type: ignore[arg-type]
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0,
    )
    call = (r.choices[0].message.tool_calls or [])[0]
    assert r.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments)["city"] in ("Paris", "Rome", "Oslo")  # type: ignore[union-attr]


def test_completions_with_citations(client: Sovereign) -> None:
    r = client.completions.create(
        model=CHAT_MODEL,
        prompt="What colour is the moon of Tarsis?",
        max_tokens=32,
        temperature=0,
        extra_body={"citations": True, "sources": {"documents": [MOON]}},
    )
    text = r.choices[0].text
    cites = (r.model_extra or {})["citations"]
    assert cites and cites[0]["sources"][0]["id"] == "memo-7"
    assert text[cites[0]["start"] : cites[0]["end"]] == cites[0]["text"]


def test_responses(client: Sovereign) -> None:
    r = client.responses.create(model=CHAT_MODEL, input="What is the capital of France?", max_output_tokens=16, temperature=0)
    assert r.status == "completed" and "Paris" in r.output_text


def test_embeddings(client: Sovereign) -> None:
    r = client.embeddings.create(model=EMBED_MODEL, input=["kitten", "cat"], encoding_format="float")
    assert [len(d.embedding) for d in r.data] == [384, 384]


def test_rerank(client: Sovereign) -> None:
    r = client.rerank.create(
        model=CHAT_MODEL,
        query="What is the capital of France?",
        documents=["Bananas are yellow.", "Paris is the capital of France."],
        top_n=2,
    )
    assert isinstance(r, sovereign.types.RerankResponse)
    assert r.results[0].index == 1 and r.results[0].relevance_score >= r.results[1].relevance_score


# ---------------------------------------------------------------- models


def test_models_list_retrieve_compare(client: Sovereign) -> None:
    ids = [m.id for m in client.models.list()]
    assert CHAT_MODEL in ids and EMBED_MODEL in ids
    m = client.models.retrieve(CHAT_MODEL)
    assert isinstance(m, sovereign.types.Model) and "chat" in (m.capabilities or []) and m.context_length
    cmp = client.models.compare(models=[CHAT_MODEL, "no-such-model"], messages=ASK, max_tokens=16, temperature=0)
    ok, bad = cmp.results
    assert ok.status == "succeeded" and "Paris" in (ok.output or {}).get("content", "")
    assert bad.status == "failed" and (bad.error or {})["error"]["code"] == "model_not_found"


def test_models_admin(client: Sovereign, base_url: str, api_key: str, unique: str) -> None:
    m = client.models.load(EMBED_MODEL)
    assert m.id == EMBED_MODEL and m.status in ("loading", "ready")
    before = client.models.retrieve(EMBED_MODEL).aliases or []
    alias = f"alias-{unique}"
    upd = client.models.update(EMBED_MODEL, patch={"aliases": [*before, alias]})
    assert alias in (upd.aliases or [])
    assert client.models.retrieve(alias).id == EMBED_MODEL
    assert client.models.update(EMBED_MODEL, patch={"aliases": before}).aliases == before
    # an upstream model relaying to this same server: created, used, unloaded, deleted
    relay = f"relay-{unique}"
    created = client.models.create(
        relay,
        spec={"backend": "upstream", "base_url": base_url, "upstream_model": CHAT_MODEL, "api_key": api_key, "capabilities": ["chat"]},
    )
    try:
        assert (created.id, created.backend, created.source) == (relay, "upstream", "api")
        r = client.chat.completions.create(model=relay, messages=ASK, max_tokens=16, temperature=0)  # type: ignore[arg-type]
        assert "Paris" in (r.choices[0].message.content or "")
        assert client.models.unload(relay).id == relay
    finally:
        assert client.models.delete(relay).deleted
    with pytest.raises(sovereign.ModelNotFoundError):
        client.models.retrieve(relay)


def test_errors_are_typed(client: Sovereign, base_url: str) -> None:
    with pytest.raises(sovereign.ModelNotFoundError) as e:
        client.chat.completions.create(model="no-such-model", messages=ASK, max_tokens=4)  # type: ignore[arg-type]
    assert isinstance(e.value, openai.NotFoundError) and e.value.code == "model_not_found"
    bad = Sovereign(base_url=base_url, api_key="sk-sov-" + "W" * 40, max_retries=0)
    with pytest.raises(sovereign.AuthenticationError) as a:
        bad.models.list()
    assert isinstance(a.value, openai.AuthenticationError) and a.value.code == "invalid_api_key"
    with pytest.raises(sovereign.BadRequestError):
        client.chat.completions.create(model=CHAT_MODEL, messages=[], max_tokens=4)


def test_policy_violation_names_policy_and_rule(client: Sovereign, unique: str) -> None:
    word = f"forbidden-{unique}"
    pol = client.policies.create(
        name=f"guard-{unique}",
        scope="deployment",
        rules=[{"name": "no-magic-word", "stage": "input", "when": f'input.contains("{word}")', "action": "deny", "reason": "magic word"}],
    )
    try:
        assert pol.rules[0].name == "no-magic-word"
        tested = client.policies.test(policy_id=pol.id, input={"model": CHAT_MODEL, "input": f"say {word}"})
        assert tested.action == "deny" and tested.decisions[0].rule == "no-magic-word"
        assert client.policies.test(policy_id=pol.id, input={"model": CHAT_MODEL, "input": "hello"}).action == "allow"
        with pytest.raises(sovereign.PolicyViolationError) as e:
            client.chat.completions.create(model=CHAT_MODEL, messages=[{"role": "user", "content": f"say {word}"}], max_tokens=4)
        assert isinstance(e.value, openai.PermissionDeniedError) and e.value.code == "policy_violation"
        assert e.value.policy == f"guard-{unique}", e.value.body
        assert e.value.rule == "no-magic-word", e.value.body
        # decisions are stored off the request path: the listing may run before the writer does
        decisions = _eventually(lambda: list(client.policy_decisions.list(policy_id=pol.id)))
        assert decisions and decisions[0].rule == "no-magic-word" and decisions[0].action == "deny"
        assert client.policy_decisions.retrieve(decisions[0].id).policy_id == pol.id
        assert any(p.id == pol.id for p in client.policies.list())
        upd = client.policies.update(pol.id, name=pol.name, scope="deployment", rules=[dict(r) for r in (x.to_dict() for x in pol.rules)], enabled=False)
        assert upd.enabled is False and client.policies.retrieve(pol.id).enabled is False
    finally:
        assert client.policies.delete(pol.id).deleted


# ---------------------------------------------------------------- collections, search, sources


def test_collection_upload_search_and_source_links(client: Sovereign, unique: str, tmp_path: Any) -> None:
    col = client.collections.create(name=f"docs-{unique}", description="sdk test")
    try:
        path = tmp_path / "moon.md"
        path.write_text("# Tarsis\n\nThe moon of Tarsis is bright green and smells of mint.\n")
        progress: List[Tuple[int, int]] = []
        doc = client.collections.documents.upload(
            col.id, file=path, title="Tarsis memo", metadata={"team": "astro"}, on_progress=lambda s, t: progress.append((s, t))
        )
        size = path.stat().st_size
        assert progress and progress[-1] == (size, size)
        assert doc.status in ("processing", "ready") and doc.collection_id == col.id
        doc = client.collections.documents.wait(col.id, doc.id, timeout=120)
        assert doc.status == "ready" and (doc.chunk_count or 0) >= 1
        text_doc = client.collections.documents.create(col.id, text="Bananas are yellow and grow in bunches.", title="fruit")
        assert client.collections.documents.wait(col.id, text_doc.id, timeout=120).status == "ready"
        assert {d.id for d in client.collections.documents.list(col.id)} == {doc.id, text_doc.id}
        hits = client.collections.search(col.id, query="What colour is the moon of Tarsis?", top_k=2)
        assert hits.data[0].document_id == doc.id and "green" in hits.data[0].text
        # an answer with citations from the collection, then its source links
        r = client.completions.create(
            model=CHAT_MODEL,
            prompt="What colour is the moon of Tarsis?",
            max_tokens=32,
            temperature=0,
            extra_body={"citations": True, "sources": {"collections": [col.id], "top_k": 2}},
        )
        cites = (r.model_extra or {}).get("citations")
        assert cites and cites[0]["sources"][0]["document_id"] == doc.id, r
        links = _eventually(lambda: list(client.source_links.list(response_id=r.id)))
        assert all(link.response_id == r.id for link in links)
        assert any(link.source and link.source.document_id == doc.id for link in links)
        by_col = client.source_links.list(collection_id=col.id, limit=5)
        assert by_col.data and all(link.source and link.source.collection_id == col.id for link in by_col.data)
        assert client.collections.retrieve(col.id).document_count == 2
        assert client.collections.documents.delete(col.id, text_doc.id).deleted
    finally:
        assert client.collections.delete(col.id).deleted


# ---------------------------------------------------------------- workflows, approvals, events


def _approval_workflow(client: Sovereign, unique: str) -> Any:
    return client.workflows.create(
        name=f"review-{unique}",
        description="draft then review",
        definition={
            "steps": [
                {
                    "id": "draft",
                    "type": "chat",
                    "model": CHAT_MODEL,
                    "max_tokens": 8,
                    "temperature": 0,
                    "messages": [{"role": "user", "content": "Say hello to {{ input.name }}."}],
                },
                {"id": "review", "type": "approval", "approvers": {"scopes": ["approvals"]}, "instructions": "Check {{ input.name }}", "timeout": "1h"},
            ]
        },
    )


def test_workflow_run_with_approval_and_its_events(client: Sovereign, unique: str) -> None:
    wf = _approval_workflow(client, unique)
    try:
        assert any(w.id == wf.id for w in client.workflows.list())
        run = client.workflows.runs.create(wf.id, input={"name": "Ada"})
        assert run.workflow_id == wf.id and run.status in ("queued", "running")
        run = client.workflow_runs.wait(run.id, timeout=120)
        assert run.status == "waiting_approval"
        pending = [a for a in client.approvals.list(status="pending") if a.run_id == run.id]
        assert len(pending) == 1 and pending[0].instructions == "Check Ada"
        assert client.approvals.retrieve(pending[0].id).status == "pending"
        decided = client.approvals.approve(pending[0].id, comment="fine")
        assert decided.status == "approved" and decided.comment == "fine"
        events = list(client.workflow_runs.events(run.id, timeout=120))  # ends after the run's last event
        types = [e.type for e in events]
        assert types[0] == "workflow.run.updated" and types[-1] == "workflow.run.succeeded"
        assert "workflow.approval.requested" in types
        assert all(isinstance(e, sovereign.Event) and e.id.startswith("evt_") for e in events)
        # resume after the 4th event: exactly the rest
        rest = list(client.workflow_runs.events(run.id, last_event_id=events[3].id))
        assert [e.id for e in rest] == [e.id for e in events[4:]]
        done = client.workflow_runs.retrieve(run.id)
        assert done.status == "succeeded" and [s.status for s in done.steps or []] == ["succeeded", "succeeded"]
        assert any(r.id == run.id for r in client.workflow_runs.list(workflow_id=wf.id))
    finally:
        assert client.workflows.delete(wf.id).deleted


def test_reject_and_cancel(client: Sovereign, unique: str) -> None:
    wf = client.workflows.create(
        name=f"gate-{unique}",
        definition={"steps": [{"id": "gate", "type": "approval", "approvers": {"scopes": ["approvals"]}, "instructions": "ok?"}]},
    )
    try:
        run = client.workflows.runs.create(wf.id, input={})
        run = client.workflow_runs.wait(run.id, timeout=60)
        ap = next(a for a in client.approvals.list(status="pending") if a.run_id == run.id)
        assert client.approvals.reject(ap.id, comment="no").status == "rejected"
        events = list(client.workflow_runs.events(run.id, timeout=60))
        assert events[-1].type == "workflow.run.failed"
        run2 = client.workflows.runs.create(wf.id, input={})
        client.workflow_runs.wait(run2.id, timeout=60)
        client.workflow_runs.cancel(run2.id)
        assert [e.type for e in client.workflow_runs.events(run2.id, timeout=60)][-1] == "workflow.run.cancelled"
    finally:
        client.workflows.delete(wf.id)


def _transform_workflow(client: Sovereign, unique: str) -> Any:
    return client.workflows.create(
        name=f"echo-{unique}",
        definition={"steps": [{"id": "echo", "type": "transform", "template": "hello {{ input.name }}"}]},
    )


def test_event_stream_resumes_after_a_dropped_connection(client: Sovereign, base_url: str, api_key: str, unique: str) -> None:
    wf = _transform_workflow(client, unique)
    proxy = Proxy(base_url.split("/v1")[0])
    try:
        run = client.workflows.runs.create(wf.id, input={"name": "Ada"})
        run_events = list(client.workflow_runs.events(run.id, timeout=60))
        assert run_events[-1].type == "workflow.run.succeeded"
        via = Sovereign(base_url=proxy.url + "/v1", api_key=api_key, max_retries=0)
        proxy.cut_sse_after = 2  # the first connection drops after two events
        got: List[sovereign.Event] = []
        with via.events.stream(last_event_id=run_events[0].id, timeout=60) as stream:
            for ev in stream:
                got.append(ev)
                if ev.id == run_events[-1].id:
                    break
            assert stream.reconnects >= 1 and stream.last_event_id == run_events[-1].id
        ids = [e.id for e in got]
        assert len(ids) == len(set(ids)), "an event was repeated"
        run_ids = [e.id for e in run_events[1:]]
        assert [i for i in ids if i in set(run_ids)] == run_ids, "an event was missed"
        evs = [r for r in proxy.requests if r.path.startswith("/v1/events")]
        assert len(evs) >= 2 and evs[1].headers.get("last-event-id") == got[1].id
    finally:
        proxy.close()
        client.workflows.delete(wf.id)


def test_async_client_workflow_events_and_pages(aclient: AsyncSovereign, unique: str) -> None:
    async def go() -> List[str]:
        async with aclient as c:
            wf = await c.workflows.create(
                name=f"echo-async-{unique}",
                definition={"steps": [{"id": "echo", "type": "transform", "template": "hi {{ input.name }}"}]},
            )
            run = await c.workflows.runs.create(wf.id, input={"name": "Bo"})
            types = [e.type async for e in c.workflow_runs.events(run.id, timeout=60)]
            ids = [w.id async for w in c.workflows.list(limit=1)]  # auto-paginates one item a page
            assert wf.id in ids
            models = [m.id async for m in c.models.list()]
            assert CHAT_MODEL in models
            emb = await c.embeddings.create(model=EMBED_MODEL, input="x")
            assert len(emb.data[0].embedding) == 384
            await c.workflows.delete(wf.id)
            return types

    types = asyncio.run(go())
    assert types[-1] == "workflow.run.succeeded"


def test_cursor_pagination_walks_every_page(client: Sovereign, unique: str) -> None:
    made = [_transform_workflow(client, f"{unique}-{i}") for i in range(3)]
    try:
        page = client.workflows.list(limit=1)
        assert len(page.data) == 1 and page.has_more
        ids = [w.id for w in client.workflows.list(limit=1)]
        assert {w.id for w in made} <= set(ids) and len(ids) == len(set(ids))
        pages = list(client.workflows.list(limit=2).iter_pages())
        assert len(pages) >= 2
    finally:
        for w in made:
            client.workflows.delete(w.id)


# ---------------------------------------------------------------- records, usage, limits


def test_logs_usage_limits(client: Sovereign, unique: str) -> None:
    client.chat.completions.create(model=CHAT_MODEL, messages=ASK, max_tokens=4, temperature=0, user=f"u-{unique}")  # type: ignore[arg-type]
    # the log is written off the request path: it shows up within moments
    logs = _eventually(lambda: client.logs.list(user=f"u-{unique}"), lambda p: len(p.data) == 1)
    rec = logs.data[0]
    assert rec.route == "POST /v1/chat/completions" and rec.model == CHAT_MODEL and rec.status == 200
    assert client.logs.retrieve(rec.id).hash == rec.hash
    proof = client.logs.proof(rec.id)
    assert proof.id == rec.id and proof.tree_size >= 1 and proof.root
    exported = client.logs.export()
    assert any(r.id == rec.id for r in exported)
    assert isinstance(client.logs.checkpoints().data, list)
    usage = client.usage.retrieve(group_by="model")
    row = next(r for r in usage.data if r.group == CHAT_MODEL)
    assert row.requests >= 1 and row.completion_tokens >= 1
    limits = client.limits.retrieve()
    assert limits.object == "list"


def test_limit_rules_admin(client: Sovereign, unique: str) -> None:
    team = client.teams.create(name=f"team-{unique}")
    rule = client.limits.rules.set("team", team.id, requests_per_minute=100, tokens_per_day=5000)
    assert (rule.requests_per_minute, rule.tokens_per_day, rule.source) == (100, 5000, "api")
    assert client.limits.rules.retrieve("team", team.id).requests_per_minute == 100
    assert any(r.subject == team.id for r in client.limits.rules.list().data)
    assert client.limits.rules.delete("team", team.id).deleted
    with pytest.raises(sovereign.NotFoundError):
        client.limits.rules.retrieve("team", team.id)


def test_rate_limit_headers_from_a_real_429(client: Sovereign, base_url: str, unique: str) -> None:
    team = client.teams.create(name=f"limited-{unique}")
    key = client.keys.create(name=f"limited-{unique}", scopes=["inference"], team_id=team.id)
    assert key.key and key.key.startswith("sk-")
    client.limits.rules.set("key", key.id, requests_per_minute=1)
    limited = Sovereign(base_url=base_url, api_key=key.key, max_retries=0)
    try:
        limited.embeddings.create(model=EMBED_MODEL, input="one")
        with pytest.raises(sovereign.RateLimitError) as e:
            limited.embeddings.create(model=EMBED_MODEL, input="two")
        err = e.value
        assert isinstance(err, openai.RateLimitError) and err.code == "rate_limit_exceeded"
        assert err.limit_requests == 1 and err.remaining_requests == 0
        assert err.retry_after is not None and 0 < err.retry_after <= 60
        assert err.reset_requests is not None and 0 < err.reset_requests <= 60
    finally:
        client.limits.rules.delete("key", key.id)
        client.keys.revoke(key.id)


def test_quota_exceeded_is_typed_and_a_long_retry_after_is_not_waited_for(client: Sovereign, base_url: str, unique: str) -> None:
    key = client.keys.create(name=f"quota-{unique}", scopes=["inference"])
    assert key.key
    client.limits.rules.set("key", key.id, tokens_per_day=20)
    try:
        q = Sovereign(base_url=base_url, api_key=key.key, max_retries=0)
        q.embeddings.create(model=EMBED_MODEL, input="hello world, this is a test sentence")  # 13 of the 20 tokens
        with pytest.raises(sovereign.QuotaExceededError) as e:
            q.embeddings.create(model=EMBED_MODEL, input="hello world, this is a test sentence")
        err = e.value
        assert isinstance(err, sovereign.RateLimitError) and isinstance(err, openai.RateLimitError)
        assert err.code == "quota_exceeded" and err.type == "insufficient_quota"
        assert err.retry_after is not None and 0 < err.retry_after <= 86400  # until the UTC day ends
        if err.retry_after > 120:  # beyond the client's 2-minute cap: raised at once, not retried
            patient = q.with_options(max_retries=3)
            t0 = time.monotonic()
            with pytest.raises(sovereign.QuotaExceededError):
                patient.embeddings.create(model=EMBED_MODEL, input="hello world, this is a test sentence")
            assert time.monotonic() - t0 < 5
    finally:
        client.limits.rules.delete("key", key.id)
        client.keys.revoke(key.id)


def test_inference_is_not_replayed_for_a_repeated_key(client: Sovereign, unique: str) -> None:
    # Every POST carries an Idempotency-Key; the server must not cache inference answers by it.
    headers = {"Idempotency-Key": f"same-{unique}"}
    first = client.embeddings.with_raw_response.create(model=EMBED_MODEL, input="kitten", extra_headers=headers)
    second = client.embeddings.with_raw_response.create(model=EMBED_MODEL, input="a different text", extra_headers=headers)
    assert first.headers.get("idempotent-replayed") is None and second.headers.get("idempotent-replayed") is None
    assert first.parse().data[0].embedding != second.parse().data[0].embedding


# ---------------------------------------------------------------- keys and teams


def test_keys_and_teams(client: Sovereign, base_url: str, unique: str) -> None:
    team = client.teams.create(name=f"t-{unique}")
    assert any(t.id == team.id for t in client.teams.list())
    assert client.teams.update(team.id, capture=True).capture is True
    key = client.keys.create(name=f"k-{unique}", scopes=["inference", "models:read"], team_id=team.id)
    assert key.key and key.team_id == team.id
    assert client.keys.retrieve(key.id).name == f"k-{unique}"
    assert any(k.id == key.id for k in client.keys.list(team_id=team.id))
    user = Sovereign(base_url=base_url, api_key=key.key, max_retries=0)
    assert CHAT_MODEL in [m.id for m in user.models.list()]
    with pytest.raises(sovereign.PermissionDeniedError):
        user.keys.list()
    rotated = client.keys.rotate(key.id)  # default grace: the old key keeps working for a day
    assert rotated.key and rotated.key != key.key and rotated.id != key.id
    successor = Sovereign(base_url=base_url, api_key=rotated.key, max_retries=0)
    assert CHAT_MODEL in [m.id for m in successor.models.list()]
    assert CHAT_MODEL in [m.id for m in user.models.list()]
    with pytest.raises(sovereign.ConflictError):  # a key rotates once
        client.keys.rotate(key.id, max_retries=0)
    assert client.keys.revoke(rotated.id).revoked_at
    with pytest.raises(sovereign.AuthenticationError) as e:
        successor.models.list()
    assert e.value.code == "invalid_api_key"


def test_key_rotation_with_zero_grace_ends_the_old_key(client: Sovereign, base_url: str, unique: str) -> None:
    # docs/openapi.yaml, POST /v1/keys/{id}/rotate: "0 revokes it at once"
    key = client.keys.create(name=f"z-{unique}", scopes=["models:read"])
    assert key.key
    rotated = client.keys.rotate(key.id, grace_seconds=0)
    try:
        old = Sovereign(base_url=base_url, api_key=key.key, max_retries=0)
        with pytest.raises(sovereign.AuthenticationError):
            old.models.list()
    finally:
        client.keys.revoke(key.id)
        client.keys.revoke(rotated.id)


# ---------------------------------------------------------------- idempotency through a proxy


def test_retried_create_returns_the_same_object(client: Sovereign, base_url: str, api_key: str, unique: str) -> None:
    proxy = Proxy(base_url.split("/v1")[0])
    swallowed: List[str] = []

    def decide(rec: Any, status: int) -> str:
        if rec.method == "POST" and rec.path == "/v1/teams" and status == 201 and not swallowed:
            swallowed.append(rec.headers["idempotency-key"])
            return "swallow"
        return "forward"

    proxy.decide = decide
    try:
        via = Sovereign(base_url=proxy.url + "/v1", api_key=api_key, max_retries=2)
        team = via.teams.create(name=f"idem-{unique}")
        posts = [(rec, status, headers, body) for rec, status, headers, body in proxy.replies if rec.path == "/v1/teams"]
        assert len(posts) == 2, "the create was not retried"
        (r1, s1, h1, b1), (r2, s2, h2, b2) = posts
        assert r1.headers["idempotency-key"] == r2.headers["idempotency-key"] == swallowed[0]
        assert s1 == s2 == 201 and json.loads(b1)["id"] == json.loads(b2)["id"] == team.id
        assert h2.get("idempotent-replayed") == "true"
        assert [t.id for t in client.teams.list() if t.name == f"idem-{unique}"] == [team.id], "created twice"
        # the same key with another body is refused
        with pytest.raises(sovereign.IdempotencyKeyReusedError):
            client.teams.create(name=f"other-{unique}", idempotency_key=swallowed[0])
    finally:
        proxy.close()


# ---------------------------------------------------------------- webhooks


def test_webhook_delivery_verified(client: Sovereign, unique: str) -> None:
    receiver = Receiver()
    wf = _transform_workflow(client, unique)
    hook = client.webhooks.create(url=receiver.url + "/hook", events=["workflow.run.succeeded"], description=f"sdk {unique}")
    try:
        secret = hook.secret
        assert secret and secret.startswith("whsec_")
        run = client.workflows.runs.create(wf.id, input={"name": "Ada"})
        got = receiver.wait_for(lambda r: json.loads(r.body).get("data", {}).get("run_id") == run.id)
        # verified by the SDK and by the official standardwebhooks package alike
        client.webhooks.verify(got.body, got.headers, secret)
        event = client.webhooks.unwrap(got.body, got.headers, secret)
        assert event.type == "workflow.run.succeeded" and event.data["run_id"] == run.id
        assert standardwebhooks.Webhook(secret).verify(got.body, got.headers)["id"] == event.id
        ts = int(got.headers["webhook-timestamp"])
        assert sovereign.sign_webhook(got.body, msg_id=got.headers["webhook-id"], timestamp=ts, secret=secret) == got.headers["webhook-signature"]
        tampered = got.body.replace(b"succeeded", b"failed")
        with pytest.raises(sovereign.WebhookVerificationError):
            client.webhooks.verify(tampered, got.headers, secret)
        with pytest.raises(standardwebhooks.WebhookVerificationError):
            standardwebhooks.Webhook(secret).verify(tampered, got.headers)
        other = "whsec_" + "A" * 43 + "="
        with pytest.raises(sovereign.WebhookVerificationError):
            client.webhooks.verify(got.body, got.headers, other)
        with pytest.raises(sovereign.WebhookVerificationError):
            sovereign.verify_webhook(got.body, got.headers, secret, now=ts + 3600)
        # rotation: both secrets sign during the grace period
        rotated = client.webhooks.rotate_secret(hook.id, grace_period_seconds=600)
        assert rotated.secret and rotated.secret != secret
        run2 = client.workflows.runs.create(wf.id, input={"name": "Bo"})
        got2 = receiver.wait_for(lambda r: json.loads(r.body).get("data", {}).get("run_id") == run2.id)
        assert len(got2.headers["webhook-signature"].split(" ")) == 2
        for s in (rotated.secret, secret):
            client.webhooks.verify(got2.body, got2.headers, s)
            standardwebhooks.Webhook(s).verify(got2.body, got2.headers)
        # the delivery log, and a redelivery (same message id)
        deliveries = client.webhooks.deliveries.list(hook.id, status="succeeded")
        assert len(deliveries.data) >= 2
        d = client.webhooks.deliveries.retrieve(hook.id, deliveries.data[0].id)
        assert d.attempts and d.attempts[0].status_code == 200
        again = client.webhooks.deliveries.redeliver(hook.id, d.id)
        assert again.redelivery_of == d.id
        receiver.wait_for(lambda r: r.headers["webhook-id"] == d.message_id and r is not got2 and r is not got, timeout=60)
        assert client.webhooks.update(hook.id, enabled=False).enabled is False
        assert any(h.id == hook.id for h in client.webhooks.list())
        assert client.webhooks.retrieve(hook.id).secret is None
    finally:
        client.webhooks.delete(hook.id)
        client.workflows.delete(wf.id)
        receiver.close()


# ---------------------------------------------------------------- batch workloads


def test_batch_chat_bounded_concurrency(client: Sovereign) -> None:
    questions = ["What is the capital of France?", "What is 2 + 2?", "Say hello."]
    progress: List[Tuple[int, int]] = []
    reqs = [{"model": CHAT_MODEL, "messages": [{"role": "user", "content": q}], "max_tokens": 12, "temperature": 0} for q in questions]
    reqs.insert(1, {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4})
    out = client.batch.chat(reqs, concurrency=2, on_progress=lambda d, t: progress.append((d, t)))
    assert [r.index for r in out] == [0, 1, 2, 3]
    assert isinstance(out[1].error, sovereign.ModelNotFoundError)
    assert "Paris" in out[0].response.choices[0].message.content
    assert all(r.ok for i, r in enumerate(out) if i != 1)
    assert sorted(progress) == [(1, 4), (2, 4), (3, 4), (4, 4)]
    alone = client.chat.completions.create(**reqs[2])
    assert out[2].response.choices[0].message.content == alone.choices[0].message.content


def test_batch_embeddings(client: Sovereign) -> None:
    out = client.batch.embeddings([{"model": EMBED_MODEL, "input": t} for t in ("a", "b", "c")], concurrency=3)
    assert all(r.ok and len(r.response.data[0].embedding) == 384 for r in out)


def test_batch_through_the_batch_api(client: Sovereign) -> None:
    reqs: List[dict[str, Any]] = [
        {"custom_id": "q1", "model": CHAT_MODEL, "messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 12, "temperature": 0},
        {"custom_id": "q2", "model": CHAT_MODEL, "messages": [{"role": "user", "content": "What is 2 + 2?"}], "max_tokens": 12, "temperature": 0},
    ]
    progress: List[Tuple[int, int]] = []
    before = {f.id for f in client.files.list()}
    out = client.batch.run_batch_api(reqs, poll_interval=0.5, timeout=300, on_progress=lambda d, t: progress.append((d, t)))
    assert [r.custom_id for r in out] == ["q1", "q2"] and all(r.ok for r in out)
    assert isinstance(out[0].response, openai.types.chat.ChatCompletion)
    assert "Paris" in (out[0].response.choices[0].message.content or "")
    assert progress and progress[-1] == (2, 2)
    assert {f.id for f in client.files.list()} == before, "files left behind"
    emb = client.batch.run_batch_api([{"model": EMBED_MODEL, "input": "kitten"}], endpoint="/v1/embeddings", poll_interval=0.5)
    assert isinstance(emb[0].response, openai.types.CreateEmbeddingResponse) and emb[0].custom_id == "item-0"


def test_async_resources_against_the_server(aclient: AsyncSovereign, unique: str) -> None:
    async def go() -> None:
        async with aclient as c:
            col = await c.collections.create(name=f"async-{unique}")
            sent: List[Tuple[int, int]] = []
            doc = await c.collections.documents.upload(
                col.id, file=b"Zorblat is the capital of Quux.", filename="quux.txt", on_progress=lambda s, t: sent.append((s, t))
            )
            assert sent[-1] == (31, 31)
            doc = await c.collections.documents.wait(col.id, doc.id, timeout=120)
            assert doc.status == "ready"
            assert [d.id async for d in c.collections.documents.list(col.id)] == [doc.id]
            hits = await c.collections.search(col.id, query="capital of Quux")
            assert hits.data[0].document_id == doc.id
            assert (await c.collections.delete(col.id)).deleted
            team = await c.teams.create(name=f"async-{unique}")
            rule = await c.limits.rules.set("team", team.id, tokens_per_minute=1000)
            assert rule.tokens_per_minute == 1000
            assert (await c.limits.rules.delete("team", team.id)).deleted
            assert team.id in [t.id async for t in c.teams.list()]
            assert (await c.usage.retrieve(group_by="day")).group_by == "day"
            assert [r async for r in c.logs.list(limit=2)]
            assert isinstance([a async for a in c.approvals.list(limit=5)], list)
            assert isinstance([p async for p in c.policies.list()], list)
            assert isinstance([w async for w in c.webhooks.list()], list)
            out = await c.batch.run_batch_api([{"model": EMBED_MODEL, "input": "kitten"}], endpoint="/v1/embeddings", poll_interval=0.5)
            assert out[0].ok and len(out[0].response.data[0].embedding) == 384
            with pytest.raises(sovereign.NotFoundError):
                await c.workflow_runs.retrieve("run_doesnotexist")

    asyncio.run(go())
