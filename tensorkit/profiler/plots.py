"""matplotlib figures of a profile (imported lazily; figures are built without pyplot, so
they render with the Agg canvas and leave no global state behind).

Numbers read as in the notebook views (``tensorkit._numbers``: 3 significant digits,
ns/µs/ms/s, B/KiB/MiB/GiB). Legends sit outside the axes, so they never cover a bar, a line or
the peak's label; the layout is constrained, so every label lies inside the figure.
"""

from __future__ import annotations

from typing import Any

from .._numbers import bytes_text, bytes_unit, number_text, time_unit

PHASES = ("forward", "backward", "optimizer")
COLORS = {"forward": "tab:blue", "backward": "tab:orange", "optimizer": "tab:green"}


def _figure(rows: int) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, max(2.5, 0.35 * rows + 1.5)), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _title(ax: Any, title: str, prof: Any) -> None:
    """``title`` with how the times were taken under it: host wall time, and the CUDA timing
    mode only when some op ran on a CUDA device."""
    timed_on_gpu = any(r.gpu_time_ns is not None for r in prof.records)
    how = "host wall time" + (f"; cuda_timing={prof.cuda_timing!r}" if timed_on_gpu else "")
    ax.set_title(f"{title}\n{how}", fontsize=10)


def _legend_outside(ax: Any) -> None:
    """The axes' legend to the right of the plot, top-aligned (kept inside the figure by the
    constrained layout)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=9)


def _stacked_bars(totals: dict[str, dict[str, int]], title: str, prof: Any) -> Any:
    """One horizontal bar per key (largest on top), stacked by phase; host times in the unit
    of the largest total."""
    names = sorted(totals, key=lambda n: sum(totals[n].values()))
    factor, unit = time_unit(max((sum(t.values()) for t in totals.values()), default=0))
    fig = _figure(len(names))
    ax = fig.add_subplot()
    left = [0.0] * len(names)
    for phase in PHASES:
        widths = [totals[n].get(phase, 0) / factor for n in names]
        if any(widths):
            ax.barh(names, widths, left=left, color=COLORS[phase], label=phase)
            left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel(f"total time ({unit})")
    _title(ax, title, prof)
    _legend_outside(ax)
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
    each device's peak marked. Bytes ticked in the binary unit of the largest value."""
    records = [r for r in prof.records if r.live_bytes is not None]
    if not records:
        raise RuntimeError("no memory was recorded: use profile(record_memory=True)")
    fig = _figure(6)
    ax = fig.add_subplot()
    devices = sorted({r.device for r in records}, key=lambda d: (d != "cpu", d))
    highest = max(max(r.live_bytes, r.reserved_bytes or 0) for r in records)
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
        _mark_peak(ax, index, live, color, device if len(devices) > 1 else "")
    backward = next((r.index for r in records if r.phase == "backward"), None)
    if backward is not None:
        ax.axvline(backward, color="tab:red", linestyle=":", label="backward starts")
    ax.set_ylim(0, highest * 1.25 or 1)  # headroom above the peak for its label
    _bytes_axis(ax.yaxis, highest)
    ax.set_xlabel("op index")
    _title(ax, f"Memory timeline ({_memory_source(devices)})", prof)
    _legend_outside(ax)
    return fig


def _bytes_axis(axis: Any, highest: float) -> None:
    """Ticks at round numbers of the binary unit of ``highest`` ("0", "100", "200" in KiB),
    the unit in the axis label; the data stay in bytes."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    factor, unit = bytes_unit(highest)
    ticks = MaxNLocator(nbins=5, steps=[1, 2, 5, 10]).tick_values(0, max(highest, 1) / factor)
    axis.set_major_locator(MultipleLocator((ticks[1] - ticks[0]) * factor))
    axis.set_major_formatter(FuncFormatter(lambda value, _: number_text(value / factor)))
    axis.set_label_text(f"memory ({unit})")


def _mark_peak(ax: Any, index: list, live: list, color: str, device: str) -> None:
    """A dot at the device's peak and its label above it, turned inwards near the edges."""
    at = max(range(len(live)), key=live.__getitem__)
    x, y = index[at], live[at]
    ax.scatter([x], [y], s=16, color=color, zorder=3)
    span = (index[0], index[-1])
    where = (x - span[0]) / max(1, span[1] - span[0])
    align = "left" if where < 0.2 else "right" if where > 0.8 else "center"
    ax.annotate(
        f"peak {bytes_text(live[at])}" + (f" ({device})" if device else ""),
        xy=(x, y),
        xytext=(0, 6),
        textcoords="offset points",
        ha=align,
        va="bottom",
        color=color,
        annotation_clip=False,
    )


def _memory_source(devices: list[str]) -> str:
    """Where the bytes come from, for the title."""
    sources = []
    if "cpu" in devices:
        sources.append("CPU: tensorkit.memory's count")
    if any(d != "cpu" for d in devices):
        sources.append("CUDA: CuPy's pool")
    return "; ".join(sources)
