"""The profile view in a real JupyterLab: clicking a header of the op table sorts its rows
(numbers descending first, text ascending first, a second click reverses), checked against the
profiler events Python printed in the same notebook."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

PROFILE = """
import json
import tensorkit as tk

tk.manual_seed(0)
model = tk.nn.Sequential(tk.nn.Linear(8, 16), tk.nn.ReLU(), tk.nn.Linear(16, 1))
with tk.profiler.profile() as prof:
    loss = model(tk.randn(32, 8)).pow(2).mean()
    loss.backward()
view = prof.show()
view
"""
EVENTS = """
print("EXPECT", json.dumps({e["index"]: [e["name"], e["duration_ns"]] for e in prof.events()}))
"""

TABLE = ".tk-profile table.tk-profile-table"


def _shown_indices(page) -> list[str]:
    rows = page.locator(f"{TABLE} tbody tr[data-index]")
    return [rows.nth(i).get_attribute("data-index") for i in range(rows.count())]


def _host_times(page, column: int) -> list[int]:
    cells = page.locator(f"{TABLE} tbody tr td:nth-child({column + 1})")
    return [int(cells.nth(i).get_attribute("data-value")) for i in range(cells.count())]


def test_profile_table_sorts_on_header_clicks(open_notebook, expect) -> None:
    nb = open_notebook("profile.ipynb", [PROFILE, EVENTS])
    nb.run_all()
    assert nb.errors() == []
    events = nb.printed("EXPECT")  # index (a JSON key, so text) -> [name, host time in ns]
    page = nb.page
    rows = page.locator(f"{TABLE} tbody tr[data-index]")
    expect(rows).to_have_count(len(events))
    assert sorted(_shown_indices(page), key=int) == sorted(events, key=int)

    keys = page.locator(f"{TABLE} thead th").evaluate_all(
        "ths => ths.map(th => th.dataset.sortKey)"
    )
    host = page.locator(f'{TABLE} th[data-sort-key="host_time"]')
    name = page.locator(f'{TABLE} th[data-sort-key="name"]')

    host.click()
    expect(host).to_have_attribute("aria-sort", "descending")
    shown = _shown_indices(page)
    times = [events[i][1] for i in shown]
    assert times == sorted(times, reverse=True)
    assert _host_times(page, keys.index("host_time")) == times

    host.click()
    expect(host).to_have_attribute("aria-sort", "ascending")
    times = [events[i][1] for i in _shown_indices(page)]
    assert times == sorted(times)

    name.click()
    expect(name).to_have_attribute("aria-sort", "ascending")
    expect(host).to_have_attribute("aria-sort", "none")
    names = [events[i][0] for i in _shown_indices(page)]
    assert names == sorted(names, key=str.lower)
    shown_names = page.locator(f"{TABLE} tbody tr td:nth-child({keys.index('name') + 1})")
    assert shown_names.all_inner_texts() == names

    name.click()
    expect(name).to_have_attribute("aria-sort", "descending")
    names = [events[i][0] for i in _shown_indices(page)]
    assert names == sorted(names, key=str.lower, reverse=True)
    assert nb.errors() == []


def test_time_by_function_marks_the_selected_ops_function(open_notebook, expect) -> None:
    nb = open_notebook("profile_functions.ipynb", [PROFILE, EVENTS])
    nb.run_all()
    assert nb.errors() == []
    events = nb.printed("EXPECT")
    page = nb.page
    functions = page.locator(".tk-profile table.tk-profile-functions tbody tr")
    expect(functions.first).to_be_visible()
    groups = functions.evaluate_all("trs => trs.map(tr => tr.dataset.group)")
    assert "linear" in groups and "relu" in groups  # F.linear's ops under it; relu by name
    matmul = next(i for i, (name, _) in events.items() if name == "matmul")
    page.locator(f'{TABLE} tbody tr[data-index="{matmul}"]').click()
    marked = page.locator(".tk-profile-functions tr.tk-group-of-selected")
    expect(marked).to_have_count(1)
    expect(marked).to_have_attribute("data-group", "linear")
    assert nb.errors() == []
