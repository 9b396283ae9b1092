"""tk.utils.cpp_extension: compiling C/C++ into tensor functions, the build cache, and the
errors for bad arguments, bad sources and a missing compiler."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tensorkit as tk
from tensorkit.utils import cpp_extension
from tensorkit.utils.cpp_extension import BuildError, CompilerNotFoundError, PrototypeError

SOURCE = r"""
#include <stdint.h>
/* out = a * x + y, elementwise over an n-by-m matrix */
void axpy(int64_t n, int64_t m, float a, const float x[n][m], const float y[n][m],
          float out[n][m]) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) out[i][j] = a * x[i][j] + y[i][j];
}
double total(int64_t n, const double *values) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += values[i];
    return sum;
}
"""


@pytest.fixture(autouse=True)
def build_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "extensions"
    monkeypatch.setenv("TENSORKIT_EXTENSIONS_DIR", str(root))
    return root


@pytest.fixture
def ext():
    return cpp_extension.load_inline("axpy_ext", SOURCE, functions=["axpy", "total"])


def test_compiled_functions_take_tensors_zero_copy(ext) -> None:
    x, y = tk.randn(3, 4), tk.randn(3, 4)
    out = tk.empty(3, 4)
    pointer = out.data_ptr()
    version = out._version
    assert ext.axpy(3, 4, 2.0, x, y, out) is None
    np.testing.assert_allclose(out.numpy(), 2 * x.numpy() + y.numpy(), rtol=1e-6)
    assert out.data_ptr() == pointer and out._version == version + 1
    assert ext.total(3, tk.tensor([1.0, 2.0, 4.5], dtype=tk.float64)) == 7.5
    assert "void axpy(int64_t n, int64_t m, float a, const float *x" in repr(ext.axpy)


def test_builds_are_cached_by_source_and_flags(build_root: Path, ext) -> None:
    (folder,) = build_root.iterdir()
    library = next(folder.glob("*.so"))
    built = library.stat().st_mtime_ns
    again = cpp_extension.load_inline("axpy_ext", SOURCE, functions=["axpy"])
    assert library.stat().st_mtime_ns == built and list(build_root.iterdir()) == [folder]
    assert again.axpy is ext.axpy  # the library is opened once per process
    cpp_extension.load_inline("axpy_ext", SOURCE, functions=["axpy"], extra_cflags=["-O1"])
    cpp_extension.load_inline("axpy_ext", SOURCE + "\n", functions=["axpy"])
    assert len(list(build_root.iterdir())) == 3
    assert all(re.fullmatch(r"axpy_ext_[0-9a-f]{16}", p.name) for p in build_root.iterdir())
    assert (folder / "main.c").read_text() == SOURCE


def test_the_default_cache_is_per_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TENSORKIT_EXTENSIONS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cpp_extension.build_root() == tmp_path / "cache" / "tensorkit_extensions"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cpp_extension.build_root() == Path.home() / ".cache" / "tensorkit_extensions"


def test_load_compiles_files_and_cpp_needs_extern_c(tmp_path: Path) -> None:
    c_file = tmp_path / "scale.c"
    c_file.write_text(
        "void scale(long n, double k, double x[n]) { for (long i = 0; i < n; i++) x[i] *= k; }\n"
    )
    cpp_file = tmp_path / "shift.cpp"
    cpp_file.write_text(
        '#include <cstdint>\nextern "C" void shift(int64_t n, double *x) {\n'
        "    for (int64_t i = 0; i < n; i++) x[i] += 1.0;\n}\n"
    )
    module = cpp_extension.load("mixed", [c_file, cpp_file], functions={"scale": "Scale x by k."})
    x = tk.tensor([1.0, 2.0], dtype=tk.float64)
    module.scale(2, 3.0, x)
    np.testing.assert_array_equal(x.numpy(), [3.0, 6.0])
    assert module.scale.__doc__ == "Scale x by k."
    with pytest.raises(AttributeError):
        module.shift
    inline = cpp_extension.load_inline("cpp_inline", cpp_file.read_text(), functions="shift")
    inline.shift(2, x)
    np.testing.assert_array_equal(x.numpy(), [4.0, 7.0])
    with pytest.raises(
        FileNotFoundError, match=r"load\('missing'\): source file '.*nope\.c' does not exist"
    ):
        cpp_extension.load("missing", [tmp_path / "nope.c"], functions="f")


# ---------------------------------------------------------------------- bad arguments
def test_a_wrong_dtype_names_the_argument(ext) -> None:
    with pytest.raises(
        TypeError,
        match=re.escape(
            "axpy(): argument 'y' (position 5) must have dtype float32 (C type float), got float64"
        ),
    ):
        ext.axpy(2, 2, 1.0, tk.ones(2, 2), tk.ones(2, 2, dtype=tk.float64), tk.empty(2, 2))


def test_a_wrong_shape_names_the_argument_and_the_sizes(ext) -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "axpy(): argument 'out' (position 6) must have shape out[n][m] (n=2, m=2), got [2, 3]"
        ),
    ):
        ext.axpy(2, 2, 1.0, tk.ones(2, 2), tk.ones(2, 2), tk.empty(2, 3))
    with pytest.raises(
        ValueError,
        match=re.escape("argument 'x' (position 4) must have shape x[n][m] (n=2, m=2), got [4]"),
    ):
        ext.axpy(2, 2, 1.0, tk.ones(4), tk.ones(2, 2), tk.empty(2, 2))


def test_a_non_contiguous_tensor_names_the_argument(ext) -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "axpy(): argument 'x' (position 4) must be contiguous, got a tensor of shape [2, 2] "
            "with strides (1, 2) (call .contiguous() first)"
        ),
    ):
        ext.axpy(2, 2, 1.0, tk.ones(2, 2).t(), tk.ones(2, 2), tk.empty(2, 2))


def test_a_cuda_tensor_names_the_argument(ext, monkeypatch: pytest.MonkeyPatch) -> None:
    from cuda_standin import install

    install(monkeypatch, numpy_backed=True)
    on_gpu = tk.ones(2, 2, device="cuda")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "axpy(): argument 'y' (position 5) must be a cpu tensor, got a tensor on cuda:0 "
            "(functions from cpp_sources take CPU tensors"
        ),
    ):
        ext.axpy(2, 2, 1.0, tk.ones(2, 2), on_gpu, tk.empty(2, 2))


def test_numbers_arity_and_written_leaves_are_checked(ext) -> None:
    x = tk.ones(2, 2)
    with pytest.raises(
        TypeError, match=re.escape("axpy() takes 6 arguments (n, m, a, x, y, out) but 5 were given")
    ):
        ext.axpy(2, 2, 1.0, x, x)
    with pytest.raises(
        TypeError,
        match=re.escape("argument 'n' (position 1) must be an int (int64_t n), got float"),
    ):
        ext.axpy(2.0, 2, 1.0, x, x, tk.empty(2, 2))
    with pytest.raises(
        TypeError,
        match=re.escape("argument 'x' (position 4) must be a Tensor (const float *x), got ndarray"),
    ):
        ext.axpy(2, 2, 1.0, np.ones((2, 2), np.float32), x, tk.empty(2, 2))
    with pytest.raises(
        OverflowError,
        match=re.escape(
            "argument 'n' (position 1) = 9223372036854775808 does not fit the C type int64_t"
        ),
    ):
        ext.axpy(2**63, 2, 1.0, x, x, tk.empty(2, 2))
    with pytest.raises(
        RuntimeError,
        match=(
            r"argument 'out' \(position 6\) is written by the function .* a leaf tensor that "
            r"requires grad"
        ),
    ):
        ext.axpy(2, 2, 1.0, x, x, tk.empty(2, 2, requires_grad=True))


# ---------------------------------------------------------------------- bad sources
def test_a_source_that_does_not_compile_shows_the_compilers_messages(build_root: Path) -> None:
    source = "#include <stdint.h>\n\nvoid broken(int64_t n) {\n    return undefined_name;\n}\n"
    with pytest.raises(BuildError) as info:
        cpp_extension.load_inline("broken", source, functions=["broken"])
    text = str(info.value)
    assert text.startswith("Error building extension 'broken': ")
    path = next(build_root.glob("broken_*")) / "main.c"
    assert re.search(rf"{re.escape(str(path))}:4:12: error: .undefined_name. undeclared", text)
    assert not list(build_root.glob("broken_*/*.so"))


def test_a_missing_compiler_says_which_and_how_to_install_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CC", "tk-no-such-cc")
    with pytest.raises(
        CompilerNotFoundError,
        match=re.escape(
            "tk.utils.cpp_extension: the C compiler 'tk-no-such-cc' ($CC) was not found: install "
            "a C/C++ compiler (Debian/Ubuntu: sudo apt-get install build-essential;"
        ),
    ) as info:
        cpp_extension.load_inline("no_cc", "void f(int n) {}", functions="f")
    assert "or set CC to the compiler's path" in str(info.value)
    monkeypatch.setenv("CXX", "tk-no-such-cxx")
    with pytest.raises(
        CompilerNotFoundError, match=r"the C\+\+ compiler 'tk-no-such-cxx' \(\$CXX\)"
    ):
        cpp_extension.load_inline("no_cxx", 'extern "C" void f(int n) {}', functions="f")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("void f(int n) {}", "function 'g' is not defined in the sources (main.c)"),
        ("void g(float **x) {}", "parameter 'x' ('float **x') is a pointer to pointers"),
        (
            "void g(struct s x) {}",
            "main.c:1: function g, parameter 'x': unsupported C type 'struct s'",
        ),
        ("float *g(int n) { return 0; }", "a function returning a pointer cannot be bound"),
        (
            "void g(const float x[k]) {}",
            "the size 'k' of parameter 'x' must be an integer parameter's name",
        ),
    ],
)
def test_functions_that_cannot_be_bound_are_reported(source: str, message: str) -> None:
    with pytest.raises(PrototypeError, match=re.escape(message)):
        cpp_extension.load_inline("unbound", source, functions=["g"])


def test_cuda_sources_without_a_gpu_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tk.cuda, "is_available", lambda: False)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "extension 'k': cuda_sources need a CUDA GPU and CuPy, but no CUDA device is "
            "available (tk.cuda.is_available() is False)"
        ),
    ):
        cpp_extension.load_inline(
            "k", cuda_sources='extern "C" __global__ void k(float *x) {}', functions=["k"]
        )
    with pytest.raises(ValueError, match=r"with_cuda=False, but cuda_sources were given"):
        cpp_extension.load_inline("k", cuda_sources="x", functions=["k"], with_cuda=False)


def test_load_module_refuses_a_module_ffibuilder_did_not_build() -> None:
    import json as not_an_extension

    with pytest.raises(
        TypeError, match=r"json is not an extension built by tk\.utils\.cpp_extension\.ffibuilder"
    ):
        cpp_extension.load_module(not_an_extension)


def test_a_view_is_written_through_to_its_base() -> None:
    fill = cpp_extension.load_inline(
        "fill_ext",
        "void fill(long n, float value, float out[n]) { for (long i = 0; i < n; i++) out[i] = "
        "value; }",
        functions=["fill"],
    )
    base = tk.zeros(3, 4)
    row = base[1]  # a contiguous view with an offset into base's buffer
    fill.fill(4, 7.0, row)
    np.testing.assert_array_equal(base.numpy(), [[0] * 4, [7] * 4, [0] * 4])
    assert base._version == row._version == 1  # the view shares its base's counter
