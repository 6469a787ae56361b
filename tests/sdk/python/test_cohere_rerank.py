"""Cohere's official Python SDK, unmodified, against a live Sovereign server.

Sovereign serves POST /v1/rerank in Cohere's shape, so `cohere.Client`
pointed at the server root (the base URL without /v1) reranks with a local
model. Run by scripts/sdk-test.sh, which sets:

    SOVEREIGN_BASE_URL  e.g. http://127.0.0.1:PORT/v1
    SOVEREIGN_API_KEY   a key with the inference scope
"""

from __future__ import annotations

import os

import cohere
import pytest

MODEL = "gemma3-270m"  # the default chat model, reranking by query likelihood


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set; run this suite through scripts/sdk-test.sh")
    return value


@pytest.fixture(scope="module")
def co() -> cohere.Client:
    root = _env("SOVEREIGN_BASE_URL").rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return cohere.Client(api_key=_env("SOVEREIGN_API_KEY"), base_url=root, timeout=300)


# Clear-cut: the answer scores at least 0.045 above the distractors, more
# than batching moves a score (docs/rerank.md).
DOCUMENTS = [
    "The stock market fell sharply on Monday.",
    "Paris is the capital and largest city of France.",
    "Cats sleep for most of the day.",
]


def test_rerank_top_n_sorted_relevant_first(co: cohere.Client) -> None:
    res = co.rerank(model=MODEL, query="What is the capital of France?", documents=DOCUMENTS, top_n=2)
    assert isinstance(res, cohere.RerankResponse)
    assert len(res.results) == 2
    scores = [r.relevance_score for r in res.results]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert all(0 <= r.index < len(DOCUMENTS) for r in res.results)
    assert len({r.index for r in res.results}) == 2
    assert res.results[0].index == 1, res.results
    assert res.results[0].document is not None
    assert res.results[0].document.text == DOCUMENTS[1]


def test_rerank_without_documents_in_the_answer(co: cohere.Client) -> None:
    res = co.rerank(model=MODEL, query="What is the capital of France?", documents=DOCUMENTS, return_documents=False)
    assert [r.index for r in res.results][0] == 1
    assert sorted(r.index for r in res.results) == [0, 1, 2]
    assert all(r.document is None for r in res.results)


def test_rerank_errors_are_cohere_errors(co: cohere.Client) -> None:
    # An embedding model cannot rerank: a 400, raised by the client as its
    # BadRequestError with Sovereign's error envelope as the body.
    with pytest.raises(cohere.BadRequestError) as exc:
        co.rerank(model="all-minilm-l6-v2", query="q", documents=["d"])
    assert exc.value.status_code == 400
    assert exc.value.body["error"]["param"] == "model"


@pytest.fixture(scope="module")
def co2() -> cohere.ClientV2:
    root = _env("SOVEREIGN_BASE_URL").rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return cohere.ClientV2(api_key=_env("SOVEREIGN_API_KEY"), base_url=root, timeout=300)


def test_rerank_v2_client(co2: cohere.ClientV2) -> None:
    # Cohere's current client calls POST /v2/rerank and reads its v2 shape.
    res = co2.rerank(model=MODEL, query="What is the capital of France?", documents=DOCUMENTS, top_n=2)
    assert res.id
    assert len(res.results) == 2
    assert res.results[0].index == 1, res.results
    scores = [r.relevance_score for r in res.results]
    assert scores == sorted(scores, reverse=True)
    assert res.meta is not None and res.meta.api_version is not None and res.meta.api_version.version == "2"
