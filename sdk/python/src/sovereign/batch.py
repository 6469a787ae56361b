"""Batch workloads: ``client.batch``.

* ``chat`` / ``embeddings`` / ``completions``: many requests at once with bounded concurrency,
  each retried by the client's retry policy, results in input order with per-item errors.
* ``run_batch_api``: the same list through the server's Batch API (upload a JSONL file, create
  the batch, poll it, download the output) for large jobs.
"""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type

from openai._models import construct_type
from openai.types import Completion, CreateEmbeddingResponse
from openai.types.batch import Batch
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from ._errors import SovereignError
from .types import BatchItemResult

if TYPE_CHECKING:
    from ._client import AsyncSovereign, Sovereign

__all__ = ["BatchResource", "AsyncBatchResource", "BatchProgress", "BatchAPIError"]

BatchProgress = Callable[[int, int], None]
"""Called as ``on_progress(done, total)`` each time an item finishes (success or error)."""

_TERMINAL = ("completed", "failed", "expired", "cancelled")
_RESPONSE_TYPES: Dict[str, Type[Any]] = {
    "/v1/chat/completions": ChatCompletion,
    "/v1/completions": Completion,
    "/v1/embeddings": CreateEmbeddingResponse,
    "/v1/responses": Response,
}


class BatchAPIError(SovereignError):
    """A Batch API job did not complete (``failed``, ``expired``, ``cancelled``, or timed out)."""

    def __init__(self, message: str, batch: Batch) -> None:
        super().__init__(message)
        self.batch = batch


def _split(requests: Sequence[Mapping[str, Any]]) -> List[Tuple[Optional[str], Dict[str, Any]]]:
    items = []
    for req in requests:
        body = dict(req)
        cid = body.pop("custom_id", None)
        if body.get("stream"):
            raise ValueError("batch requests cannot stream")
        items.append((str(cid) if cid is not None else None, body))
    return items


def _jsonl(items: List[Tuple[Optional[str], Dict[str, Any]]], endpoint: str) -> Tuple[bytes, List[str]]:
    ids = [cid if cid is not None else f"item-{i}" for i, (cid, _) in enumerate(items)]
    if len(set(ids)) != len(ids):
        raise ValueError("custom_id values must be unique")
    lines = [
        json.dumps({"custom_id": cid, "method": "POST", "url": endpoint, "body": body})
        for cid, (_, body) in zip(ids, items)
    ]
    return ("\n".join(lines) + "\n").encode("utf-8"), ids


def _collect(endpoint: str, ids: List[str], texts: Sequence[str]) -> List[BatchItemResult]:
    index = {cid: i for i, cid in enumerate(ids)}
    results: List[Optional[BatchItemResult]] = [None] * len(ids)
    cast_to = _RESPONSE_TYPES.get(endpoint)
    for text in texts:
        for line in text.splitlines():
            if not line.strip():
                continue
            out = json.loads(line)
            i = index.get(out.get("custom_id"))
            if i is None:
                continue
            resp = out.get("response") or {}
            body = resp.get("body")
            if out.get("error") is None and resp.get("status_code") == 200 and body is not None:
                parsed = construct_type(type_=cast_to, value=body) if cast_to is not None else body
                results[i] = BatchItemResult(index=i, custom_id=ids[i], response=parsed)
            else:
                err = out.get("error") or (body.get("error", body) if isinstance(body, dict) else body)
                results[i] = BatchItemResult(index=i, custom_id=ids[i], error=err)
    return [
        r if r is not None else BatchItemResult(index=i, custom_id=ids[i], error={"message": "no output for this item"})
        for i, r in enumerate(results)
    ]


class BatchResource:
    """``client.batch``: batch workloads on the synchronous client."""

    def __init__(self, client: "Sovereign") -> None:
        self._client = client

    def chat(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """Runs ``chat.completions.create(**request)`` for each request, ``concurrency`` at a time.

        Each request may carry a ``custom_id`` (kept in its result).  Each is retried as any call
        (``max_retries`` overrides the client's); an item that still fails has ``error`` set.
        """
        return self._run(requests, lambda c, body: c.chat.completions.create(**body), concurrency, on_progress, max_retries)

    def embeddings(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """``embeddings.create(**request)`` for each request; see ``chat``."""
        return self._run(requests, lambda c, body: c.embeddings.create(**body), concurrency, on_progress, max_retries)

    def completions(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """``completions.create(**request)`` for each request; see ``chat``."""
        return self._run(requests, lambda c, body: c.completions.create(**body), concurrency, on_progress, max_retries)

    def _run(
        self,
        requests: Sequence[Mapping[str, Any]],
        call: Callable[["Sovereign", Dict[str, Any]], Any],
        concurrency: int,
        on_progress: Optional[BatchProgress],
        max_retries: Optional[int],
    ) -> List[BatchItemResult]:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        items = _split(requests)
        client = self._client if max_retries is None else self._client.with_options(max_retries=max_retries)
        results: List[Optional[BatchItemResult]] = [None] * len(items)
        done = 0
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = {pool.submit(call, client, body): i for i, (_, body) in enumerate(items)}
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    results[i] = BatchItemResult(index=i, custom_id=items[i][0], response=fut.result())
                except Exception as err:  # noqa: BLE001 - the item's error is its result
                    results[i] = BatchItemResult(index=i, custom_id=items[i][0], error=err)
                done += 1
                if on_progress is not None:
                    on_progress(done, len(items))
        return [r for r in results if r is not None]

    def run_batch_api(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        endpoint: str = "/v1/chat/completions",
        poll_interval: float = 1.0,
        timeout: float = 24 * 3600.0,
        on_progress: Optional[BatchProgress] = None,
        metadata: Optional[Mapping[str, str]] = None,
        delete_files: bool = True,
    ) -> List[BatchItemResult]:
        """Runs the requests through the Batch API: uploads them as JSONL (``files.create``),
        ``batches.create``, polls ``batches.retrieve`` until the batch ends, downloads the output
        and error files, and returns the results in input order (``response`` parsed as the
        endpoint's OpenAI type, or ``error``).  Raises ``BatchAPIError`` if the batch fails."""
        items = _split(requests)
        data, ids = _jsonl(items, endpoint)
        f = self._client.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch")
        try:
            batch = self._client.batches.create(
                input_file_id=f.id,
                endpoint=endpoint,  # type: ignore[arg-type]
                completion_window="24h",
                metadata=dict(metadata) if metadata is not None else None,
            )
            deadline = time.monotonic() + timeout
            while batch.status not in _TERMINAL:
                if time.monotonic() >= deadline:
                    raise BatchAPIError(f"batch {batch.id} still {batch.status} after {timeout}s", batch)
                time.sleep(poll_interval)
                batch = self._client.batches.retrieve(batch.id)
                if on_progress is not None and batch.request_counts is not None:
                    on_progress(batch.request_counts.completed + batch.request_counts.failed, len(items))
            if batch.status != "completed":
                raise BatchAPIError(f"batch {batch.id} {batch.status}: {batch.errors}", batch)
            texts = [
                self._client.files.content(fid).text for fid in (batch.output_file_id, batch.error_file_id) if fid
            ]
            if delete_files:
                for fid in (batch.output_file_id, batch.error_file_id):
                    if fid:
                        self._client.files.delete(fid)
            return _collect(endpoint, ids, texts)
        finally:
            if delete_files:
                self._client.files.delete(f.id)


class AsyncBatchResource:
    """``client.batch`` on the async client: the same helpers, awaited."""

    def __init__(self, client: "AsyncSovereign") -> None:
        self._client = client

    async def chat(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """See ``BatchResource.chat``."""

        async def call(c: "AsyncSovereign", body: Dict[str, Any]) -> Any:
            return await c.chat.completions.create(**body)

        return await self._run(requests, call, concurrency, on_progress, max_retries)

    async def embeddings(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """See ``BatchResource.embeddings``."""

        async def call(c: "AsyncSovereign", body: Dict[str, Any]) -> Any:
            return await c.embeddings.create(**body)

        return await self._run(requests, call, concurrency, on_progress, max_retries)

    async def completions(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 4,
        on_progress: Optional[BatchProgress] = None,
        max_retries: Optional[int] = None,
    ) -> List[BatchItemResult]:
        """See ``BatchResource.completions``."""

        async def call(c: "AsyncSovereign", body: Dict[str, Any]) -> Any:
            return await c.completions.create(**body)

        return await self._run(requests, call, concurrency, on_progress, max_retries)

    async def _run(
        self,
        requests: Sequence[Mapping[str, Any]],
        call: Callable[["AsyncSovereign", Dict[str, Any]], Any],
        concurrency: int,
        on_progress: Optional[BatchProgress],
        max_retries: Optional[int],
    ) -> List[BatchItemResult]:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        items = _split(requests)
        client = self._client if max_retries is None else self._client.with_options(max_retries=max_retries)
        sem = asyncio.Semaphore(concurrency)
        done = 0

        async def one(i: int, cid: Optional[str], body: Dict[str, Any]) -> BatchItemResult:
            nonlocal done
            async with sem:
                try:
                    result = BatchItemResult(index=i, custom_id=cid, response=await call(client, body))
                except Exception as err:  # noqa: BLE001 - the item's error is its result
                    result = BatchItemResult(index=i, custom_id=cid, error=err)
            done += 1
            if on_progress is not None:
                on_progress(done, len(items))
            return result

        return list(await asyncio.gather(*(one(i, cid, body) for i, (cid, body) in enumerate(items))))

    async def run_batch_api(
        self,
        requests: Sequence[Mapping[str, Any]],
        *,
        endpoint: str = "/v1/chat/completions",
        poll_interval: float = 1.0,
        timeout: float = 24 * 3600.0,
        on_progress: Optional[BatchProgress] = None,
        metadata: Optional[Mapping[str, str]] = None,
        delete_files: bool = True,
    ) -> List[BatchItemResult]:
        """See ``BatchResource.run_batch_api``."""
        items = _split(requests)
        data, ids = _jsonl(items, endpoint)
        f = await self._client.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch")
        try:
            batch = await self._client.batches.create(
                input_file_id=f.id,
                endpoint=endpoint,  # type: ignore[arg-type]
                completion_window="24h",
                metadata=dict(metadata) if metadata is not None else None,
            )
            deadline = time.monotonic() + timeout
            while batch.status not in _TERMINAL:
                if time.monotonic() >= deadline:
                    raise BatchAPIError(f"batch {batch.id} still {batch.status} after {timeout}s", batch)
                await asyncio.sleep(poll_interval)
                batch = await self._client.batches.retrieve(batch.id)
                if on_progress is not None and batch.request_counts is not None:
                    on_progress(batch.request_counts.completed + batch.request_counts.failed, len(items))
            if batch.status != "completed":
                raise BatchAPIError(f"batch {batch.id} {batch.status}: {batch.errors}", batch)
            texts = []
            for fid in (batch.output_file_id, batch.error_file_id):
                if fid:
                    texts.append((await self._client.files.content(fid)).text)
            if delete_files:
                for fid in (batch.output_file_id, batch.error_file_id):
                    if fid:
                        await self._client.files.delete(fid)
            return _collect(endpoint, ids, texts)
        finally:
            if delete_files:
                await self._client.files.delete(f.id)
