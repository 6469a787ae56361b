"""Server-Sent Event streams of Sovereign's event log, resumable with ``Last-Event-ID``."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Dict, Generator, Iterator, Optional

import anyio
import httpx2
import openai
from openai._models import FinalRequestOptions
from openai._streaming import SSEDecoder

from .types import Event

if TYPE_CHECKING:
    from ._client import AsyncSovereign, Sovereign

__all__ = ["EventStream", "AsyncEventStream", "TERMINAL_RUN_EVENTS"]

TERMINAL_RUN_EVENTS = frozenset({"workflow.run.succeeded", "workflow.run.failed", "workflow.run.cancelled"})

_RECONNECT_ERRORS = (httpx2.TransportError, openai.APIConnectionError)


def _event(data: str, sse_id: Optional[str], sse_event: Optional[str]) -> Event:
    obj: Any = json.loads(data)
    if not isinstance(obj, dict):
        obj = {"data": obj}
    if sse_id and "id" not in obj:
        obj["id"] = sse_id
    if sse_event and "type" not in obj:
        obj["type"] = sse_event
    return Event.construct(**obj)


class _Base:
    def __init__(
        self,
        path: str,
        *,
        query: Optional[Dict[str, object]],
        last_event_id: Optional[str],
        timeout: Optional[float],
        headers: Optional[Dict[str, str]],
        ends_with_run: bool,
        reconnect: bool,
        max_reconnects: int,
        reconnect_delay: float,
    ) -> None:
        self._path = path
        self._query = {k: v for k, v in (query or {}).items() if v is not None}
        self.last_event_id: Optional[str] = last_event_id
        """The id of the last event received: resume from it with ``last_event_id=`` (done by itself
        when the connection drops)."""
        self._timeout = timeout
        self._headers = dict(headers or {})
        self._ends_with_run = ends_with_run
        self._reconnect = reconnect
        self._max_reconnects = max_reconnects
        self._reconnect_delay = reconnect_delay
        self._closed = False
        self.reconnects = 0
        """How many times the stream reconnected (with ``Last-Event-ID``) after a dropped connection."""

    def _options(self) -> FinalRequestOptions:
        headers: Dict[str, str] = {"Accept": "text/event-stream", **self._headers}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        opts: Dict[str, Any] = {"method": "get", "url": self._path, "params": dict(self._query), "headers": headers}
        if self._timeout is not None:
            opts["timeout"] = httpx2.Timeout(self._timeout, connect=min(self._timeout, 10.0))
        return FinalRequestOptions.construct(**opts)


class EventStream(_Base, Iterator[Event]):
    """An iterator of ``Event`` objects from an SSE endpoint.

    Reconnects with ``Last-Event-ID`` when the connection drops (and, for ``GET /v1/events``, when
    the server ends the stream), so no event is missed or repeated.  A run's stream ends after the
    run's last event.  Use as a context manager, or call ``close()``, to stop early.
    """

    def __init__(self, client: "Sovereign", path: str, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self._client = client
        self._response: Optional[httpx2.Response] = None
        self._iter = self._stream()

    def __next__(self) -> Event:
        return next(self._iter)

    def __iter__(self) -> Iterator[Event]:
        return self

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        if self._response is not None:
            self._response.close()
        self._iter.close()

    def _open(self) -> httpx2.Response:
        return self._client.request(httpx2.Response, self._options(), stream=True)

    def _stream(self) -> Generator[Event, None, None]:
        failures = 0
        while not self._closed:
            self._response = self._open()
            try:
                for sse in SSEDecoder().iter_bytes(self._response.iter_bytes()):
                    if not sse.data:
                        continue
                    event = _event(sse.data, sse.id, sse.event)
                    self.last_event_id = sse.id or event.id
                    failures = 0
                    yield event
                    if self._ends_with_run and event.type in TERMINAL_RUN_EVENTS:
                        return
            except _RECONNECT_ERRORS:
                if self._closed or not self._reconnect or failures >= self._max_reconnects:
                    raise
            finally:
                self._response.close()
            if self._closed:
                return
            if not self._reconnect:
                return
            failures += 1
            if failures > self._max_reconnects:
                raise openai.APIConnectionError(
                    message=f"event stream ended {failures} times without progress", request=self._response.request
                )
            self.reconnects += 1
            time.sleep(self._reconnect_delay * failures)


class AsyncEventStream(_Base, AsyncIterator[Event]):
    """The async twin of ``EventStream``: ``async for event in stream``."""

    def __init__(self, client: "AsyncSovereign", path: str, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self._client = client
        self._response: Optional[httpx2.Response] = None
        self._iter = self._stream()

    async def __anext__(self) -> Event:
        return await self._iter.__anext__()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        if self._response is not None:
            await self._response.aclose()
        await self._iter.aclose()

    async def _open(self) -> httpx2.Response:
        return await self._client.request(httpx2.Response, self._options(), stream=True)

    async def _stream(self) -> AsyncGenerator[Event, None]:
        failures = 0
        while not self._closed:
            self._response = await self._open()
            try:
                async for sse in SSEDecoder().aiter_bytes(self._response.aiter_bytes()):
                    if not sse.data:
                        continue
                    event = _event(sse.data, sse.id, sse.event)
                    self.last_event_id = sse.id or event.id
                    failures = 0
                    yield event
                    if self._ends_with_run and event.type in TERMINAL_RUN_EVENTS:
                        return
            except _RECONNECT_ERRORS:
                if self._closed or not self._reconnect or failures >= self._max_reconnects:
                    raise
            finally:
                await self._response.aclose()
            if self._closed or not self._reconnect:
                return
            failures += 1
            if failures > self._max_reconnects:
                raise openai.APIConnectionError(
                    message=f"event stream ended {failures} times without progress", request=self._response.request
                )
            self.reconnects += 1
            await anyio.sleep(self._reconnect_delay * failures)
