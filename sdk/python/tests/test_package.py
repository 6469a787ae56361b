"""The package as installed: typed (py.typed), its generated async resources up to date, its API surface."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import openai

import sovereign
from sovereign import AsyncSovereign, Sovereign

ROOT = Path(__file__).resolve().parent.parent


def test_py_typed_is_shipped() -> None:
    pkg = Path(sovereign.__file__).parent
    assert (pkg / "py.typed").is_file(), pkg


def test_async_resources_are_generated_from_the_sync_ones() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_async.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_sync_and_async_have_the_same_resources_and_methods() -> None:
    names = [
        "models", "rerank", "collections", "source_links", "workflows", "workflow_runs", "approvals", "events",
        "logs", "policy_decisions", "policies", "limits", "usage", "webhooks", "keys", "teams", "batch",
    ]
    s, a = Sovereign(api_key="k"), AsyncSovereign(api_key="k")
    for name in names:
        sync_res, async_res = getattr(s, name), getattr(a, name)
        sync_methods = {m for m in dir(sync_res) if not m.startswith("_")}
        async_methods = {m for m in dir(async_res) if not m.startswith("_")}
        assert sync_methods == async_methods, name
        for m in sync_methods:
            sm, am = getattr(sync_res, m), getattr(async_res, m)
            if callable(sm) and not isinstance(sm, type):
                assert inspect.signature(sm).parameters.keys() == inspect.signature(am).parameters.keys(), f"{name}.{m}"
    assert isinstance(s, openai.OpenAI) and isinstance(a, openai.AsyncOpenAI)


def test_every_error_is_exported_and_an_openai_error() -> None:
    for name in sovereign.__all__:
        obj = getattr(sovereign, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, openai.OpenAIError), name
