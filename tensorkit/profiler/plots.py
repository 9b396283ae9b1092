"""matplotlib figures of a profile (imported lazily; figures are built without pyplot, so
they render with the Agg canvas and leave no global state behind)."""

from __future__ import annotations

from typing import Any

PHASES = ("forward", "backward", "optimizer")
COLORS = {"forward": "tab:blue", "backward": "tab:orange", "optimizer": "tab:green"}


def _figure(rows: int) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, max(2.5, 0.35 * rows + 1.5)), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _title(ax: Any, title: str, prof: Any) -> None:
    """``title`` with the profile's CUDA timing mode under it."""
    ax.set_title(f"{title}\nhost wall time; cuda_timing={prof.cuda_timing!r}", fontsize=10)


def _stacked_bars(totals: dict[str, dict[str, int]], title: str, prof: Any) -> Any:
    """One horizontal bar per key (largest on top), stacked by phase; host times in ms."""
    names = sorted(totals, key=lambda n: sum(totals[n].values()))
    fig = _figure(len(names))
    ax = fig.add_subplot()
    left = [0.0] * len(names)
    for phase in PHASES:
        widths = [totals[n].get(phase, 0) / 1e6 for n in names]
        if any(widths):
            ax.barh(names, widths, left=left, color=COLORS[phase], label=phase)
            left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("total time (ms), host wall time")
    _title(ax, title, prof)
    ax.legend(loc="lower right")
    return fig


def plot_op_times(prof: Any, top: int = 15) -> Any:
    totals: dict[str, dict[str, int]] = {}
    for r in prof.records:
        by_phase = totals.setdefault(r.name, {})
        by_phase[r.phase] = by_phase.get(r.phase, 0) + r.duration_ns
    kept = sorted(totals, key=lambda n: sum(totals[n].values()), reverse=True)[:top]
    return _stacked_bars({n: totals[n] for n in kept}, f"Top {len(kept)} ops by total time", prof)


def plot_module_times(prof: Any) -> Any:
    totals: dict[str, dict[str, int]] = {}
    records = prof.records
    for r in records:
        module = r.module_path
        if r.forward_index is not None:
            module = records[r.forward_index].module_path
        by_phase = totals.setdefault(module or "(no module)", {})
        by_phase[r.phase] = by_phase.get(r.phase, 0) + r.duration_ns
    return _stacked_bars(totals, "Time per module", prof)


def plot_memory_timeline(prof: Any) -> Any:
    """Per device, the bytes alive after each op on it (steps) and, on a CUDA device, what
    its caching allocator reserves (dashed; the CPU has none); the start of backward and
    each device's peak marked."""
    records = [r for r in prof.records if r.live_bytes is not None]
    if not records:
        raise RuntimeError("no memory was recorded: use profile(record_memory=True)")
    fig = _figure(6)
    ax = fig.add_subplot()
    devices = sorted({r.device for r in records}, key=lambda d: (d != "cpu", d))
    for number, device in enumerate(devices):
        on_device = [r for r in records if r.device == device]
        index = [r.index for r in on_device]
        live = [r.live_bytes for r in on_device]
        color = f"C{number}"
        ax.plot(index, live, drawstyle="steps-post", color=color, label=f"allocated ({device})")
        if device != "cpu":
            reserved = [r.reserved_bytes for r in on_device]
            ax.plot(
                index,
                reserved,
                drawstyle="steps-post",
                color=color,
                linestyle="--",
                label=f"reserved ({device})",
            )
        peak_at = max(range(len(live)), key=live.__getitem__)
        ax.annotate(
            f"peak {live[peak_at]:,} B" + ("" if len(devices) == 1 else f" ({device})"),
            xy=(index[peak_at], live[peak_at]),
            xytext=(0, 10),
            textcoords="offset points",
            ha="center",
            color=color,
        )
    backward = next((r.index for r in records if r.phase == "backward"), None)
    if backward is not None:
        ax.axvline(backward, color="tab:red", linestyle=":", label="backward starts")
    ax.margins(y=0.15)
    ax.set_xlabel("op index")
    ax.set_ylabel("bytes (CPU: tensorkit.memory's count; CUDA: CuPy's pool)")
    _title(ax, "Memory timeline", prof)
    ax.legend(loc="upper left")
    return fig
