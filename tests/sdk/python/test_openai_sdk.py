"""The official `openai` Python package, unmodified, against a live Sovereign server.

Only the base URL differs from talking to OpenAI. The server is started by
scripts/sdk-test.sh, which passes:

    SOVEREIGN_BASE_URL  e.g. http://127.0.0.1:PORT/v1
    SOVEREIGN_API_KEY   a key with the inference and models:read scopes

Generations are kept short (max_tokens <= 32): the suite runs on CPU.
"""

from __future__ import annotations

import array
import base64
import json
import math
import os
import sys

import openai
import pytest
from openai import OpenAI

CHAT_MODEL = "gemma3-270m"
EMBED_MODEL = "all-minilm-l6-v2"
EMBED_DIMS = 384
WRONG_KEY = "sk-sov-" + "W" * 40


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the suite through scripts/sdk-test.sh", pytrace=False)
    return value


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("SOVEREIGN_BASE_URL")


@pytest.fixture(scope="session")
def api_key() -> str:
    return _env("SOVEREIGN_API_KEY")


@pytest.fixture(scope="session")
def client(base_url: str, api_key: str) -> OpenAI:
    # No retries: a failure must show the server's first answer, not a retried one.
    return OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests decide what the client reads from the environment.
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


def _ask(client: OpenAI, question: str, **kwargs):
    params = {"max_tokens": 32, "temperature": 0}
    params.update(kwargs)
    return client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": question}],
        **params,
    )


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# ---------------------------------------------------------------- chat


def test_chat_answers_paris(client: OpenAI) -> None:
    resp = _ask(client, "What is the capital of France?")
    assert resp.object == "chat.completion"
    assert resp.id
    assert resp.model == CHAT_MODEL
    assert len(resp.choices) == 1
    choice = resp.choices[0]
    assert choice.index == 0
    assert choice.message.role == "assistant"
    assert choice.message.content is not None
    assert "Paris" in choice.message.content
    assert choice.finish_reason in {"stop", "length"}
    assert resp.usage is not None
    assert resp.usage.prompt_tokens > 0
    assert resp.usage.completion_tokens > 0
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_chat_stream_with_usage(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=32,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    text = []
    finish_reasons = []
    usage_chunks = []
    ids = set()
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage_chunks.append(chunk)
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            if choice.finish_reason is not None:
                finish_reasons.append(choice.finish_reason)
    answer = "".join(text)
    assert answer.strip(), "streamed deltas concatenate to an empty answer"
    assert "Paris" in answer
    assert len(ids) == 1, f"chunks of one completion carry different ids: {ids}"
    assert len(finish_reasons) == 1 and finish_reasons[0] in {"stop", "length"}
    assert len(usage_chunks) == 1, "include_usage must add exactly one usage chunk"
    last = usage_chunks[0]
    assert last.choices == []
    assert last.usage.prompt_tokens > 0
    assert last.usage.completion_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens


def test_chat_stream_without_usage(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8,
        stream=True,
    )
    chunks = list(stream)
    assert chunks
    assert all(c.usage is None for c in chunks)


def test_chat_max_tokens(client: OpenAI) -> None:
    resp = _ask(client, "Count from one to one hundred in words, separated by commas.", max_tokens=3)
    assert resp.usage.completion_tokens <= 3
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage.completion_tokens == 3


def test_chat_max_completion_tokens(client: OpenAI) -> None:
    resp = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "Count from one to one hundred in words, separated by commas."}],
        max_completion_tokens=4,
        temperature=0,
    )
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage.completion_tokens == 4


def test_chat_stop(client: OpenAI) -> None:
    question = "What is the capital of France?"
    full = _ask(client, question).choices[0].message.content
    # Stop on the answer's last word: the output must be everything before it.
    words = full.split()
    assert len(words) >= 2, f"answer too short to test stop: {full!r}"
    stop = words[-1]
    expected = full[: full.index(stop)]
    resp = _ask(client, question, stop=[stop])
    content = resp.choices[0].message.content
    assert stop not in content
    assert content == expected
    assert resp.choices[0].finish_reason == "stop"


def test_chat_seed_reproducible(client: OpenAI) -> None:
    question = "Write one sentence about the sea."
    a = _ask(client, question, temperature=1, seed=1234, max_tokens=16).choices[0].message.content
    b = _ask(client, question, temperature=1, seed=1234, max_tokens=16).choices[0].message.content
    assert a
    assert a == b


def test_chat_system_and_multi_turn(client: OpenAI) -> None:
    resp = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[
            {"role": "system", "content": "You answer briefly."},
            {"role": "user", "content": "What is the capital of Italy?"},
            {"role": "assistant", "content": "Rome."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        max_tokens=16,
        temperature=0,
    )
    assert resp.choices[0].message.content


# ---------------------------------------------------------------- completions


def test_completions_prompt(client: OpenAI) -> None:
    resp = client.completions.create(
        model=CHAT_MODEL,
        prompt="The capital of France is",
        max_tokens=8,
        temperature=0,
    )
    assert resp.object == "text_completion"
    assert resp.model == CHAT_MODEL
    assert len(resp.choices) == 1
    assert resp.choices[0].index == 0
    assert resp.choices[0].text
    assert resp.choices[0].finish_reason in {"stop", "length"}
    assert resp.usage.prompt_tokens > 0
    assert 0 < resp.usage.completion_tokens <= 8


def test_completions_stream(client: OpenAI) -> None:
    stream = client.completions.create(
        model=CHAT_MODEL,
        prompt="The capital of France is",
        max_tokens=8,
        temperature=0,
        stream=True,
    )
    text = "".join(c.choices[0].text for c in stream if c.choices)
    assert text


# ---------------------------------------------------------------- answers with sources
# Sovereign's extension of /v1/completions: citations and sources travel in
# extra_body; the answer keeps the shape of the SDK method that asked.

MOON = {"id": "memo-7", "title": "Tarsis memo", "text": "The moon of Tarsis is bright green and smells of mint."}
CITED = {"citations": True, "sources": {"documents": [MOON]}}


def _check_citations(text: str, citations: list) -> None:
    assert citations, f"no citations for {text!r}"
    for i, c in enumerate(citations):
        assert c["index"] == i
        # Offsets are character (code point) offsets, as Python slices.
        assert text[c["start"] : c["end"]] == c["text"], (c, text)
    assert citations[0]["sources"][0]["id"] == "memo-7"
    assert citations[0]["sources"][0]["snippet"] in MOON["text"]
    assert "[1]" in text


def test_completions_with_citations(client: OpenAI) -> None:
    resp = client.completions.create(
        model=CHAT_MODEL, prompt="What colour is the moon of Tarsis?", max_tokens=32, temperature=0, extra_body=CITED
    )
    assert resp.object == "text_completion"
    _check_citations(resp.choices[0].text, resp.model_extra["citations"])


def test_completions_with_citations_messages(client: OpenAI) -> None:
    # The spec's form: messages and citations, answered as a chat completion.
    resp = client.post(
        "/completions",
        cast_to=openai.types.chat.ChatCompletion,
        body={
            "model": CHAT_MODEL,
            "messages": [{"role": "user", "content": "What colour is the moon of Tarsis?"}],
            "max_tokens": 32,
            "temperature": 0,
            **CITED,
        },
    )
    assert resp.object == "chat.completion"
    _check_citations(resp.choices[0].message.content, resp.model_extra["citations"])


def test_completions_with_citations_stream(client: OpenAI) -> None:
    stream = client.completions.create(
        model=CHAT_MODEL,
        prompt="What colour is the moon of Tarsis?",
        max_tokens=32,
        temperature=0,
        stream=True,
        extra_body=CITED,
    )
    text, citations = "", None
    for chunk in stream:
        assert citations is None, "text after the citations chunk"
        if chunk.choices:
            text += chunk.choices[0].text
        if (chunk.model_extra or {}).get("citations") is not None:
            citations = chunk.model_extra["citations"]
    _check_citations(text, citations)


def test_completions_without_citations_have_no_markers(client: OpenAI) -> None:
    resp = client.completions.create(
        model=CHAT_MODEL,
        prompt="What colour is the moon of Tarsis?",
        max_tokens=32,
        temperature=0,
        extra_body={"citations": False, "sources": {"documents": [MOON]}},
    )
    assert "citations" not in (resp.model_extra or {})
    assert "[1]" not in resp.choices[0].text


# ---------------------------------------------------------------- embeddings

WORDS = ["kitten", "cat", "car"]


@pytest.fixture(scope="module")
def float_vectors(client: OpenAI) -> list[list[float]]:
    resp = client.embeddings.create(model=EMBED_MODEL, input=WORDS, encoding_format="float")
    assert resp.object == "list"
    assert resp.model == EMBED_MODEL
    assert [d.index for d in resp.data] == [0, 1, 2]
    assert resp.usage.prompt_tokens > 0
    assert resp.usage.total_tokens > 0
    return [d.embedding for d in resp.data]


def test_embeddings_float(float_vectors: list[list[float]]) -> None:
    assert all(len(v) == EMBED_DIMS for v in float_vectors)
    assert all(isinstance(x, float) for x in float_vectors[0])
    kitten, cat, car = float_vectors
    assert _cos(kitten, cat) > _cos(kitten, car)


def test_embeddings_single_string(client: OpenAI) -> None:
    resp = client.embeddings.create(model=EMBED_MODEL, input="kitten", encoding_format="float")
    assert len(resp.data) == 1
    assert len(resp.data[0].embedding) == EMBED_DIMS


def test_embeddings_sdk_default_base64(client: OpenAI, float_vectors: list[list[float]]) -> None:
    # Without encoding_format the SDK asks for base64 and decodes it itself.
    resp = client.embeddings.create(model=EMBED_MODEL, input=WORDS)
    got = [d.embedding for d in resp.data]
    assert all(len(v) == EMBED_DIMS for v in got)
    for g, f in zip(got, float_vectors):
        assert max(abs(x - y) for x, y in zip(g, f)) < 1e-5


def test_embeddings_explicit_base64(client: OpenAI, float_vectors: list[list[float]]) -> None:
    # With an explicit encoding_format the SDK returns the string as sent:
    # little-endian float32, base64-encoded.
    resp = client.embeddings.create(model=EMBED_MODEL, input=WORDS, encoding_format="base64")
    for d, f in zip(resp.data, float_vectors):
        assert isinstance(d.embedding, str)
        vec = array.array("f", base64.b64decode(d.embedding))
        if sys.byteorder == "big":
            vec.byteswap()
        assert len(vec) == EMBED_DIMS
        assert max(abs(x - y) for x, y in zip(vec, f)) < 1e-5


def test_embeddings_dimensions(client: OpenAI) -> None:
    resp = client.embeddings.create(model=EMBED_MODEL, input=WORDS, dimensions=128, encoding_format="float")
    for d in resp.data:
        assert len(d.embedding) == 128
        assert abs(_norm(d.embedding) - 1.0) < 1e-3


# ---------------------------------------------------------------- models


def test_models_list(client: OpenAI) -> None:
    models = list(client.models.list())
    ids = {m.id for m in models}
    assert {CHAT_MODEL, EMBED_MODEL} <= ids
    for m in models:
        assert m.object == "model"
        assert isinstance(m.created, int)
        assert m.owned_by


def test_models_retrieve(client: OpenAI) -> None:
    m = client.models.retrieve(CHAT_MODEL)
    assert m.id == CHAT_MODEL
    assert m.object == "model"
    assert isinstance(m.created, int)
    assert m.owned_by


def test_models_retrieve_catalog_fields(client: OpenAI) -> None:
    # Sovereign's catalog fields ride along as extra fields of the SDK's Model.
    _ask(client, "Say hi.", max_tokens=4)
    m = client.models.retrieve(CHAT_MODEL).to_dict()
    assert m["backend"] == "local"
    assert "chat" in m["capabilities"]
    assert m["context_length"] > 0 and m["quantization"]
    assert m["status"] in ("available", "loading", "ready")
    assert m["stats"]["window"] == "1h"
    assert m["stats"]["requests"] >= 1
    assert m["stats"]["latency_p50_ms"] > 0


def test_compare_through_the_sdk_client(client: OpenAI) -> None:
    # Not an OpenAI endpoint: reached with the SDK's generic post.
    out = client.post(
        "/models/compare",
        body={
            "models": [CHAT_MODEL, "no-such-model"],
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 16,
            "temperature": 0,
        },
        cast_to=object,
    )
    assert out["object"] == "model.comparison"
    ok, bad = out["results"]
    assert ok["model"] == CHAT_MODEL and ok["status"] == "succeeded"
    assert "Paris" in ok["output"]["content"]
    assert ok["usage"]["completion_tokens"] > 0
    assert 0 < ok["ttft_ms"] <= ok["latency_ms"]
    assert bad["status"] == "failed" and bad["error"]["error"]["code"] == "model_not_found"


def test_models_retrieve_unknown(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as exc:
        client.models.retrieve("no-such-model")
    assert exc.value.status_code == 404


# ---------------------------------------------------------------- errors


def test_bad_key_is_authentication_error(base_url: str) -> None:
    bad = OpenAI(base_url=base_url, api_key=WRONG_KEY, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as exc:
        bad.models.list()
    assert exc.value.status_code == 401
    assert exc.value.code == "invalid_api_key"
    assert exc.value.type == "authentication_error"


def test_bad_key_on_chat_is_authentication_error(base_url: str) -> None:
    bad = OpenAI(base_url=base_url, api_key=WRONG_KEY, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=1,
        )


def test_unknown_model_is_not_found(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as exc:
        client.chat.completions.create(
            model="no-such-model",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=1,
        )
    assert exc.value.status_code == 404
    assert exc.value.code == "model_not_found"


def test_unknown_model_embeddings_is_not_found(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="no-such-model", input="hi")


def test_bad_request(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        _ask(client, "hi", temperature=5, max_tokens=1)
    assert exc.value.status_code == 400
    assert exc.value.type == "invalid_request_error"
    assert exc.value.param == "temperature"


def test_error_on_stream_request_raises_before_iterating(client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="no-such-model",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=1,
            stream=True,
        )


# ---------------------------------------------------------------- environment


def test_key_and_base_url_from_environment(
    monkeypatch: pytest.MonkeyPatch, base_url: str, api_key: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    c = OpenAI(max_retries=0)
    assert c.api_key == api_key
    ids = {m.id for m in c.models.list()}
    assert CHAT_MODEL in ids


def test_wrong_key_from_environment_is_rejected(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", WRONG_KEY)
    c = OpenAI(base_url=base_url, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        c.models.list()


# ---------------------------------------------------------------- tools
# The default model has no chat template, so its tool calls take the generic
# JSON envelope; "required" and a named function make the grammar force a call.

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
            "required": ["zone"],
            "additionalProperties": False,
        },
    },
}


def _check_call(call, name: str | None = None) -> dict:
    import json

    assert call.type == "function"
    assert call.id.startswith("call_")
    if name is not None:
        assert call.function.name == name
    args = json.loads(call.function.arguments)
    if call.function.name == "get_weather":
        assert args["city"] in ("Paris", "Rome", "Oslo")
    else:
        assert call.function.name == "get_time" and args["zone"] in ("UTC", "CET")
    return args


def test_tool_call_required(client: OpenAI) -> None:
    r = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER_TOOL, TIME_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0,
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert len(choice.message.tool_calls) == 1
    _check_call(choice.message.tool_calls[0])


def test_tool_call_named(client: OpenAI) -> None:
    r = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What time is it in Berlin?"}],
        tools=[WEATHER_TOOL, TIME_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0,
    )
    assert r.choices[0].finish_reason == "tool_calls"
    for call in r.choices[0].message.tool_calls:
        _check_call(call, "get_time")


def test_tool_call_none_and_auto_answer(client: OpenAI) -> None:
    for choice in ("none", "auto"):
        r = client.chat.completions.create(
            model=CHAT_MODEL,
            messages=[{"role": "user", "content": "Say hello."}],
            tools=[WEATHER_TOOL],
            tool_choice=choice,
            max_tokens=16,
            temperature=0,
        )
        msg = r.choices[0].message
        if choice == "none" or not msg.tool_calls:
            assert msg.content and not msg.tool_calls
            assert r.choices[0].finish_reason in ("stop", "length")
        else:
            _check_call(msg.tool_calls[0], "get_weather")


def test_tool_call_streamed(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
        tools=[WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0,
        stream=True,
    )
    calls: dict[int, dict] = {}
    finish = None
    for chunk in stream:
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        for d in c.delta.tool_calls or []:
            if d.index not in calls:
                assert d.id and d.type == "function" and d.function.name, "a call's first delta names it"
                calls[d.index] = {"id": d.id, "name": d.function.name, "arguments": ""}
            calls[d.index]["arguments"] += d.function.arguments or ""
        finish = c.finish_reason or finish
    assert finish == "tool_calls"
    assert list(calls) == [0]
    assert json.loads(calls[0]["arguments"])["city"] in ("Paris", "Rome", "Oslo")


def test_tool_round_trip(client: OpenAI) -> None:
    first = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Rome?"}],
        tools=[WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0,
    )
    call = first.choices[0].message.tool_calls[0]
    second = client.chat.completions.create(
        model=CHAT_MODEL,
        messages=[
            {"role": "user", "content": "What is the weather in Rome?"},
            first.choices[0].message,
            {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21, "sky": "clear"}'},
        ],
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_tokens=24,
        temperature=0,
    )
    assert second.choices[0].message.content
    assert not second.choices[0].message.tool_calls


def _squeeze(s: str) -> str:
    return "".join(s.split())


def test_tool_call_cut_short_by_max_tokens(client: OpenAI) -> None:
    # A forced call that max_tokens cuts short comes back as the call with
    # the arguments written so far (not whole JSON) and finish_reason
    # "length", as OpenAI answers; never the server's call format as content.
    params = dict(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Rome?"}],
        tools=[WEATHER_TOOL, TIME_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        temperature=0,
    )
    whole = client.chat.completions.create(max_tokens=64, **params).choices[0].message.tool_calls[0]
    cut = client.chat.completions.create(max_tokens=18, **params)
    c = cut.choices[0]
    assert c.finish_reason == "length", cut.model_dump_json()
    assert c.message.content is None
    assert len(c.message.tool_calls) == 1
    call = c.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_") and call.function.name == "get_weather"
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.function.arguments)
    assert _squeeze(whole.function.arguments).startswith(_squeeze(call.function.arguments))

    calls: dict[int, dict] = {}
    finish = None
    content = ""
    for chunk in client.chat.completions.create(max_tokens=18, stream=True, **params):
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        content += ch.delta.content or ""
        for d in ch.delta.tool_calls or []:
            if d.index not in calls:
                calls[d.index] = {"name": d.function.name, "arguments": ""}
            calls[d.index]["arguments"] += d.function.arguments or ""
        finish = ch.finish_reason or finish
    assert finish == "length" and content == ""
    assert calls == {0: {"name": "get_weather", "arguments": call.function.arguments}}


def test_legacy_functions(client: OpenAI) -> None:
    # The legacy functions/function_call: served as tools, answered in the
    # legacy shape.
    params = dict(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "What is the weather in Rome?"}],
        functions=[WEATHER_TOOL["function"]],
        function_call={"name": "get_weather"},
        temperature=0,
    )
    r = client.chat.completions.create(max_tokens=64, **params)
    m = r.choices[0]
    assert m.finish_reason == "function_call" and m.message.content is None and not m.message.tool_calls
    assert m.message.function_call.name == "get_weather"
    assert json.loads(m.message.function_call.arguments)["city"] in ("Paris", "Rome", "Oslo")
    cut = client.chat.completions.create(max_tokens=18, **params).choices[0]
    assert cut.finish_reason == "length" and cut.message.function_call.name == "get_weather"


def test_logprobs_one_entry_per_completion_token(client: OpenAI) -> None:
    for extra in ({}, {"stop": [" of"]}, {"tools": [WEATHER_TOOL], "tool_choice": "required"}):
        r = _ask(client, "What is the capital of France?", logprobs=True, top_logprobs=1, **extra)
        assert len(r.choices[0].logprobs.content) == r.usage.completion_tokens, extra
        entries, usage = 0, None
        for chunk in _ask(client, "What is the capital of France?", logprobs=True, stream=True,
                          stream_options={"include_usage": True}, **extra):
            usage = chunk.usage or usage
            for ch in chunk.choices:
                entries += len(ch.logprobs.content or []) if ch.logprobs else 0
        assert entries == usage.completion_tokens, extra


def test_completions_echo_and_suffix(client: OpenAI) -> None:
    prompt = "The capital of France is"
    r = client.completions.create(model=CHAT_MODEL, prompt=prompt, echo=True, logprobs=1, max_tokens=0)
    c = r.choices[0]
    assert c.text == prompt and r.usage.completion_tokens == 0
    assert c.logprobs.token_logprobs[0] is None and all(x is not None for x in c.logprobs.token_logprobs[1:])
    assert "".join(c.logprobs.tokens) == prompt
    # The default chat model has no fill-in-the-middle tokens: a 400.
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=CHAT_MODEL, prompt="def f():\n    return ", suffix="\n", max_tokens=4)
    assert e.value.body["param"] == "suffix"


def test_tool_choice_without_tools_is_bad_request(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=CHAT_MODEL, messages=[{"role": "user", "content": "hi"}], tool_choice="required", max_tokens=4
        )
    assert e.value.body["param"] == "tool_choice"


def test_parse_with_pydantic(client: OpenAI) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    r = client.chat.completions.parse(
        model=CHAT_MODEL,
        messages=[{"role": "user", "content": "Give the capital of France as JSON."}],
        response_format=City,
        max_tokens=64,
        temperature=0,
    )
    assert r.choices[0].finish_reason == "stop"
    assert isinstance(r.choices[0].message.parsed, City)


# ---------------------------------------------------------------- responses

_RESPONSE_BASE = {
    "model": CHAT_MODEL,
    "instructions": "Answer in one short sentence.",
    "max_output_tokens": 24,
    "temperature": 0,
}

_WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def test_responses_create(client: OpenAI) -> None:
    resp = client.responses.create(input="What is the capital of France?", **_RESPONSE_BASE)
    assert resp.id.startswith("resp_")
    assert "Paris" in resp.output_text
    assert resp.usage is not None and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0


def test_responses_stream_matches_plain(client: OpenAI) -> None:
    plain = client.responses.create(input="What is the capital of France?", store=False, **_RESPONSE_BASE)
    types: list[str] = []
    with client.responses.stream(input="What is the capital of France?", store=False, **_RESPONSE_BASE) as stream:
        for event in stream:
            types.append(event.type)
        final = stream.get_final_response()
    assert final.output_text == plain.output_text
    assert types[:2] == ["response.created", "response.in_progress"]
    assert "response.output_text.delta" in types
    assert types[-1] in ("response.completed", "response.incomplete")


def test_responses_function_call_round_trip(client: OpenAI) -> None:
    params = dict(_RESPONSE_BASE, max_output_tokens=64)
    called = client.responses.create(
        input="What is the weather in Rome?",
        tools=[_WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        **params,
    )
    calls = [o for o in called.output if o.type == "function_call"]
    assert len(calls) == 1, called.model_dump_json()
    call = calls[0]
    assert call.name == "get_weather" and call.call_id.startswith("call_")
    assert json.loads(call.arguments)["city"] in ("Paris", "Rome")

    answer = client.responses.create(
        previous_response_id=called.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 21, "sky": "sunny"}'}],
        **dict(_RESPONSE_BASE, max_output_tokens=32),
    )
    assert answer.output_text and answer.previous_response_id == called.id
    assert client.responses.retrieve(answer.id).output_text == answer.output_text
    client.responses.delete(answer.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(answer.id)


def test_responses_function_call_cut_short(client: OpenAI) -> None:
    params = dict(
        _RESPONSE_BASE,
        input="What is the weather in Rome?",
        tools=[_WEATHER_TOOL],
        tool_choice={"type": "function", "name": "get_weather"},
        store=False,
    )
    params["max_output_tokens"] = 18
    resp = client.responses.create(**params)
    assert resp.status == "incomplete" and resp.incomplete_details.reason == "max_output_tokens"
    assert [o.type for o in resp.output] == ["function_call"], resp.model_dump_json()
    call = resp.output[0]
    assert call.name == "get_weather" and call.status == "incomplete"
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.arguments)
    final = None
    with client.responses.stream(**params) as stream:
        for event in stream:
            if event.type == "response.incomplete":
                final = event.response
    assert final is not None and final.output[0].status == "incomplete" and final.output[0].arguments == call.arguments


def test_responses_parse_with_pydantic(client: OpenAI) -> None:
    from pydantic import BaseModel

    class Capital(BaseModel):
        country: str
        capital: str

    resp = client.responses.parse(
        input="France's capital, as JSON.",
        text_format=Capital,
        store=False,
        **dict(_RESPONSE_BASE, max_output_tokens=48),
    )
    assert resp.output_parsed is not None and resp.output_parsed.capital
