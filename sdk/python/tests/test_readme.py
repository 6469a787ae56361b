"""Every Python example of README.md runs, as written, against the live server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks() -> List[Tuple[str, str]]:
    text = README.read_text()
    out: List[Tuple[str, str]] = []
    heading = "top"
    for m in re.finditer(r"^(#{2,3} [^\n]+)$|^```python\n(.*?)^```$", text, flags=re.M | re.S):
        if m.group(1):
            heading = m.group(1).lstrip("# ").strip()
            continue
        out.append((f"{len(out) + 1}-{re.sub(r'[^a-z0-9]+', '-', heading.lower()).strip('-')}", m.group(2)))
    return out


BLOCKS = _blocks()


def test_readme_has_examples_of_every_group() -> None:
    names = " ".join(name for name, _ in BLOCKS)
    for group in ("configure", "inference", "errors", "models", "collections", "workflows", "records", "policies", "webhooks", "keys", "batch", "async"):
        assert group in names, f"no example for {group}"


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_readme_example(name: str, code: str, base_url: str, api_key: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(SOVEREIGN_BASE_URL=base_url, SOVEREIGN_API_KEY=api_key, PYTHONDONTWRITEBYTECODE="1")
    script = tmp_path / f"{name}.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"README example {name} failed:\n{code}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.stdout.strip(), f"README example {name} printed nothing"
