"""Random numbers: ``Generator``, the default generator, and the sampling functions.

A Generator wraps NumPy's PCG64 bit generator on the CPU (CuPy's on a GPU). Results are
reproducible within tensorkit for a given seed; they do not match PyTorch's streams.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _state
from ._backend import as_device, device, device_of_array
from ._dtype import dtype, get_default_dtype, int64
from .ops.creation import allocate, parse_shape
from .tensor import Tensor, wrap

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "rand",
    "randn",
    "randint",
    "randperm",
    "normal",
    "rand_like",
    "randn_like",
    "randint_like",
    "bernoulli",
    "multinomial",
]

_DEFAULT_SEED = 67280421310721


class Generator:
    """A source of random numbers with its own state (``Generator(device="cpu")``)."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = as_device(device)
        self._seed = _DEFAULT_SEED
        self._rng = self._make(self._seed)

    def _make(self, seed_value: int) -> Any:
        if self.device.type == "cpu":
            return np.random.Generator(np.random.PCG64(seed_value))
        return self.device.xp.random.Generator(self.device.xp.random.XORWOW(seed_value))

    def manual_seed(self, seed: int) -> Generator:
        """Reset the state from ``seed``; returns the generator."""
        seed = int(seed)
        if seed < 0:
            seed += 2**64
        self._seed = seed
        self._rng = self._make(seed)
        return self

    def seed(self) -> int:
        """Seed from OS entropy; returns the seed used."""
        value = int(np.random.SeedSequence().entropy % 2**63)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (for ``set_state``)."""
        import json

        state = json.dumps(self._rng.bit_generator.state, default=int).encode()
        return wrap(np.frombuffer(state, dtype=np.uint8).copy(), as_device("cpu"))

    def set_state(self, new_state: Tensor) -> Generator:
        import json

        if not isinstance(new_state, Tensor) or new_state._data.dtype != np.uint8:
            raise TypeError("set_state expects a uint8 tensor from get_state()")
        self._rng.bit_generator.state = json.loads(bytes(new_state._data).decode())
        return self

    @property
    def numpy_generator(self) -> Any:
        """The underlying array-library generator (for sampling on arrays)."""
        return self._rng


default_generator = Generator()
_cuda_generators: dict[device, Generator] = {}


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and every CUDA generator already made)."""
    for generator in _cuda_generators.values():
        generator.manual_seed(seed)
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


def generator_for(target: device, generator: Generator | None) -> Any:
    """The array-library generator to sample with on ``target``."""
    if _state.tracer is not None:
        _state.tracer.random_requested()
    if generator is not None:
        if generator.device is not target:
            raise RuntimeError(
                f"Expected a '{target.type}' device type for generator but found "
                f"'{generator.device.type}'"
            )
        return generator.numpy_generator
    if target.type == "cpu":
        return default_generator.numpy_generator
    if target not in _cuda_generators:
        made = Generator(target)
        made.manual_seed(default_generator.initial_seed())
        _cuda_generators[target] = made
    return _cuda_generators[target].numpy_generator


def _sample(
    size: tuple,
    sampler: Any,
    dtype_arg: dtype | None,
    device_arg: Any,
    generator: Generator | None,
    requires_grad: bool,
    default: dtype,
    name: str,
) -> Tensor:
    shape = parse_shape(size, name)
    target_dtype = dtype_arg or default
    target = as_device(device_arg)
    rng = generator_for(target, generator)
    data = allocate(lambda: sampler(rng, shape), shape, target_dtype.np, target)
    out = wrap(data.astype(target_dtype.np, copy=False), target)
    if _state.tracer is not None and generator is None and name in ("rand", "randn"):
        attrs = {"shape": shape, "dtype": target_dtype, "device": str(target)}
        _state.tracer.random_made(out, name, (), attrs)
    if requires_grad:
        out.requires_grad_(True)
    return out


def rand(
    *size: Any,
    generator: Generator | None = None,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _sample(
        size,
        lambda rng, s: rng.random(s),
        dtype,
        device,
        generator,
        requires_grad,
        get_default_dtype(),
        "rand",
    )


def randn(
    *size: Any,
    generator: Generator | None = None,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples."""
    return _sample(
        size,
        lambda rng, s: rng.standard_normal(s),
        dtype,
        device,
        generator,
        requires_grad,
        get_default_dtype(),
        "randn",
    )


def randint(
    low: int,
    high: int | None = None,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers uniform in [low, high) (``randint(high, size)`` starts at 0)."""
    if size is None:
        if high is None or not isinstance(high, tuple | list):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    return _sample(
        (tuple(size),),
        lambda rng, s: rng.integers(low, high, s),
        dtype,
        device,
        generator,
        requires_grad,
        int64,
        "randint",
    )


def randperm(
    n: int,
    *,
    generator: Generator | None = None,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of 0 .. n-1."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got {n}")
    return _sample(
        ((n,),),
        lambda rng, s: rng.permutation(s[0]),
        dtype,
        device,
        generator,
        requires_grad,
        int64,
        "randperm",
    )


def normal(
    mean: Any = 0.0,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: dtype | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples with the given mean and std (numbers or tensors, broadcast)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        reference = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(
            tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ()))
        )
        noise = randn(shape, generator=generator, dtype=reference.dtype, device=reference.device)
        return noise * std + mean
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if size is None:
        raise TypeError("normal() with number mean and std needs a size")
    return _sample(
        (tuple(size),),
        lambda rng, s: rng.standard_normal(s) * std + mean,
        dtype,
        device,
        generator,
        requires_grad,
        get_default_dtype(),
        "normal",
    )


def rand_like(
    input: Tensor, *, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return rand(
        input.shape,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


def randn_like(
    input: Tensor, *, dtype: dtype | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return randn(
        input.shape,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


def randint_like(
    input: Tensor,
    low: int,
    high: int | None = None,
    *,
    dtype: dtype | None = None,
    device: Any = None,
) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(
        low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device
    )


def bernoulli(
    input: Tensor, p: float | None = None, *, generator: Generator | None = None
) -> Tensor:
    """1 with probability ``input`` (or ``p``) per element, else 0."""
    probabilities = input._data if p is None else p
    rng = generator_for(input.device, generator)
    draws = rng.random(input.shape) < probabilities
    out = wrap(draws.astype(input._data.dtype), input.device)
    if _state.tracer is not None and generator is None:
        _state.tracer.random_made(out, "bernoulli", (input,), {"p": p})
    return out


def redraw(kind: str, inputs: list, attrs: dict) -> Any:
    """Draw again, as an array, what a sampler drew during a ``tk.jit`` capture (``kind``
    is "rand", "randn" or "bernoulli"; see ``Tracer.random_made``)."""
    if kind == "bernoulli":
        dev = device_of_array(inputs[0])
        return bernoulli(wrap(inputs[0], dev), attrs["p"])._data
    sampler = rand if kind == "rand" else randn
    return sampler(attrs["shape"], dtype=attrs["dtype"], device=attrs["device"])._data


def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Sample category indices from each row of (unnormalized) probabilities."""
    _check_distribution(input, num_samples)
    rng = generator_for(input.device, generator)
    rows = input._data.reshape(-1, input.shape[-1])
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    picks = []
    for row in rows:
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        picks.append(rng.choice(row.shape[0], size=num_samples, replace=replacement, p=row / total))
    result = np.stack(picks).reshape(tuple(input.shape[:-1]) + (num_samples,))
    return wrap(input.device.xp.asarray(result, dtype=np.int64), input.device)


def _check_distribution(input: Tensor, num_samples: int) -> None:
    """PyTorch's checks on ``multinomial``'s arguments, with its texts."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {input.dtype}"
        )
    data = input._data
    if bool((~input.device.xp.isfinite(data) | (data < 0)).any()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")


def _exponential(tensor: Tensor, rng: Any, lambd: float) -> Any:
    """Exponential samples by inversion (-log(1 - U) / lambda), on the tensor's device."""
    uniform = rng.random(tensor.shape)
    return (tensor.device.xp.log1p(-uniform) * (-1.0 / lambd)).astype(tensor._data.dtype)


def _random_upper_bound(np_dtype: Any) -> int:
    """PyTorch's default upper bound for ``random_()``: every integer the dtype represents
    exactly (2**24 for float32, 2**53 for float64, the maximum for integer dtypes)."""
    if np_dtype.kind == "f":
        return 2 ** (np.finfo(np_dtype).nmant + 1)
    if np_dtype.kind == "b":
        return 2
    return int(np.iinfo(np_dtype).max)


def install_methods() -> None:
    """In-place samplers used by ``nn.init``: ``t.uniform_()``, ``t.normal_()``, ..."""
    from .ops.inplace import copy_

    def uniform_(
        self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None
    ) -> Tensor:
        rng = generator_for(self.device, generator)
        return copy_(
            self, wrap((rng.random(self.shape) * (b - a) + a).astype(self._data.dtype), self.device)
        )

    def normal_(
        self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
    ) -> Tensor:
        rng = generator_for(self.device, generator)
        return copy_(
            self,
            wrap(
                (rng.standard_normal(self.shape) * std + mean).astype(self._data.dtype), self.device
            ),
        )

    def bernoulli_(self: Tensor, p: float = 0.5, *, generator: Generator | None = None) -> Tensor:
        rng = generator_for(self.device, generator)
        return copy_(self, wrap((rng.random(self.shape) < p).astype(self._data.dtype), self.device))

    def exponential_(
        self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None
    ) -> Tensor:
        rng = generator_for(self.device, generator)
        return copy_(
            self,
            wrap(_exponential(self, rng, lambd), self.device),
        )

    def random_(
        self: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None
    ) -> Tensor:
        if high is None:  # random_(to) draws from [0, to); random_() from the dtype's range
            low, high = 0, low if low else _random_upper_bound(self._data.dtype)
        rng = generator_for(self.device, generator)
        return copy_(
            self, wrap(rng.integers(low, high, self.shape).astype(self._data.dtype), self.device)
        )

    for method in (uniform_, normal_, bernoulli_, exponential_, random_):
        setattr(Tensor, method.__name__, method)
    Tensor.bernoulli = bernoulli
    Tensor.multinomial = multinomial
