"""Write the workbench notebooks in this folder (without outputs).

Run ``python notebooks/make_notebooks.py`` after editing a notebook's cells here; the .ipynb
files are the committed deliverable, this script is how they are kept tidy and output-free.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str):
    return new_code_cell(text.strip("\n"))


TOUR = [
    md("""
# A tour of tensorkit

Tensors, autograd, and the recorded graph: we record a tiny computation on a `Tape`, draw it,
and then walk its backward pass one node at a time.
"""),
    code("""
import tensorkit as tk
import tensorkit.notebook as tkn

_ = tk.manual_seed(0)
"""),
    md("""
## Tensors

Same names and semantics as PyTorch: creation functions, dtypes, broadcasting, matmul.
"""),
    code("""
a = tk.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
b = tk.arange(3, dtype=tk.float32)
print(a.shape, a.dtype)
print(a + b)  # broadcasting
print(a @ a.T)  # matrix product
print(a.sum(dim=0), a.mean())
"""),
    md("""
## Autograd

Tensors created with `requires_grad=True` are leaves; ops on them build a backward graph, and
`backward()` fills each leaf's `.grad`.
"""),
    code("""
x = tk.tensor([[1.0, 2.0, 3.0]])
w = tk.randn(3, 2, requires_grad=True)
loss = (x @ w).tanh().sum()
loss.backward()
print("loss:", loss.item())
print("dloss/dw:", w.grad)
print("grad_fn:", loss.grad_fn.name())
"""),
    md("""
## The graph

A `Tape` records every op with shapes and call sites. `to_text()` is the plain rendering;
`tk.notebook.show(tape)` is the interactive graph widget (JupyterLab, Notebook 7, VS Code).
"""),
    code("""
w.grad = None
with tk.autograd.Tape() as tape:
    loss = (x @ w).tanh().sum()
print(tape.to_text())
"""),
    code("""
tkn.show(tape)
"""),
    md("""
## Stepping backward

`BackwardStepper` drives the engine one node at a time. `state()` (also returned by `next()`)
is plain data: the node that just ran, its gradient rule, the gradients that flowed in and out,
and each leaf's `.grad` so far.
"""),
    code("""
stepper = tkn.BackwardStepper(loss)
print("nodes to visit:", stepper.total_steps)
for _ in range(3):
    state = stepper.next()
    step = state["step"]
    print(f"step {state['position']}: {step['node']['name']} (rule for {step['rule']['op']})")
    for out in step["grads_out"]:
        grad = out["grad"]
        print("    grad to", out["to"], "shape", grad["shape"] if grad else None)
"""),
    code("""
state = stepper.run_to_end()
print("done:", state["done"])
for leaf in state["leaf_grads"]:
    print(leaf["id"], leaf["shape"], leaf["grad"]["values"])
"""),
    md("""
The same walk as a widget: Next, Previous, Reset, Run to end, Run to a clicked node,
breakpoints and finite-difference checks, each with a keyboard shortcut (hover a button):
"""),
    code("""
w.grad = None
loss = (x @ w).tanh().sum()
tkn.step_backward(loss)
"""),
]


COURSE = [
    md("""
# Backpropagation through a tiny MLP, by hand

**Goal of this unit:** compute every gradient of a two-layer network yourself, with plain tensor
ops, then confirm the result with `backward()` and watch the engine do the same work with the
backward stepper.

The network: `h = tanh(x @ w1 + b1)`, `y = h @ w2 + b2`, loss `L = mean((y - t)**2)`.

## 0. Warm-up: three numbers

Before matrices, the chain rule on scalars. For `L = (a * b) + c`, each edge of the stepper's
graph is labelled with its chain-rule product (local derivative times upstream gradient), the way
you would write it on paper. Press **Next** (or `n`) and watch the labels appear.
"""),
    code("""
import tensorkit as tk
import tensorkit.notebook as tkn

a = tk.tensor(2.0, requires_grad=True)
b = tk.tensor(-3.0, requires_grad=True)
c = tk.tensor(10.0, requires_grad=True)
# expect dL/da = b = -3, dL/db = a = 2, dL/dc = 1
tkn.step_backward(a * b + c)
"""),
    md("""
## 1. The MLP's parameters
"""),
    code("""
_ = tk.manual_seed(0)
N, D, H = 4, 3, 5  # batch, inputs, hidden units
x = tk.randn(N, D, dtype=tk.float64)
t = tk.randn(N, 1, dtype=tk.float64)
w1 = tk.randn(D, H, dtype=tk.float64, requires_grad=True)
b1 = tk.zeros(H, dtype=tk.float64, requires_grad=True)
w2 = tk.randn(H, 1, dtype=tk.float64, requires_grad=True)
b2 = tk.zeros(1, dtype=tk.float64, requires_grad=True)
"""),
    md("""
## 2. Forward pass, keeping the intermediates
"""),
    code("""
with tk.no_grad():
    z1 = x @ w1 + b1  # (N, H) pre-activation
    h = z1.tanh()  # (N, H)
    y = h @ w2 + b2  # (N, 1)
    L = ((y - t) ** 2).mean()
print("loss:", L.item())
"""),
    md("""
## 3. Backward pass by hand

Walk the chain rule from the loss back to each parameter:

- `dL/dy = 2 (y - t) / N`
- `dL/dw2 = h^T dL/dy`, `dL/db2 = sum over the batch of dL/dy`
- `dL/dh = dL/dy w2^T`
- `dL/dz1 = dL/dh * (1 - h^2)` (the derivative of tanh)
- `dL/dw1 = x^T dL/dz1`, `dL/db1 = sum over the batch of dL/dz1`
"""),
    code("""
with tk.no_grad():
    dy = 2 * (y - t) / N
    dw2 = h.T @ dy
    db2 = dy.sum(dim=0)
    dh = dy @ w2.T
    dz1 = dh * (1 - h**2)
    dw1 = x.T @ dz1
    db1 = dz1.sum(dim=0)
print("dw1:", dw1.shape, "db1:", db1.shape, "dw2:", dw2.shape, "db2:", db2.shape)
"""),
    md("""
## 4. Check against `backward()`
"""),
    code("""
def forward():
    return (((x @ w1 + b1).tanh() @ w2 + b2 - t) ** 2).mean()


loss = forward()
loss.backward()
for name, mine, param in [("w1", dw1, w1), ("b1", db1, b1), ("w2", dw2, w2), ("b2", db2, b2)]:
    assert tk.allclose(mine, param.grad), name
    print(f"{name}: matches backward()")
"""),
    md("""
## 5. Watch the engine do it

The stepper visits the same nodes we differentiated by hand, last op first. Compare the
gradient flowing out of the `tanh` node with our `dz1`.
"""),
    code("""
for p in (w1, b1, w2, b2):
    p.grad = None
loss = forward()
stepper = tkn.BackwardStepper(loss)
while True:
    state = stepper.next()
    if stepper.done:
        break
    print(state["position"], state["step"]["node"]["name"])
"""),
    code("""
stepper.reset()
state = stepper.run_to(lambda step: step.name.startswith("Tanh"))
tanh_out = stepper.current_step.grads_out[0]
print("node:", state["step"]["node"]["name"])
print("engine's dL/dz1 equals ours:", bool(tk.allclose(tanh_out, dz1)))
_ = stepper.run_to_end()
"""),
    code("""
tkn.step_backward(forward())
"""),
    md("""
## Exercises

Each exercise has a **solution cell** (fill in your own version if you like) and a **check
cell** that asserts your answer. The provided solutions pass the checks.

### Exercise 1: ReLU instead of tanh

Replace `tanh` by `relu` in the hidden layer and compute `dL/dw1` by hand into `ex1_dw1`.
Hint: the derivative of `relu(z)` is `1` where `z > 0` and `0` elsewhere.
"""),
    code("""
# SOLUTION (exercise 1)
with tk.no_grad():
    z1 = x @ w1 + b1
    h_relu = z1.relu()
    y_relu = h_relu @ w2 + b2
    dy_relu = 2 * (y_relu - t) / N
    dz1_relu = (dy_relu @ w2.T) * (z1 > 0).to(tk.float64)
    ex1_dw1 = x.T @ dz1_relu
"""),
    code("""
# CHECK (exercise 1)
w1.grad = None
(((x @ w1 + b1).relu() @ w2 + b2 - t) ** 2).mean().backward()
assert tk.allclose(ex1_dw1, w1.grad), "ex1_dw1 does not match backward()"
print("exercise 1 passed")
"""),
    md("""
### Exercise 2: the gradient with respect to the input

Saliency maps need `dL/dx`. Compute it by hand (for the tanh network) into `ex2_dx`.
"""),
    code("""
# SOLUTION (exercise 2)
with tk.no_grad():
    ex2_dx = dz1 @ w1.T
"""),
    code("""
# CHECK (exercise 2)
x_leaf = x.detach().requires_grad_(True)
(((x_leaf @ w1 + b1).tanh() @ w2 + b2 - t) ** 2).mean().backward()
assert ex2_dx.shape == x.shape, "dL/dx has the shape of x"
assert tk.allclose(ex2_dx, x_leaf.grad), "ex2_dx does not match backward()"
print("exercise 2 passed")
"""),
    md("""
### Exercise 3: one step of gradient descent

Using your hand-computed gradients, take one SGD step with learning rate `0.1` on all four
parameters (into `ex3_params`, a list of new tensors in the order w1, b1, w2, b2). The loss must
go down.
"""),
    code("""
# SOLUTION (exercise 3)
lr = 0.1
with tk.no_grad():
    ex3_params = [p - lr * g for p, g in [(w1, dw1), (b1, db1), (w2, dw2), (b2, db2)]]
"""),
    code("""
# CHECK (exercise 3)
with tk.no_grad():
    nw1, nb1, nw2, nb2 = ex3_params
    before = forward().item()
    after = ((((x @ nw1 + nb1).tanh() @ nw2 + nb2) - t) ** 2).mean().item()
assert after < before, f"the loss went up: {before} -> {after}"
print(f"exercise 3 passed: loss {before:.4f} -> {after:.4f}")
"""),
]


DEBUG = [
    md("""
# Debugging a wrong gradient

The small model below trains, but badly: one of its hand-written gradient rules is wrong. We
let the workbench find which one, with finite-difference checks of every node, look at that
node with the stepper, and then you fix it. Try not to hunt for the bug by reading the code:
the point is to let the tools point at it.
"""),
    code("""
import tensorkit as tk
import tensorkit.notebook as tkn

%load_ext tensorkit.notebook
_ = tk.manual_seed(0)
"""),
    md("""
## The model

Two custom activations, each a `tk.autograd.Function` with its own `backward`, in a two-layer
model. Each backward's docstring says what it means to compute: the stepper shows it beside
the node.
"""),
    code("""
class LogCosh(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.cosh().log()

    @staticmethod
    def backward(ctx, grad_output):
        r\"\"\"``grad_output * tanh(x)``: the derivative of :math:`\\log\\cosh x`.\"\"\"
        (x,) = ctx.saved_tensors
        return grad_output * x.tanh()


class Softplus(tk.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (1 + x.exp()).log()

    @staticmethod
    def backward(ctx, grad_output):
        r\"\"\"``grad_output * sigmoid(x)``: the derivative of :math:`\\log(1 + e^x)`.\"\"\"
        (x,) = ctx.saved_tensors
        return grad_output / (1 + x.exp())


def model_loss(x, w1, w2):
    hidden = LogCosh.apply(x @ w1)
    return (Softplus.apply(hidden @ w2) * 0.5).sum()


x = tk.randn(3, 4, dtype=tk.float64)
w1 = tk.randn(4, 3, dtype=tk.float64, requires_grad=True)
w2 = tk.randn(3, 2, dtype=tk.float64, requires_grad=True)
print("loss:", model_loss(x, w1, w2).item())
"""),
    md("""
## Find it in the widget

Given the loss function and its inputs, the stepper records each op's arguments, so every
node can be compared with central finite differences of its forward. Press **Check whole
graph** (`g`): each node is coloured by its result (green agrees, red disagrees) and listed
in backward order, from the loss back to the leaves. Click a row (or a node) to see the
gradient its rule produced beside the finite-difference one, and a map of their difference.
**Next** (`n`) and **Run to here** (`h`) walk the backward pass; the current node is drawn
in cyan.
"""),
    code("""
stepper_widget = tkn.step_backward(model_loss, inputs=(x, w1, w2))
stepper_widget
"""),
    md("""
## The same check in code

`check_graph` runs the backward pass node by node, checks each node's rule and reports every
result and the first node that disagrees.
"""),
    code("""
report = tkn.check_graph(model_loss, (x, w1, w2))
for result in report["nodes"]:
    verdict = "agrees" if result["ok"] else "DISAGREES"
    print(f"step {result['step']}: {result['id']} {result['node']} {verdict}")
failure = report["first_failure"]
print(f"first failing node: {failure['node']} (id {failure['id']}, step {failure['step']})")
print("max abs error:", round(failure["max_abs_error"], 4))
"""),
    md("""
The `%gradcheck` magic checks one Function on its own (it prints the full Jacobians when they
differ). Run it on both activations: only the one the check named fails.
"""),
    code("""
x_check = tk.randn(5, dtype=tk.float64, requires_grad=True)
for activation in (LogCosh, Softplus):
    print(activation.__name__)
    passed = %gradcheck (activation.apply, (x_check,))
"""),
    md("""
## Look at the failing node with the stepper

Run a stepper to the failing node and compare, element by element, the gradient its rule
produced with the finite-difference one (what the check panel shows side by side).
"""),
    code("""
stepper = tkn.BackwardStepper.from_function(model_loss, (x, w1, w2))
state = stepper.run_to(failure["id"])
print("stopped at:", state["step"]["node"]["name"], "| rule:", state["step"]["rule"]["doc"])
compared = tkn.check_node(stepper)["inputs"][0]
produced = tk.tensor(compared["produced"]["values"])
expected = tk.tensor(compared["expected"]["values"])
print("produced by the rule:", produced)
print("finite differences:  ", expected)
print("ratio:", produced / expected)
"""),
    md("""
## Exercise: fix it

You know which Function's backward is wrong, and what it should compute. In the cell below,
set `BUGGY` to that Function (the class itself) and write the correct `fixed_backward`, then
run the cell: it installs your backward and checks the whole graph again. Until you do, the
cell leaves the bug in place, so running the whole notebook always finds it. Re-run the
widget cell afterwards and press **Check whole graph** again: every node should turn green.

<details>
<summary>Hint</summary>

The ratio printed above is `exp` of something: of what, and with which sign? Where does the
rule's formula differ from the docstring's?
</details>

<details>
<summary>Solution</summary>

```python
BUGGY = Softplus


def fixed_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * x.sigmoid()  # d/dx log(1 + e^x) = sigmoid(x)
```
</details>
"""),
    code("""
BUGGY = None  # the Function whose backward is wrong


def fixed_backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    raise NotImplementedError(f"return the gradient with respect to x, shape {tuple(x.shape)}")


if BUGGY is None:
    print("bug still in place: set BUGGY and write fixed_backward, then run this cell")
else:
    BUGGY.backward = staticmethod(fixed_backward)  # as if you had edited the class above
    fixed = tkn.check_graph(model_loss, (x, w1, w2))
    print("ok after the fix:", fixed["ok"], "| nodes checked:", fixed["checked"])
    passed = %gradcheck (BUGGY.apply, (x_check,))
"""),
]


PROFILE = [
    md("""
# Profiling a small CNN

`tk.profiler.profile` records every op of a forward and backward pass: time per op, input
shapes, and (with `record_memory=True`) tensorkit's own count of live op-output bytes. On a GPU
each op also gets its GPU time from CUDA events, read after the run so the GPU is never made
to wait.

The notebook picks the GPU when one is available, else the CPU; the last section compares the
two where both exist.
"""),
    code("""
%matplotlib inline
import tensorkit as tk
from tensorkit import nn

_ = tk.manual_seed(0)
device = "cuda" if tk.cuda.is_available() else "cpu"
print("device:", device)
"""),
    code("""
def make_model(device):
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    ).to(device)


model = make_model(device)
images = tk.randn(16, 1, 16, 16, device=device)
labels = tk.randint(0, 10, (16,), device=device)

# one warm-up pass so first-call costs are not profiled
nn.functional.cross_entropy(model(images), labels).backward()
model.zero_grad()
"""),
    md("""
By default the backward pass is recorded one autograd node at a time (names such as
`ReluBackward0` or `MmBackward0`), as PyTorch's profiler does; `backward_ops=True` records
every op the gradient rules run instead.
"""),
    code("""
with tk.profiler.profile(record_memory=True, record_shapes=True, with_stack=True) as prof:
    with tk.profiler.record_function("forward"):
        loss = nn.functional.cross_entropy(model(images), labels)
    with tk.profiler.record_function("backward"):
        loss.backward()
print("loss:", loss.item(), "| ops recorded:", len(prof.records))
"""),
    md("""
## Per-op summary

`conv2d`, `max_pool2d`, `linear` and `cross_entropy` are functions tensorkit builds from
ops (`conv2d` runs `im2col`, `matmul` and `conv_bias`; `linear` runs `addmm`, as PyTorch's
does): each has a row of its own,
as PyTorch shows `aten::conv2d`, whose "CPU total" covers its ops and whose "Self CPU" is
only its own Python work around them.
"""),
    code("""
print(prof.key_averages().table(row_limit=12))
"""),
    md("""
Grouping by input shape separates, say, the two convolutions:
"""),
    code("""
print(prof.key_averages(group_by_input_shape=True).table(row_limit=8))
"""),
    md("""
## Forward vs backward time
"""),
    code("""
totals = {}
for record in prof.records:
    totals[record.phase] = totals.get(record.phase, 0) + record.duration_ns
for phase, ns in totals.items():
    print(f"{phase:>8}: {ns / 1e6:8.3f} ms")
"""),
    code("""
prof.plot_op_times(top=10)
"""),
    code("""
prof.plot_module_times()
"""),
    md("""
## Memory timeline

Live bytes of op outputs over the op sequence: activations pile up during the forward pass and
are released as the backward pass frees saved tensors.
"""),
    code("""
peak = max(r.live_bytes for r in prof.records if r.live_bytes is not None)
print(f"peak live bytes: {peak:,}")
prof.plot_memory_timeline()
"""),
    md("""
## The profile view, linked to the graph

Record a `Tape` inside the same profile and `prof.show(tape=tape)` puts the sortable op
table, the time by module and by function and the memory timeline under the tape's graph:
click a row to find its op in the graph, or a node to find its rows. (A Tape records every
op, so the backward here is op by op.) Colour the graph by forward time, backward time or
bytes from its menu.
"""),
    code("""
with (
    tk.profiler.profile(record_memory=True, record_shapes=True) as prof2,
    tk.autograd.Tape() as tape,
):
    nn.functional.cross_entropy(model(images), labels).backward()
prof2.show(tape=tape)
"""),
    md("""
## Data-parallel: one track per rank

Under `tk.distributed` each rank profiles itself and exports its own trace; collectives are
profiled ops (from their start to the moment the rank saw them complete), and the time a rank
blocked waiting for them is marked too. `tkn.show_ranks` reads the ranks' traces (or
`tk.profiler.merge_traces`'s document) and draws one track per rank, its compute coloured by
phase above its collectives, on one clock, with the share of communication that overlapped
the rank's backward compute. Here two ranks on this machine train an MLP through
`DistributedDataParallel` for three steps, with small buckets so that all-reduces start
during backward. MPI moves a nonblocking collective on inside MPI calls, so read the hidden
share beside the time each rank waited.
"""),
    code('''
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import tensorkit.notebook as tkn

RANK_PROGRAM = """
import sys

import tensorkit as tk
import tensorkit.distributed as dist
from tensorkit import nn

dist.init_process_group("mpi")
_ = tk.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
)
model = nn.parallel.DistributedDataParallel(mlp, bucket_cap_mb=0.5)
optimizer = tk.optim.SGD(model.parameters(), lr=0.01)
x, y = tk.randn(32, 256), tk.randint(0, 10, (32,))
with tk.profiler.profile() as prof:
    for _ in range(3):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
prof.export_chrome_trace(f"{sys.argv[1]}/rank_{dist.get_rank()}.json")
"""
folder = Path(tempfile.mkdtemp())
(folder / "ddp_steps.py").write_text(RANK_PROGRAM)
traces = []
if importlib.util.find_spec("mpi4py") is None:
    print("tk.distributed needs mpi4py and MPICH: pip install 'tensorkit[distributed]'")
else:
    launch = [sys.executable, "-m", "tensorkit.distributed.run", "--nproc-per-node", "2"]
    subprocess.run([*launch, str(folder / "ddp_steps.py"), str(folder)], check=True, timeout=120)
    traces = sorted(folder.glob("rank_*.json"))
    for r in tkn.build_ranks(traces)["ranks"]:
        print(
            f"rank {r['rank']}: compute {r['compute_ns'] / 1e6:.2f} ms, communication "
            f"{r['comm_ns'] / 1e6:.2f} ms (waited {r['wait_ns'] / 1e6:.2f} ms), "
            f"{r['hidden_share']:.0%} hidden under backward"
        )
'''),
    code("""
tkn.show_ranks(traces) if traces else None
"""),
    md("""
## CPU vs GPU

Where a GPU exists, the same training step on both devices (medians of a few steps; the GPU
is synchronized around each step).
"""),
    code("""
from tensorkit.utils.benchmark import Timer


def step_time(device):
    _ = tk.manual_seed(0)
    net = make_model(device)
    x = tk.randn(256, 1, 16, 16, device=device)
    y = tk.randint(0, 10, (256,), device=device)

    def step():
        net.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()

    return Timer(stmt="step()", globals={"step": step}).blocked_autorange(min_run_time=0.5).median


if tk.cuda.is_available():
    cpu, gpu = step_time("cpu"), step_time("cuda")
    print(f"CPU {cpu * 1e3:.2f} ms, GPU {gpu * 1e3:.2f} ms per step ({cpu / gpu:.1f}x)")
else:
    print(f"CPU {step_time('cpu') * 1e3:.2f} ms per step (no GPU here to compare with)")
"""),
]


JIT = [
    md("""
# Compiling a model with tk.jit

`tk.compile` records a call into a graph of ops, optimizes it and replays it without
dispatching op by op; `tk.jit.explain` says what it made of a call and why. Here we draw a
small MLP's graph before and after compilation, look at what fused, break the graph on
purpose, and measure the speed-up.
"""),
    code("""
import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812 (PyTorch users write F)
import tensorkit.notebook as tkn

_ = tk.manual_seed(0)
"""),
    md("""
## Before: the eager graph

A `Tape` records every op the forward and backward run, one by one, grouped by module.
"""),
    code("""
model = nn.Sequential(
    nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10)
)
x = tk.randn(64, 64)
y = tk.randint(0, 10, (64,))
with tk.autograd.Tape() as tape:
    F.cross_entropy(model(x), y).backward()
print(f"eager: {len(tape.entries)} ops, each dispatched on its own")
tkn.show(tape)
"""),
    md("""
## After: the compiled graph

`tk.compile(model)` records the first two calls (they run eagerly); once the two recordings
agree, later calls with inputs of the same kind (the *guards*) replay the compiled graph. A
training call's graph carries its backward too, captured ahead of time: the band below.
"""),
    code("""
compiled = tk.compile(model)
for _ in range(3):
    model.zero_grad()
    F.cross_entropy(compiled(x), y).backward()
print(tk.jit.explain(compiled, x))
"""),
    md("""
The same graph widget draws the compiled graph: placeholders (the input, the parameters, the
gradient flowing in) as tensors, ops grouped by module, the guards beside it. A fused group
is one box: click it to open it into its ops and to see the generated kernel's source in the
panel.
"""),
    code("""
compiled.show()
"""),
    md("""
## What fused

The passes (dead-code elimination, common subexpressions, constant folding, elementwise
fusion) rewrite the recorded graph; a fused node runs a chain of elementwise ops as one
generated kernel.
"""),
    code("""
traced = tk.jit.trace(model, (x,))
graph = traced.graph
fused = [n for n in [*graph.nodes, *graph.backward] if n.kind == "fused"]
print(f"{len(graph.nodes)} forward and {len(graph.backward)} backward nodes")
print(f"fused groups: {len(fused)}")
for node in fused:
    print(" ", " -> ".join(m.op for m in node.members))
if fused:
    print(fused[0].source)
"""),
    md("""
## What the layout pass changed: convolutions

Eager runs a convolution as `im2col` (every window copied out, laid out by channel), one
`matmul` and `conv_bias` (the bias added while copying the result into (N, C, H, W)). A
compiled graph knows where each array goes next, so its channels-last pass computes the
convolution with one row of windows per output position instead (`channels_last=True`): the
product by the weight's rows is then the (N, H, W, C) memory of the result, the bias a
broadcast add fused with the ReLU, and the next convolution reads its windows from that
memory in contiguous runs. The ops of one convolution layer, eager and compiled:
"""),
    code("""
block = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.ReLU())
images = tk.randn(4, 3, 16, 16)
with tk.autograd.Tape() as block_tape:
    block(images)
print("eager:   ", " -> ".join(entry.name for entry in block_tape.entries))
block_graph = tk.jit.trace(block, (images,)).graph
names = [n.op if n.kind == "op" else "+".join(m.op for m in n.members) for n in block_graph.nodes]
print("compiled:", " -> ".join(names))
for node in block_graph.nodes:
    if node.op == "im2col":
        print(f"im2col channels_last={node.attrs['channels_last']}: {node.outputs[0].shape}")
"""),
    md("""
The first layer's ReLU output stays in (N, H, W, C) memory for the second layer's windows;
the second's, the call's result, comes back in eager's (N, C, H, W) order. On the CNN of
`bench/bench_jit.py` this makes the compiled training step about 1.35x faster than eager
(docs/benchmarks.md).

## What broke the graph, and why

A replay computes no Python, so a call whose Python reads a tensor's value (`item()`,
`bool(t)`, `float(t)`) cannot be one graph: the value could steer it differently next time.
Where the value can be compared, the graph *guards* on it instead: it keeps the read as a guard
node holding the value the recording saw, and `tk.compile` compiles one path per value (two
graphs here, one per branch), as torch.compile specializes on such values. `tk.jit.explain`
lists each break with its call site and what a compiled call does there.
"""),
    code("""
class Clipped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        h = self.fc(x).tanh()
        if h.abs().max() > 0.9:  # a Python decision on a tensor's value: bool(t)
            h = h * 0.5
        return self.out(h)


clipped = Clipped()
explained = tk.jit.explain(clipped, x)
print(explained)
"""),
    code("""
tkn.show_compiled(explained, module=clipped)
"""),
    md("""
The guard node (the outlined box) reads the maximum and holds its value. Calls that take the
branch replay the compiled path; a call on the other side of 0.9 fails the guard before the
replay has any effect, is recorded, and compiles the other path; after that, both replay.
"""),
    code("""
compiled_clipped = tk.compile(clipped)
small = x * 0.001  # tanh stays below 0.9: the other branch
for inputs in [x, x, small, small, x, small]:
    compiled_clipped(inputs)
(entry,) = compiled_clipped.entries.values()
print(f"paths compiled: {[path.values for path in entry.paths]}")
print(f"recordings: {entry.recordings} (two per path; the last two calls replayed)")
"""),
    md("""
`if h.abs().max().item() > 0.9:` would guard on the float itself, a path per maximum. A
value that changes on every call (a loss printed with `item()`) would need a path per call:
past `tk.jit.config.cache_size_limit` paths the call warns and runs eagerly. The fix
is to keep the decision in tensor ops: `tk.where` picks the scale without reading it into
Python, and the call is one graph again.
"""),
    code("""
class Scaled(Clipped):
    def forward(self, x):
        h = self.fc(x).tanh()
        h = h * tk.where(h.abs().max() > 0.9, 0.5, 1.0)
        return self.out(h)


print(tk.jit.explain(Scaled(), x))
"""),
    md("""
## The speed-up

One training step (forward and backward) of the MLP, eager and compiled: medians of repeated
runs with `tk.utils.benchmark.Timer`. The compiled step skips the per-op dispatch, so small
models gain the most; the ratio depends on the machine.
"""),
    code("""
from tensorkit.utils.benchmark import Timer


def step_time(forward):
    def step():
        model.zero_grad()
        F.cross_entropy(forward(x), y).backward()

    return Timer(stmt="step()", globals={"step": step}).blocked_autorange(min_run_time=0.5).median


eager, fast = step_time(model), step_time(compiled)
print(f"eager median {eager * 1e3:.3f} ms, compiled median {fast * 1e3:.3f} ms per step")
print(f"speed-up: {eager / fast:.2f}x")
"""),
]


NOTEBOOKS = {
    "01_tour.ipynb": TOUR,
    "02_course_backprop_mlp.ipynb": COURSE,
    "03_debugging_wrong_gradient.ipynb": DEBUG,
    "04_profiling_cnn.ipynb": PROFILE,
    "05_compiling_with_jit.ipynb": JIT,
}


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(cells=cells)
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.metadata["language_info"] = {"name": "python"}
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{name.split('_')[0]}-{i:02d}"
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print("wrote", name)


if __name__ == "__main__":
    main()
