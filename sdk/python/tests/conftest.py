"""Fixtures of the Sovereign Python SDK's tests.

The live tests talk to the server named by SOVEREIGN_BASE_URL with the admin key SOVEREIGN_API_KEY
(test.sh is given both; the server runs the default models in deterministic mode, with
SOVEREIGN_OUTBOUND_ALLOW_PRIVATE=true so that webhooks reach a loopback receiver).
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest

from sovereign import AsyncSovereign, Sovereign

CHAT_MODEL = "gemma3-270m"
EMBED_MODEL = "all-minilm-l6-v2"


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the suite through sdk/python/test.sh", pytrace=False)
    return value


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("SOVEREIGN_BASE_URL")


@pytest.fixture(scope="session")
def api_key() -> str:
    return _env("SOVEREIGN_API_KEY")


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing from OpenAI's environment may reach the client (test_config sets them on purpose).
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_ADMIN_KEY",
        "OPENAI_WEBHOOK_SECRET",
        "OPENAI_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def client(base_url: str, api_key: str) -> Iterator[Sovereign]:
    # No retries: a failure shows the server's first answer (the retry tests set their own).
    c = Sovereign(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    yield c
    c.close()


@pytest.fixture()
def aclient(base_url: str, api_key: str) -> AsyncSovereign:
    return AsyncSovereign(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)


@pytest.fixture()
def unique() -> str:
    return uuid.uuid4().hex[:10]
