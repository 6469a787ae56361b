#!/usr/bin/env python3
"""Prune OpenAI's published OpenAPI document to the schemas Sovereign's
answers are checked against, and everything they reference.

    git -C openai-openapi show <commit>:openapi.json > /tmp/openai-openapi.json
    python3 prune.py /tmp/openai-openapi.json <commit> > schemas.json

The output is a JSON Schema (2020-12) document: OpenAI's components, with
their "#/components/schemas/..." references unchanged, under the same path.
"""
import json
import sys

ROOTS = [
    "CreateChatCompletionResponse",
    "CreateChatCompletionStreamResponse",
    "CreateCompletionResponse",
    "CreateEmbeddingResponse",
    "Response",
    "ResponseStreamEvent",
    "ResponseItemList",
    "Error",
    "ErrorResponse",
]


def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            out.add(r.rsplit("/", 1)[1])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def nullable(node):
    """OpenAPI 3.0's nullable, which the 3.1 document still uses in places,
    as JSON Schema: null is one more allowed type (and enum value)."""
    if isinstance(node, list):
        return [nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: nullable(v) for k, v in node.items()}
    if node.pop("nullable", False) is True:
        if isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"] = node["enum"] + [None]
        elif "type" not in node:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def recursive(name, node):
    """Draft 2019-09's $recursiveAnchor/$recursiveRef "#" (CompoundFilter) as
    a plain $ref to the schema itself, which 2020-12 reads."""
    if isinstance(node, list):
        return [recursive(name, v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: recursive(name, v) for k, v in node.items() if k != "$recursiveAnchor"}
    if node.get("$recursiveRef") == "#":
        del node["$recursiveRef"]
        node["$ref"] = "#/components/schemas/" + name
    return node


def main():
    doc = json.load(open(sys.argv[1]))
    schemas = doc["components"]["schemas"]
    keep, pending = set(), list(ROOTS)
    while pending:
        name = pending.pop()
        if name in keep:
            continue
        keep.add(name)
        found = set()
        refs(schemas[name], found)
        pending.extend(found - keep)
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"Pruned from openai/openai-openapi openapi.json at {sys.argv[2]} by prune.py: {', '.join(ROOTS)} and what they reference.",
        "components": {"schemas": {k: recursive(k, nullable(schemas[k])) for k in sorted(keep)}},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
