#!/usr/bin/env python3
"""Apply Sovereign's changes to an unpacked llama.cpp tree (argument: its directory).

Two changes, on x86 CPUs with AVX-512 VNNI: Q8_0 matrices are repacked four
rows at a time and multiplied by the kernels in q8_0_avx512vnni.inc, and Q5_0
matrices are unpacked to Q8_0 at load (exactly) to take the same kernels
(q5_0_as_q8_0.inc; see those files). Each edit names the text it expects and fails loudly when a new
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

    # Q5_0 weights as Q8_0 (q5_0_as_q8_0.inc): the traits class after the
    # tensor_traits template (whose members it uses), the dispatch, and an
    # allocation size for the larger repacked data.
    repack = cpu / "repack.cpp"
    edit(repack,
         "template <typename BLOC_TYPE, int64_t INTER_SIZE, int64_t NB_COLS, ggml_type PARAM_TYPE> class tensor_traits : public tensor_traits_base {\n",
         "template <typename BLOC_TYPE, int64_t INTER_SIZE, int64_t NB_COLS, ggml_type PARAM_TYPE> class tensor_traits : public tensor_traits_base {\n"
         "  protected: // Sovereign: sov_q5_0_as_q8_0_traits derives from it\n")
    edit(repack,
         "}  // namespace ggml::cpu::repack\n\nstatic const ggml::cpu::tensor_traits * ggml_repack_get_optimal_repack_type(const struct ggml_tensor * cur) {\n",
         (HERE / "q5_0_as_q8_0.inc").read_text() +
         "\n}  // namespace ggml::cpu::repack\n\nstatic const ggml::cpu::tensor_traits * ggml_repack_get_optimal_repack_type(const struct ggml_tensor * cur) {\n"
         f"#if {VNNI}\n"
         "    static const ggml::cpu::repack::sov_q5_0_as_q8_0_traits sov_q5_0_as_q8_0;\n"
         "    if (ggml::cpu::repack::sov_q5_0_as_q8_0(cur)) {\n"
         "        return &sov_q5_0_as_q8_0;\n"
         "    }\n"
         "#endif\n")
    edit(repack,
         "static enum ggml_status ggml_backend_cpu_repack_buffer_init_tensor(",
         "static size_t ggml_backend_cpu_repack_buffer_type_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor) {\n"
         "    GGML_UNUSED(buft);\n"
         f"#if {VNNI}\n"
         "    if (ggml::cpu::repack::sov_q5_0_as_q8_0(tensor)) {\n"
         "        return ggml_row_size(GGML_TYPE_Q8_0, tensor->ne[0]) * ggml_nrows(tensor); // Sovereign: Q5_0 held as Q8_0\n"
         "    }\n"
         "#endif\n"
         "    return ggml_nbytes(tensor);\n"
         "}\n\n"
         "static enum ggml_status ggml_backend_cpu_repack_buffer_init_tensor(")
    edit(repack,
         "/* .get_alloc_size       = */ nullptr,  // defaults to ggml_nbytes",
         "/* .get_alloc_size       = */ ggml_backend_cpu_repack_buffer_type_get_alloc_size,")

    x86 = cpu / "arch/x86/repack.cpp"
    x86.write_text(x86.read_text() + "\n" + (HERE / "q8_0_avx512vnni.inc").read_text())


if __name__ == "__main__":
    main()
