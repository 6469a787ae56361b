"""Standard Webhooks (https://www.standardwebhooks.com) signatures, as Sovereign signs deliveries.

``webhook-signature`` is ``v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">``
keyed with the secret's decoded bytes (``whsec_<base64>``); during a secret rotation the header
carries several space-separated signatures and any one of them may match.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Optional, Union

from ._errors import WebhookVerificationError
from .types import Event

__all__ = ["verify_webhook", "unwrap_webhook", "sign_webhook", "DEFAULT_TOLERANCE"]

DEFAULT_TOLERANCE = 300
"""Seconds a ``webhook-timestamp`` may be off, either way (Standard Webhooks' default)."""

_PREFIX = "whsec_"


def _secret_bytes(secret: Union[str, bytes]) -> bytes:
    if isinstance(secret, bytes):
        return secret
    if secret.startswith(_PREFIX):
        secret = secret[len(_PREFIX) :]
    try:
        return base64.b64decode(secret, validate=True)
    except (ValueError, TypeError) as err:
        raise WebhookVerificationError("the webhook secret is not whsec_<base64>") from err


def _header(headers: Any, name: str) -> Optional[str]:
    getter = getattr(headers, "get", None)
    if getter is not None:
        value = getter(name)
        if value is None:
            value = getter(name.title())
        if value is not None:
            return str(value)
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        if str(key).lower() == name:
            return str(value)
    return None


def sign_webhook(
    payload: Union[str, bytes], *, msg_id: str, timestamp: Union[int, float], secret: Union[str, bytes]
) -> str:
    """The ``webhook-signature`` value (one ``v1,…`` signature) for a payload."""
    body = payload.decode("utf-8") if isinstance(payload, bytes) else payload
    to_sign = f"{msg_id}.{int(timestamp)}.{body}".encode("utf-8")
    mac = hmac.new(_secret_bytes(secret), to_sign, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def verify_webhook(
    payload: Union[str, bytes],
    headers: Union[Mapping[str, str], Any],
    secret: Union[str, bytes],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> None:
    """Checks a delivery's signature and timestamp; raises ``WebhookVerificationError`` if either fails.

    ``payload`` is the raw request body (not re-serialized JSON), ``headers`` any mapping of the
    request's headers (names in any case).
    """
    msg_id = _header(headers, "webhook-id")
    msg_ts = _header(headers, "webhook-timestamp")
    msg_sig = _header(headers, "webhook-signature")
    if not msg_id or not msg_ts or not msg_sig:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        ts = int(msg_ts)
    except ValueError as err:
        raise WebhookVerificationError("invalid webhook-timestamp") from err
    current = time.time() if now is None else now
    if ts < current - tolerance:
        raise WebhookVerificationError("message timestamp too old")
    if ts > current + tolerance:
        raise WebhookVerificationError("message timestamp too new")
    expected = sign_webhook(payload, msg_id=msg_id, timestamp=ts, secret=secret).split(",", 1)[1]
    for candidate in msg_sig.split(" "):
        version, _, signature = candidate.partition(",")
        if version != "v1":
            continue
        if hmac.compare_digest(signature.encode("ascii", "replace"), expected.encode("ascii")):
            return
    raise WebhookVerificationError("no matching signature found")


def unwrap_webhook(
    payload: Union[str, bytes],
    headers: Union[Mapping[str, str], Any],
    secret: Union[str, bytes],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
) -> Event:
    """Verifies a delivery (``verify_webhook``) and returns its event."""
    verify_webhook(payload, headers, secret, tolerance=tolerance)
    try:
        data = json.loads(payload)
    except ValueError as err:
        raise WebhookVerificationError("the payload is not JSON") from err
    return Event.construct(**data) if isinstance(data, dict) else Event.construct(data=data)
