"""Base classes of Sovereign's resources and the per-call request options they take."""

from __future__ import annotations

import io
import os
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Tuple, Union

import httpx2
from openai._base_client import make_request_options
from openai._resource import AsyncAPIResource, SyncAPIResource
from openai._types import RequestOptions
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from ._client import AsyncSovereign, Sovereign

__all__ = ["RequestOpts", "SyncResource", "AsyncResource", "ProgressCallback", "FileInput"]

ProgressCallback = Callable[[int, int], None]
"""Called as ``callback(bytes_sent, total_bytes)`` while an upload's body is sent."""

FileInput = Union[str, "os.PathLike[str]", bytes, IO[bytes]]
"""A path, the file's bytes, or a binary file object."""


class RequestOpts(TypedDict, total=False):
    """Per-call options every Sovereign method takes, as OpenAI's methods do."""

    extra_headers: Mapping[str, str]
    extra_query: Mapping[str, object]
    extra_body: Mapping[str, object]
    timeout: Union[float, httpx2.Timeout, None]
    max_retries: int
    idempotency_key: str
    """Sent as ``Idempotency-Key``; by default every non-GET request gets a fresh key, reused by
    its retries."""


def _clean(d: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    return {k: v for k, v in (d or {}).items() if v is not None}


def _opts(opts: RequestOpts, query: Optional[Mapping[str, Any]] = None) -> RequestOptions:
    ro = make_request_options(
        query=_clean(query) or None,
        extra_headers=dict(opts["extra_headers"]) if "extra_headers" in opts else None,
        extra_query=dict(opts["extra_query"]) if "extra_query" in opts else None,
        extra_body=dict(opts["extra_body"]) if "extra_body" in opts else None,
        idempotency_key=opts.get("idempotency_key"),
        security={"bearer_auth": True},
    )
    if "timeout" in opts:
        ro["timeout"] = opts["timeout"]
    if "max_retries" in opts:
        ro["max_retries"] = opts["max_retries"]
    return ro


def _body(**fields: Any) -> Dict[str, Any]:
    return _clean(fields)


def _path(template: str, *ids: str) -> str:
    from urllib.parse import quote

    for i in ids:
        if not i:
            raise ValueError(f"an empty id was given for {template!r}")
    return template.format(*(quote(str(i), safe="") for i in ids))


class SyncResource(SyncAPIResource):
    _client: "Sovereign"

    def __init__(self, client: "Sovereign") -> None:
        super().__init__(client)


class AsyncResource(AsyncAPIResource):
    _client: "AsyncSovereign"

    def __init__(self, client: "AsyncSovereign") -> None:
        super().__init__(client)


class ProgressFile(io.RawIOBase):
    """A seekable binary reader that reports how much of it has been read (i.e. sent)."""

    def __init__(self, raw: IO[bytes], total: int, callback: Optional[ProgressCallback], *, owned: bool) -> None:
        super().__init__()
        self._raw = raw
        self._start = raw.tell() if raw.seekable() else 0
        self._total = total
        self._callback = callback
        self._owned = owned
        self.name = getattr(raw, "name", "upload")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def read(self, size: Optional[int] = -1) -> bytes:
        data = self._raw.read(-1 if size is None else size)
        if self._callback is not None and (data or size == 0 or self._total == 0):
            sent = self._raw.tell() - self._start if self._raw.seekable() else len(data)
            self._callback(min(max(sent, 0), self._total), self._total)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        if self._owned:
            self._raw.close()
        super().close()


def open_upload(
    file: FileInput, filename: Optional[str], callback: Optional[ProgressCallback]
) -> Tuple[str, ProgressFile]:
    """(file name, reader) for a path, bytes or a binary file object."""
    owned = False
    if isinstance(file, (bytes, bytearray)):
        raw: IO[bytes] = io.BytesIO(bytes(file))
        owned = True
        name = filename or "upload.txt"
    elif isinstance(file, (str, os.PathLike)):
        raw = open(os.fspath(file), "rb")  # noqa: SIM115 - closed with the ProgressFile
        owned = True
        name = filename or os.path.basename(os.fspath(file))
    else:
        raw = file
        name = filename or os.path.basename(str(getattr(file, "name", "") or "upload"))
    if raw.seekable():
        pos = raw.tell()
        total = raw.seek(0, io.SEEK_END) - pos
        raw.seek(pos)
    else:
        data = raw.read()
        raw, owned, total = io.BytesIO(data), True, len(data)
    return name, ProgressFile(raw, total, callback, owned=owned)
