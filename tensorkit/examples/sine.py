"""Fit a small MLP to a noisy sine curve with core tensorkit ops, then look inside autograd.

Run with ``python -m tensorkit.examples.sine``. It trains for a few hundred steps (about a
second), prints the loss as it falls, then records one step on a Tape and walks the backward
pass one node at a time with ``tk.autograd.backward_steps``.
"""

from __future__ import annotations

import math
import time

import tensorkit as tk


def make_data(n: int = 256, seed: int = 0) -> tuple[tk.Tensor, tk.Tensor]:
    generator = tk.Generator().manual_seed(seed)
    x = tk.rand(n, 1, generator=generator) * 2 * math.pi - math.pi
    y = tk.sin(x) + 0.05 * tk.randn(n, 1, generator=generator)
    return x, y


def init_params(hidden: int = 32, seed: int = 1) -> list[tk.Tensor]:
    generator = tk.Generator().manual_seed(seed)
    w1 = tk.randn(1, hidden, generator=generator) * 1.0
    b1 = tk.zeros(hidden)
    w2 = tk.randn(hidden, 1, generator=generator) / math.sqrt(hidden)
    b2 = tk.zeros(1)
    return [p.requires_grad_() for p in (w1, b1, w2, b2)]


def predict(params: list[tk.Tensor], x: tk.Tensor) -> tk.Tensor:
    w1, b1, w2, b2 = params
    return tk.tanh(x @ w1 + b1) @ w2 + b2


def train(steps: int = 400, lr: float = 0.1) -> list[tk.Tensor]:
    x, y = make_data()
    params = init_params()
    start = time.perf_counter()
    for step in range(steps + 1):
        loss = ((predict(params, x) - y) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with tk.no_grad():
            for p in params:
                p -= lr * p.grad
        if step % 100 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    print(f"trained {steps} steps in {time.perf_counter() - start:.2f} s")
    return params


def show_one_step(params: list[tk.Tensor]) -> None:
    x, y = make_data(n=8, seed=2)
    with tk.autograd.Tape() as tape:
        loss = ((predict(params, x) - y) ** 2).mean()
    print(f"\nThe forward pass of one step, as recorded by a Tape ({len(tape)} ops):")
    print(tape.to_text())
    print("\nIts backward pass, one node at a time:")
    for step in tk.autograd.backward_steps(loss):
        grads = ", ".join(
            "None" if g is None else f"{list(g.shape)} |g|={g.norm().item():.3g}"
            for g in (step.grads_out or step.grads_in)
        )
        print(f"  {step.index:2d} {step.name:<18} -> {grads}")


def main() -> None:
    params = train()
    show_one_step(params)


if __name__ == "__main__":
    main()
