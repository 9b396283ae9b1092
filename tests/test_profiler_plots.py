"""The profiler's matplotlib figures, rendered with Agg: every text (title, axis labels, tick
labels, the peak's label, legend entries) lies inside the figure, the peak's label is not
under the legend, units follow the workbench's number format, and a CPU-only run says nothing
about CUDA."""

from __future__ import annotations

from typing import Any

import pytest

import tensorkit as tk
import tensorkit.profiler as profiler
from tensorkit._numbers import bytes_text, bytes_unit, number_text, time_unit

pytest.importorskip("matplotlib")

TOLERANCE_PX = 0.5  # text extents are measured in float pixels


@pytest.fixture(scope="module")
def prof() -> profiler.profile:
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(64, 256), tk.nn.ReLU(), tk.nn.Linear(256, 8))
    x, target = tk.randn(128, 64), tk.randn(128, 8)
    with profiler.profile(record_memory=True, backward_ops=True) as p:
        tk.nn.functional.mse_loss(model(x), target).backward()
    return p


def _tick_labels(ax: Any) -> list[Any]:
    """The tick labels matplotlib draws: those of ticks inside the axes' view limits."""
    low_x, high_x = sorted(ax.get_xlim())
    low_y, high_y = sorted(ax.get_ylim())
    shown = [t for t in ax.get_xticklabels() if low_x <= t.get_position()[0] <= high_x]
    return shown + [t for t in ax.get_yticklabels() if low_y <= t.get_position()[1] <= high_y]


def _texts(fig: Any) -> list[Any]:
    """The visible, non-empty text artists of a drawn figure's axes and their legends."""
    ax = fig.axes[0]
    texts = [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
    texts += _tick_labels(ax) + ax.get_legend().get_texts()
    return [t for t in texts if t.get_visible() and t.get_text()]


def _inside(inner: Any, outer: Any) -> bool:
    return (
        inner.x0 >= outer.x0 - TOLERANCE_PX
        and inner.y0 >= outer.y0 - TOLERANCE_PX
        and inner.x1 <= outer.x1 + TOLERANCE_PX
        and inner.y1 <= outer.y1 + TOLERANCE_PX
    )


def _draw(fig: Any) -> Any:
    fig.canvas.draw()
    return fig.canvas.get_renderer()


@pytest.mark.parametrize("plot", ["plot_memory_timeline", "plot_op_times", "plot_module_times"])
def test_every_text_lies_inside_the_figure(prof: profiler.profile, plot: str) -> None:
    fig = getattr(prof, plot)()
    renderer = _draw(fig)
    page = fig.bbox
    texts = _texts(fig)
    assert len(texts) >= 6
    outside = [t.get_text() for t in texts if not _inside(t.get_window_extent(renderer), page)]
    assert outside == []
    legend = fig.axes[0].get_legend().get_window_extent(renderer)
    assert _inside(legend, page)


def test_the_peak_label_is_clear_of_the_legend_and_the_plot_edge(prof: profiler.profile) -> None:
    fig = prof.plot_memory_timeline()
    renderer = _draw(fig)
    ax = fig.axes[0]
    (peak,) = [t for t in ax.texts if t.get_text().startswith("peak")]
    label = peak.get_window_extent(renderer)
    legend = ax.get_legend().get_window_extent(renderer)
    assert not label.overlaps(legend)
    assert _inside(label, ax.bbox)  # the headroom above the peak holds it
    ylabel = ax.yaxis.label.get_window_extent(renderer)
    ticks = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
    assert not any(ylabel.overlaps(t) for t in ticks)


def test_units_follow_the_workbench_format(prof: profiler.profile) -> None:
    records = prof.records
    peak = max(r.live_bytes for r in records)
    memory = prof.plot_memory_timeline().axes[0]
    factor, unit = bytes_unit(peak)
    assert memory.get_ylabel() == f"memory ({unit})"
    low, high = memory.get_ylim()
    ticks = [t for t in memory.get_yticklabels() if low <= t.get_position()[1] <= high]
    assert [t.get_text() for t in ticks[:1]] == ["0"]
    for tick in ticks:  # labels in the axis unit, at round multiples of it
        assert tick.get_text() == number_text(tick.get_position()[1] / factor)
    (label,) = [t.get_text() for t in memory.texts if t.get_text().startswith("peak")]
    assert label == f"peak {bytes_text(peak)}"
    totals: dict[str, int] = {}
    for r in records:
        totals[r.name] = totals.get(r.name, 0) + r.duration_ns
    ops = prof.plot_op_times().axes[0]
    assert ops.get_xlabel() == f"total time ({time_unit(max(totals.values()))[1]})"


def test_a_cpu_run_says_nothing_about_cuda(prof: profiler.profile) -> None:
    assert all(r.gpu_time_ns is None for r in prof.records)
    for plot in (prof.plot_memory_timeline, prof.plot_op_times, prof.plot_module_times):
        title = plot().axes[0].get_title()
        assert "host wall time" in title
        assert "cuda" not in title.lower()
