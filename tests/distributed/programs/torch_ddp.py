"""Rank program: tensorkit's DDP (mpi) and torch's DDP (gloo, on 127.0.0.1) on the same
weights and per-rank batches; their gradients must agree after each of three SGD steps."""

from __future__ import annotations

import socket

import numpy as np
import torch
import torch.distributed as torch_dist

import tensorkit as tk
import tensorkit.distributed as dist
import tensorkit.nn as nn

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
port = tk.zeros(1, dtype=tk.int64)
if RANK == 0:
    with socket.socket() as probe:  # a free port for gloo's rendezvous, shared over MPI
        probe.bind(("127.0.0.1", 0))
        port[0] = probe.getsockname()[1]
dist.broadcast(port, src=0)
torch_dist.init_process_group(
    "gloo", init_method=f"tcp://127.0.0.1:{int(port.item())}", rank=RANK, world_size=WORLD
)
GEN = np.random.default_rng(0)
SIZES = [(16, 6), (16,), (3, 16), (3,)]
WEIGHTS = [GEN.standard_normal(shape).astype(np.float32) * 0.3 for shape in SIZES]
X = GEN.standard_normal((3, WORLD * 4, 6)).astype(np.float32)
Y = GEN.standard_normal((3, WORLD * 4, 3)).astype(np.float32)


def build(lib: object, layers: object) -> object:
    model = layers.Sequential(layers.Linear(6, 16), layers.Tanh(), layers.Linear(16, 3))
    with lib.no_grad():
        for param, value in zip(model.parameters(), WEIGHTS, strict=True):
            param.copy_(lib.tensor(value))
    return model


ours = nn.parallel.DistributedDataParallel(build(tk, nn))
theirs = torch.nn.parallel.DistributedDataParallel(build(torch, torch.nn))
ours_opt = tk.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
mine = slice(4 * RANK, 4 * RANK + 4)
for step in range(3):
    for model, opt, lib in ((ours, ours_opt, tk), (theirs, theirs_opt, torch)):
        opt.zero_grad()
        x, y = lib.tensor(X[step][mine]), lib.tensor(Y[step][mine])
        ((model(x) - y) ** 2).mean().backward()
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    ours_opt.step()
    theirs_opt.step()
torch_dist.destroy_process_group()
dist.destroy_process_group()
print(f"rank {RANK} of {WORLD}: all checks passed", flush=True)
