"""LangChain's OpenAI chat model (langchain-openai), unmodified, against a live Sovereign server.

Run by scripts/sdk-test.sh with the same environment as test_openai_sdk.py
(SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY). Checks what LangChain makes of tool
calls: a forced call comes back in AIMessage.tool_calls, and one cut short by
max_tokens as an invalid tool call holding the arguments written so far, with
finish_reason "length" and no content, plain and streamed.
"""

from __future__ import annotations

import json
import os

import pytest
from langchain_openai import ChatOpenAI

CHAT_MODEL = "gemma3-270m"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the suite through scripts/sdk-test.sh", pytrace=False)
    return value


def _llm(max_tokens: int) -> ChatOpenAI:
    llm = ChatOpenAI(
        model=CHAT_MODEL,
        base_url=_env("SOVEREIGN_BASE_URL"),
        api_key=_env("SOVEREIGN_API_KEY"),
        max_tokens=max_tokens,
        temperature=0,
        max_retries=0,
        timeout=300,
    )
    return llm.bind_tools([WEATHER_TOOL], tool_choice="get_weather")


def test_forced_tool_call() -> None:
    msg = _llm(64).invoke("What is the weather in Rome?")
    assert msg.content == ""
    assert msg.response_metadata["finish_reason"] == "tool_calls"
    assert [c["name"] for c in msg.tool_calls] == ["get_weather"]
    assert msg.tool_calls[0]["args"]["city"] in ("Paris", "Rome", "Oslo")


def test_forced_tool_call_cut_short() -> None:
    whole = _llm(64).invoke("What is the weather in Rome?").tool_calls[0]["args"]
    msg = _llm(18).invoke("What is the weather in Rome?")
    assert msg.content == "", msg
    assert msg.response_metadata["finish_reason"] == "length"
    # Not whole JSON: LangChain keeps the call, with its text, as invalid.
    assert msg.tool_calls == []
    assert [c["name"] for c in msg.invalid_tool_calls] == ["get_weather"]
    args = msg.invalid_tool_calls[0]["args"]
    assert args and "".join(json.dumps(whole).split()).startswith("".join(args.split()))

    agg = None
    for chunk in _llm(18).stream("What is the weather in Rome?"):
        agg = chunk if agg is None else agg + chunk
    assert agg.content == ""
    assert agg.response_metadata["finish_reason"] == "length"
    assert [(c["name"], c["args"]) for c in agg.tool_call_chunks] == [("get_weather", args)]
