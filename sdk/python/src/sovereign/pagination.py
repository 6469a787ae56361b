"""Cursor pages over Sovereign's lists, built on the official SDK's page classes.

Sovereign's paginated lists answer ``{"object": "list", "data": [...], "has_more", "first_id",
"last_id"}`` and take ``?limit=&after=<last_id>``.  These pages follow ``last_id`` (falling back on
the last item's ``id``, as OpenAI's ``SyncCursorPage`` does), so that lists whose items are keyed
otherwise page correctly.  Iterating a page walks every following page.
"""

from __future__ import annotations

from typing import Any, Generic, Optional, TypeVar, cast

from openai._base_client import PageInfo
from openai.pagination import AsyncCursorPage as _AsyncCursorPage
from openai.pagination import SyncCursorPage as _SyncCursorPage
from openai.pagination import AsyncPage, SyncPage
from typing_extensions import override

__all__ = ["SyncCursorPage", "AsyncCursorPage", "SyncPage", "AsyncPage"]

_T = TypeVar("_T")


def _next(page: Any) -> Optional[PageInfo]:
    if not page.data:
        return None
    last_id = getattr(page, "last_id", None) or (page.model_extra or {}).get("last_id")
    if not last_id:
        last_id = getattr(cast(Any, page.data[-1]), "id", None)
    if not last_id:
        return None
    return PageInfo(params={"after": last_id})


class SyncCursorPage(_SyncCursorPage[_T], Generic[_T]):
    first_id: Optional[str] = None
    last_id: Optional[str] = None

    @override
    def next_page_info(self) -> Optional[PageInfo]:
        return _next(self)


class AsyncCursorPage(_AsyncCursorPage[_T], Generic[_T]):
    first_id: Optional[str] = None
    last_id: Optional[str] = None

    @override
    def next_page_info(self) -> Optional[PageInfo]:
        return _next(self)
