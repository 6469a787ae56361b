#!/usr/bin/env python3
"""Apply Sovereign's changes to an unpacked llama.cpp tree (argument: its directory).

One change: Q8_0 matrices on x86 CPUs with AVX-512 VNNI are repacked four rows
at a time and multiplied by the kernels in q8_0_avx512vnni.inc (see that
file). Each edit names the text it expects and fails loudly when a new
llama.cpp release moved it, rather than building something else.
"""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
VNNI = "defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__F16C__)"


def edit(path, old, new, count=1):
    text = path.read_text()
    if text.count(old) != count:
        sys.exit(f"llama.cpp patch: expected {count} occurrence(s) of {old!r} in {path}, found {text.count(old)}")
    path.write_text(text.replace(old, new))


def main():
    src = pathlib.Path(sys.argv[1])
    cpu = src / "ggml/src/ggml-cpu"

    # arch-fallback.h maps the Q8_0 4x4 kernels to their generic C versions
    # on x86; keep that only where the VNNI kernels are not compiled in.
    fb = cpu / "arch-fallback.h"
    text = fb.read_text()
    start = text.index("#elif defined(__x86_64__)")
    end = text.index("#elif", start + 1)
    section = text[start:end]
    for kind in ("gemv", "gemm"):
        line = f"#define ggml_{kind}_q8_0_4x4_q8_0_generic ggml_{kind}_q8_0_4x4_q8_0\n"
        if section.count(line) != 1:
            sys.exit(f"llama.cpp patch: {line.strip()!r} not found once in the x86 section of {fb}")
        section = section.replace(line, f"#if !({VNNI})\n{line}#endif\n")
    fb.write_text(text[:start] + section + text[end:])

    # The repack dispatch: Q8_0 weights take the 4x4 layout on such CPUs.
    edit(cpu / "repack.cpp",
         "    } else if (cur->type == GGML_TYPE_Q8_0) {\n",
         "    } else if (cur->type == GGML_TYPE_Q8_0) {\n"
         f"#if {VNNI}\n"
         "        if (cur->ne[1] % 4 == 0) {\n"
         "            return &q8_0_4x4_q8_0; // Sovereign: scripts/llama-cpp/q8_0_avx512vnni.inc\n"
         "        }\n"
         "#endif\n")

    x86 = cpu / "arch/x86/repack.cpp"
    x86.write_text(x86.read_text() + "\n" + (HERE / "q8_0_avx512vnni.inc").read_text())


if __name__ == "__main__":
    main()
