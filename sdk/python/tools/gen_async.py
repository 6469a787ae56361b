#!/usr/bin/env python3
"""Generates src/sovereign/resources/_async.py from _sync.py (the resources' async twins).

    python tools/gen_async.py          # write it
    python tools/gen_async.py --check  # exit 1 if it is out of date (the tests run this)

Rules: ``class X(SyncResource)`` -> ``class AsyncX(AsyncResource)``; every method becomes
``async def`` except those returning a paginator or an event stream, and the cached sub-resources;
calls to the client's HTTP methods and to the class's own async methods are awaited.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "sovereign" / "resources" / "_sync.py"
# Methods that do no I/O: synchronous in the async resources too (as OpenAI's AsyncWebhooks.unwrap).
PURE = {"__init__", "verify", "unwrap"}
DST = ROOT / "src" / "sovereign" / "resources" / "_async.py"


def _async_methods(src: str) -> dict[str, set[str]]:
    """{class: methods that become ``async def``} (by each method's signature)."""
    result: dict[str, set[str]] = {}
    cls, name, sig, prev = "", "", "", ""
    for line in src.split("\n"):
        m = re.match(r"class (\w+)\(", line)
        if m:
            cls = m.group(1)
            result.setdefault(cls, set())
        m = re.match(r"    def (\w+)\(", line)
        if m:
            name, sig = m.group(1), ""
            cached = "@cached_property" in prev
        if name:
            sig += line
            if line.rstrip().endswith(":") and "->" in sig:
                stays = cached or name in PURE or re.search(r"-> (SyncCursorPage|SyncPage|EventStream)\b", sig)
                if not stays:
                    result[cls].add(name)
                name = ""
        if line.strip():
            prev = line
    return result


def generate(src: str) -> str:
    classes = re.findall(r"^class (\w+)\(SyncResource\)", src, flags=re.M)
    methods = _async_methods(src)
    text = src
    text = text.replace(
        '"""Sovereign\'s resources (synchronous).\n\n``_async.py`` is generated from this file by ``tools/gen_async.py``: edit this one and regenerate.\n"""',
        '"""Sovereign\'s resources (asynchronous).\n\nGenerated from ``_sync.py`` by ``tools/gen_async.py``: do not edit.\n"""',
    )
    for c in classes:
        text = re.sub(rf"\b{c}\b", f"Async{c}", text)
    text = text.replace("(SyncResource)", "(AsyncResource)").replace("SyncResource,", "AsyncResource,")
    text = re.sub(r"SyncCursorPage\[([\w.]+)\](?=:)", r"AsyncPaginator[\1, AsyncCursorPage[\1]]", text)
    text = re.sub(r"SyncPage\[([\w.]+)\](?=:)", r"AsyncPaginator[\1, AsyncPage[\1]]", text)
    text = text.replace("SyncCursorPage[", "AsyncCursorPage[").replace("SyncPage[", "AsyncPage[")
    text = text.replace("from ..pagination import SyncCursorPage, SyncPage", "from ..pagination import AsyncCursorPage, AsyncPage")
    text = text.replace(
        "from openai._compat import cached_property\n",
        "from openai._base_client import AsyncPaginator\nfrom openai._compat import cached_property\n",
    )
    text = re.sub(r"\bEventStream\b", "AsyncEventStream", text)
    out = []
    awaited: set[str] = set()
    for line in text.split("\n"):
        m = re.match(r"class Async(\w+)\(", line)
        if m:
            awaited = methods.get(m.group(1), set())
        m = re.match(r"    def (\w+)\(", line)
        if m and m.group(1) in awaited:
            line = line.replace("    def ", "    async def ", 1)
        line = re.sub(r"(?<!await )self\._(get|post|put|patch|delete|sleep)\(", r"await self._\1(", line)
        for meth in awaited:
            line = re.sub(rf"(?<!await )self\.{meth}\(", f"await self.{meth}(", line)
        out.append(line)
    return "\n".join(out)


def main() -> int:
    want = generate(SRC.read_text())
    if "--check" in sys.argv:
        if not DST.exists() or DST.read_text() != want:
            print(f"{DST} is out of date: run python tools/gen_async.py", file=sys.stderr)
            return 1
        return 0
    DST.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
