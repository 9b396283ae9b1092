"""Train a tiny character-level Transformer on tensorkit's own documentation, then sample it.

Run with ``python -m tensorkit.examples.charlm`` (``--help`` lists the options). The text is
the repository's README.md and docs/architecture.md followed by the docstrings of tensorkit's
modules, cut at ``TEXT_LIMIT`` (150,000) characters so the run stays the same size as the docs
grow (the run prints the exact length first); when tensorkit is installed without the
repository, the docstrings alone, as they ship inside the package (about 90,000). The example
shows:

1. turning text into a tensor of character ids, and random (input, target) windows of it;
2. a decoder-only Transformer made of ``tk.nn`` pieces: token and position ``Embedding``,
   pre-norm blocks of causal self-attention (``F.scaled_dot_product_attention`` with
   ``is_causal=True``) and a GELU MLP, ``LayerNorm``, and a ``Linear`` head;
3. training with AdamW, gradient clipping and a cosine learning-rate schedule, printing the
   training and held-out loss next to the unigram entropy (the loss of a model that ignores
   the context, which the Transformer must beat by far);
4. sampling text one character at a time with a temperature, under ``tk.no_grad()``.

By default it trains for about half a minute on two CPU cores.
"""

from __future__ import annotations

import argparse
import ast
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812 (PyTorch's usual name)
from tensorkit.optim.lr_scheduler import CosineAnnealingLR

PACKAGE = Path(tk.__file__).resolve().parent
DOCUMENTS = ("README.md", "docs/architecture.md")  # relative to the repository's root


# ----------------------------------------------------------------------------- text
TEXT_LIMIT = 150_000  # characters of text at most (see the module docstring)


def load_text() -> str:
    """The repository's documentation (when the repository is here) and the docstrings of
    tensorkit's modules (which ship inside the package), at most ``TEXT_LIMIT`` characters."""
    root = PACKAGE.parent
    in_repository = (root / "pyproject.toml").is_file()
    parts = [
        (root / name).read_text(encoding="utf-8")
        for name in DOCUMENTS
        if in_repository and (root / name).is_file()
    ]
    for path in sorted(PACKAGE.rglob("*.py")):
        try:
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError):  # a file in the middle of an edit
            continue
        if docstring:
            parts.append(docstring)
    return "\n\n".join(parts)[:TEXT_LIMIT]


class Vocabulary:
    """Maps each distinct character of a text to an id (0, 1, ...) and back."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.ids = {char: i for i, char in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> tk.Tensor:
        return tk.tensor([self.ids[char] for char in text], dtype=tk.int64)

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[i] for i in ids)


def unigram_entropy(text: str) -> float:
    """The entropy of the character frequencies, in nats: the best loss without context."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log(n / len(text)) for n in counts.values())


def random_windows(
    data: tk.Tensor, batch_size: int, length: int, generator: tk.Generator
) -> tuple[tk.Tensor, tk.Tensor]:
    """``batch_size`` windows of ``length`` characters and the same windows shifted by one."""
    starts = tk.randint(0, len(data) - length, (batch_size, 1), generator=generator)
    positions = starts + tk.arange(length)  # (batch, length) by broadcasting
    return data[positions], data[positions + 1]


# ----------------------------------------------------------------------------- model
class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which each position sees only itself and earlier ones."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)  # queries, keys and values in one matmul
        self.out = nn.Linear(dim, dim)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        # (batch, length, dim) -> (batch, heads, length, dim / heads): heads attend separately
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, length, dim))


class Block(nn.Module):
    """A pre-norm Transformer block: ``x + attention(norm(x))``, then ``x + mlp(norm(x))``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attention = CausalSelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class CharTransformer(nn.Module):
    """Predicts, at every position of a window of character ids, the id of the next one."""

    def __init__(
        self,
        vocab_size: int,
        context: int = 32,
        dim: int = 64,
        layers: int = 2,
        heads: int = 4,
    ) -> None:
        super().__init__()
        self.context = context
        self.token_embedding = nn.Embedding(vocab_size, dim)
        self.position_embedding = nn.Embedding(context, dim)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(layers)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=0.02)  # small, as GPT-2 starts them

    def forward(self, ids: tk.Tensor) -> tk.Tensor:
        """Logits of shape (batch, length, vocab_size) for ids of shape (batch, length)."""
        positions = tk.arange(ids.shape[1])
        x = self.token_embedding(ids) + self.position_embedding(positions)
        return self.head(self.norm(self.blocks(x)))


def sequence_loss(model: CharTransformer, inputs: tk.Tensor, targets: tk.Tensor) -> tk.Tensor:
    """The mean cross entropy of the next-character predictions at every position."""
    logits = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


# ----------------------------------------------------------------------------- sampling
def generate(
    model: CharTransformer,
    vocabulary: Vocabulary,
    prompt: str,
    length: int,
    temperature: float = 0.8,
    generator: tk.Generator | None = None,
) -> str:
    """``length`` characters that follow ``prompt``, drawn one at a time.

    The temperature divides the logits: below 1 it sharpens the distribution (safer, more
    repetitive text), above 1 it flattens it (more surprising text).
    """
    model.eval()
    ids = vocabulary.encode(prompt).unsqueeze(0)  # a batch of one
    with tk.no_grad():
        for _ in range(length):
            logits = model(ids[:, -model.context :])[:, -1]  # the last position's prediction
            probabilities = F.softmax(logits / temperature, dim=-1)
            next_id = tk.multinomial(probabilities, 1, generator=generator)
            ids = tk.cat([ids, next_id], dim=1)
    return vocabulary.decode(ids[0, len(prompt) :].tolist())


# ----------------------------------------------------------------------------- training
@dataclass
class TrainingResult:
    model: CharTransformer
    vocabulary: Vocabulary
    unigram_entropy: float
    losses: list[tuple[int, float, float]]  # (step, training loss, held-out loss)
    sample: str


def estimate_loss(
    model: CharTransformer, data: tk.Tensor, batches: int, batch_size: int, generator: tk.Generator
) -> float:
    """The mean loss over a few random windows of ``data``, without building a graph."""
    model.eval()
    with tk.no_grad():
        losses = [
            sequence_loss(model, *random_windows(data, batch_size, model.context, generator))
            for _ in range(batches)
        ]
    model.train()
    return sum(loss.item() for loss in losses) / batches


def train(args: argparse.Namespace) -> TrainingResult:
    """Train a model as ``args`` say, printing the losses, and sample from it."""
    tk.manual_seed(args.seed)  # weight initialization
    generator = tk.Generator().manual_seed(args.seed)  # the training windows and the sample
    text = load_text()
    vocabulary = Vocabulary(text)
    data = vocabulary.encode(text)
    split = int(0.9 * len(data))  # the last 10% is held out
    train_data, held_out = data[:split], data[split:]
    entropy = unigram_entropy(text)

    model = CharTransformer(len(vocabulary), context=args.context, dim=args.dim)
    optimizer = tk.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.steps, eta_min=args.lr / 10)
    print(
        f"{len(text)} characters, {len(vocabulary)} distinct, "
        f"{sum(p.numel() for p in model.parameters())} parameters; "
        f"unigram entropy {entropy:.3f} nats/char"
    )

    losses: list[tuple[int, float, float]] = []
    start = time.perf_counter()
    recent: list[float] = []  # training losses since the last report
    for step in range(1, args.steps + 1):
        loss = sequence_loss(
            model, *random_windows(train_data, args.batch_size, model.context, generator)
        )
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()

        recent.append(loss.item())
        if step % args.print_every == 0 or step == args.steps:
            train_loss = sum(recent) / len(recent)
            recent.clear()
            held_out_loss = estimate_loss(model, held_out, 8, args.batch_size, generator)
            losses.append((step, train_loss, held_out_loss))
            print(
                f"step {step:5d}  loss {train_loss:.3f}  held-out {held_out_loss:.3f}  "
                f"({time.perf_counter() - start:.1f} s)"
            )

    prompt = "tensorkit "
    sample = generate(model, vocabulary, prompt, args.sample_length, args.temperature, generator)
    print(f"\nsample (temperature {args.temperature}):\n{prompt}{sample}")
    return TrainingResult(model, vocabulary, entropy, losses, sample)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1200, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--context", type=int, default=32, help="characters the model sees")
    parser.add_argument("--dim", type=int, default=64, help="width of the Transformer")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    parser.add_argument("--print-every", type=int, default=100)
    parser.add_argument("--sample-length", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    train(parse_args(argv))


if __name__ == "__main__":
    main()
