"""tk.array_api.fft: the standard's fft extension, against numpy.fft (values, dtypes) and
torch.fft (gradients), and by gradcheck."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorkit as tk

fft = tk.array_api.fft

NORMS = ["backward", "ortho", "forward"]
RNG = np.random.default_rng(0)
REAL = RNG.normal(size=(4, 6))
COMPLEX = REAL + 1j * RNG.normal(size=(4, 6))


def check(got: tk.Tensor, expected: np.ndarray, dtype: tk.dtype | None = None) -> None:
    assert got.shape == expected.shape
    if dtype is not None:
        assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got.detach()), expected, atol=1e-10, rtol=1e-10)


def test_names_and_signatures():
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        parameters = inspect.signature(getattr(fft, name)).parameters.values()
        assert [(p.name, p.kind.description) for p in parameters] == [
            ("x", "positional-only"),
            ("n", "keyword-only"),
            ("axis", "keyword-only"),
            ("norm", "keyword-only"),
        ]
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        assert list(inspect.signature(getattr(fft, name)).parameters) == ["x", "s", "axes", "norm"]
    assert list(inspect.signature(fft.fftfreq).parameters) == ["n", "d", "dtype", "device"]
    assert list(inspect.signature(fft.fftshift).parameters) == ["x", "axes"]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 3, 8])
def test_one_dimensional_transforms(norm, n):
    z, x = tk.tensor(COMPLEX), tk.tensor(REAL)
    check(fft.fft(z, n=n, norm=norm), np.fft.fft(COMPLEX, n=n, norm=norm), tk.complex128)
    check(fft.ifft(z, n=n, axis=0, norm=norm), np.fft.ifft(COMPLEX, n=n, axis=0, norm=norm))
    check(fft.fft(x, n=n, norm=norm), np.fft.fft(REAL, n=n, norm=norm), tk.complex128)
    check(fft.rfft(x, n=n, norm=norm), np.fft.rfft(REAL, n=n, norm=norm), tk.complex128)
    check(fft.irfft(z, n=n, norm=norm), np.fft.irfft(COMPLEX, n=n, norm=norm), tk.float64)
    check(fft.hfft(z, n=n, norm=norm), np.fft.hfft(COMPLEX, n=n, norm=norm), tk.float64)
    check(fft.ihfft(x, n=n, norm=norm), np.fft.ihfft(REAL, n=n, norm=norm), tk.complex128)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    ("s", "axes"), [(None, None), ((3, 8), (0, 1)), (None, (0,)), ((5,), (0,)), ((3, 7), (1, 0))]
)
def test_n_dimensional_transforms(norm, s, axes):
    z, x = tk.tensor(COMPLEX), tk.tensor(REAL)
    kw = {"s": s, "axes": axes, "norm": norm}
    check(fft.fftn(z, **kw), np.fft.fftn(COMPLEX, **kw))
    check(fft.ifftn(z, **kw), np.fft.ifftn(COMPLEX, **kw))
    check(fft.rfftn(x, **kw), np.fft.rfftn(REAL, **kw))
    check(fft.irfftn(z, **kw), np.fft.irfftn(COMPLEX, **kw))


def test_single_precision_is_kept():
    x = tk.tensor(REAL, dtype=tk.float32)
    assert fft.fft(x).dtype == tk.complex64
    assert fft.rfft(x).dtype == tk.complex64
    assert fft.irfft(fft.rfft(x)).dtype == tk.float32
    np.testing.assert_allclose(np.asarray(fft.irfft(fft.rfft(x), n=6)), REAL, atol=1e-5)


@pytest.mark.parametrize("n", [1, 4, 5])
def test_frequencies_and_shifts(n):
    check(fft.fftfreq(n, d=0.5, dtype=tk.float64), np.fft.fftfreq(n, d=0.5), tk.float64)
    check(fft.rfftfreq(n, d=0.5, dtype=tk.float64), np.fft.rfftfreq(n, d=0.5), tk.float64)
    assert fft.fftfreq(n).dtype == tk.float32
    x = tk.tensor(REAL)
    check(fft.fftshift(x), np.fft.fftshift(REAL))
    check(fft.ifftshift(x, axes=1), np.fft.ifftshift(REAL, axes=1))
    check(fft.ifftshift(fft.fftshift(x, axes=(0,)), axes=(0,)), REAL)


def test_gradcheck_real_pipelines():
    x = tk.tensor(REAL, requires_grad=True)
    assert tk.autograd.gradcheck(lambda t: fft.irfft(fft.rfft(t) * 2.0, n=6), [x])
    assert tk.autograd.gradcheck(lambda t: fft.fftn(t, s=(5, 4)).imag, [x])
    assert tk.autograd.gradgradcheck(lambda t: fft.fft(t, norm="ortho").real, [x])
    assert tk.autograd.gradcheck(lambda t: fft.hfft(t[:, :4], n=5), [x])


TORCH_CASES = {
    "fft": ("fft", COMPLEX, {"n": 8}, {"n": 8}),
    "ifft": ("ifft", COMPLEX, {"n": 3, "axis": 0}, {"n": 3, "dim": 0}),
    "rfft": ("rfft", REAL, {"n": 7}, {"n": 7}),
    "irfft-even": ("irfft", COMPLEX, {"n": 8}, {"n": 8}),
    "irfft-odd": ("irfft", COMPLEX, {"n": 9}, {"n": 9}),
    "hfft": ("hfft", COMPLEX, {}, {}),
    "ihfft": ("ihfft", REAL, {}, {}),
    "fftn": ("fftn", COMPLEX, {"s": (5, 4)}, {"s": (5, 4)}),
    "rfftn": ("rfftn", REAL, {}, {}),
    "irfftn": ("irfftn", COMPLEX, {"s": (3, 6)}, {"s": (3, 6)}),
}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_gradients_match_torch(case, norm):
    torch = pytest.importorskip("torch")
    name, data, kw, torch_kw = TORCH_CASES[case]
    mine = tk.tensor(data, requires_grad=True)
    out = getattr(fft, name)(mine, norm=norm, **kw)
    rng = np.random.default_rng(1)
    w = rng.normal(size=tuple(out.shape))
    if out.is_complex():
        w = w + 1j * rng.normal(size=tuple(out.shape))
    (out * tk.tensor(w)).real.sum().backward()
    theirs = torch.tensor(data, requires_grad=True)
    (
        getattr(torch.fft, name)(theirs, norm=norm, **torch_kw) * torch.tensor(w)
    ).real.sum().backward()
    np.testing.assert_allclose(
        np.asarray(mine.grad), theirs.grad.resolve_conj().numpy(), atol=1e-10, rtol=1e-10
    )


def test_invalid_arguments():
    x = tk.tensor(REAL)
    with pytest.raises(ValueError):
        fft.fft(x, norm="unitary")
    with pytest.raises(ValueError):
        fft.fft(x, n=0)
    with pytest.raises(TypeError):
        fft.rfft(tk.tensor(COMPLEX))
