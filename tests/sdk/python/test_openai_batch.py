"""OpenAI's Batch API through the official `openai` Python package, unmodified.

A batch of chat completions (greedy, the default chat model) and one of
embeddings (the default embedding model) run end to end — files.create,
batches.create, batches.retrieve until completed, files.content — and their
answers equal the same requests made one by one. The server runs in
deterministic mode (scripts/sdk-test.sh), so a request's output does not
depend on what runs beside it: batch lines run several at a time.

Environment as test_openai_sdk.py: SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY.
"""

from __future__ import annotations

import json
import os
import struct
import time

import openai
import pytest
from openai import OpenAI

CHAT_MODEL = "gemma3-270m"
EMBED_MODEL = "all-minilm-l6-v2"

QUESTIONS = [
    "What is the capital of France?",
    "Say hello in French.",
    "Name three primary colours.",
    "What is 2 + 2?",
    "Write one word that rhymes with cat.",
    "Which planet is closest to the sun?",
]
TEXTS = ["The food was delicious.", "A kitten sleeps on the sofa.", "Quarterly revenue grew by four percent."]


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the suite through scripts/sdk-test.sh", pytrace=False)
    return value


@pytest.fixture(scope="module")
def client() -> OpenAI:
    return OpenAI(base_url=_env("SOVEREIGN_BASE_URL"), api_key=_env("SOVEREIGN_API_KEY"), max_retries=0, timeout=300)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


def _jsonl(lines: list[dict]) -> bytes:
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def _run(client: OpenAI, lines: list[dict], endpoint: str, timeout: float = 600):
    """Uploads lines, runs them as a batch, waits, returns (batch, {custom_id: output line})."""
    data = _jsonl(lines)
    f = client.files.create(file=("requests.jsonl", data, "application/jsonl"), purpose="batch")
    assert f.object == "file" and f.purpose == "batch" and f.bytes == len(data) and f.id.startswith("file-")
    assert client.files.retrieve(f.id).id == f.id
    assert client.files.content(f.id).read() == data

    batch = client.batches.create(
        input_file_id=f.id, endpoint=endpoint, completion_window="24h", metadata={"suite": "sdk"}
    )
    assert batch.object == "batch" and batch.status in ("validating", "in_progress")
    assert batch.metadata == {"suite": "sdk"}
    deadline = time.monotonic() + timeout
    while batch.status not in ("completed", "failed", "expired", "cancelled"):
        assert time.monotonic() < deadline, f"batch still {batch.status}: {batch}"
        time.sleep(0.5)
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "completed", batch
    assert batch.request_counts.total == len(lines)
    assert batch.request_counts.completed == len(lines) and batch.request_counts.failed == 0
    assert batch.completed_at and batch.in_progress_at and batch.output_file_id and batch.error_file_id is None
    assert any(b.id == batch.id for b in client.batches.list(limit=100).data)

    content = client.files.content(batch.output_file_id).text
    out = [json.loads(line) for line in content.splitlines()]
    assert [o["custom_id"] for o in out] == [line["custom_id"] for line in lines], "output in input order"
    for o in out:
        assert o["error"] is None and o["id"].startswith("batch_req_")
        assert o["response"]["status_code"] == 200 and o["response"]["request_id"]
    client.files.delete(f.id)
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(f.id)
    return batch, {o["custom_id"]: o for o in out}


def test_chat_batch_equals_one_by_one(client: OpenAI) -> None:
    bodies = {
        f"chat-{i}": {
            "model": CHAT_MODEL,
            "messages": [{"role": "user", "content": q}],
            "max_tokens": 24,
            "temperature": 0,
        }
        for i, q in enumerate(QUESTIONS)
    }
    alone = {cid: client.chat.completions.create(**body).choices[0].message.content for cid, body in bodies.items()}
    lines = [{"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body} for cid, body in bodies.items()]
    batch, out = _run(client, lines, "/v1/chat/completions")
    for cid, text in alone.items():
        body = out[cid]["response"]["body"]
        assert body["object"] == "chat.completion" and body["model"] == CHAT_MODEL
        assert body["choices"][0]["message"]["content"] == text, cid
    assert batch.usage.output_tokens == sum(o["response"]["body"]["usage"]["completion_tokens"] for o in out.values())


def test_embeddings_batch_equals_one_by_one(client: OpenAI) -> None:
    alone = {f"emb-{i}": client.embeddings.create(model=EMBED_MODEL, input=t).data[0].embedding for i, t in enumerate(TEXTS)}
    lines = [
        {"custom_id": f"emb-{i}", "method": "POST", "url": "/v1/embeddings", "body": {"model": EMBED_MODEL, "input": t}}
        for i, t in enumerate(TEXTS)
    ]
    _, out = _run(client, lines, "/v1/embeddings")
    for cid, vec in alone.items():
        got = out[cid]["response"]["body"]["data"][0]["embedding"]
        # The SDK asks for base64 and widens the float32 values it decodes;
        # the batch line has them as JSON numbers: compare as float32.
        assert _f32(got) == _f32(vec), cid


def _f32(v: list[float]) -> bytes:
    return struct.pack(f"{len(v)}f", *v)


def test_batch_refusals(client: OpenAI) -> None:
    dup = _jsonl(
        [
            {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": EMBED_MODEL, "input": "x"}},
            {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": EMBED_MODEL, "input": "y"}},
        ]
    )
    with pytest.raises(openai.BadRequestError) as e:
        client.files.create(file=("dup.jsonl", dup), purpose="batch")
    assert e.value.body["param"] == "file" and e.value.body["message"].startswith("line 2: ")
    # A line for another endpoint fails the batch at validation, naming it.
    mixed = _jsonl(
        [
            {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": EMBED_MODEL, "input": "x"}},
            {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": {"model": CHAT_MODEL, "messages": []}},
        ]
    )
    f = client.files.create(file=("mixed.jsonl", mixed), purpose="batch")
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/embeddings", completion_window="24h")
    deadline = time.monotonic() + 60
    while batch.status not in ("failed", "completed"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "failed" and batch.errors.data[0].line == 2 and batch.errors.data[0].param == "url"
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_000000000000000000000000")
