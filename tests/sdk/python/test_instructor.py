"""instructor (structured output through tool calls), unmodified, against a live Sovereign server.

Run by scripts/sdk-test.sh in a virtual environment of its own
(requirements-instructor.txt: instructor 1.17 holds openai below the version
test_openai_sdk.py runs), with SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY.
instructor forces a call of a function named after the model class; a call
that max_tokens cuts short must make it raise IncompleteOutputException over
a completion that carries the call (finish_reason "length", no content), not
fail on the server's call format given as text.
"""

from __future__ import annotations

import os
from typing import Literal

import instructor
import pytest
from instructor.core import IncompleteOutputException
from openai import OpenAI
from pydantic import BaseModel

CHAT_MODEL = "gemma3-270m"


class Weather(BaseModel):
    city: Literal["Paris", "Rome", "Oslo"]


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the suite through scripts/sdk-test.sh", pytrace=False)
    return value


@pytest.fixture(scope="module")
def client():
    return instructor.from_openai(OpenAI(base_url=_env("SOVEREIGN_BASE_URL"), api_key=_env("SOVEREIGN_API_KEY"), max_retries=0, timeout=300))


def _create(client, max_tokens: int) -> Weather:
    return client.chat.completions.create(
        model=CHAT_MODEL,
        response_model=Weather,
        messages=[{"role": "user", "content": "What is the weather in Rome?"}],
        max_tokens=max_tokens,
        temperature=0,
        max_retries=0,
    )


def test_structured_output_through_a_forced_call(client) -> None:
    assert _create(client, 64).city in ("Paris", "Rome", "Oslo")


def test_call_cut_short_is_incomplete_output(client) -> None:
    with pytest.raises(IncompleteOutputException) as e:
        _create(client, 12)
    c = e.value.last_completion.choices[0]
    assert c.finish_reason == "length" and c.message.content is None
    assert [t.function.name for t in c.message.tool_calls] == ["Weather"]
