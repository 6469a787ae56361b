"""Sovereign's resources, synchronous (``_sync``) and asynchronous (``_async``, generated)."""

from ._async import *  # noqa: F403
from ._async import __all__ as _async_all
from ._sync import *  # noqa: F403
from ._sync import __all__ as _sync_all

__all__ = [*_sync_all, *_async_all]
