"""event_analysis/plots.py's tables: the durations table gives a typical impact besides its bounds."""
from __future__ import annotations

import pandas as pd

from event_analysis import plots


def test_the_durations_table_gives_the_median_bounds_of_impact_per_type() -> None:
    rows = [("Reboot", 40, 50, 0), ("Reboot", 60, 70, 0), ("Reboot", 0, 130, 0), ("Freeze", 2, 4, 5)]
    lifecycles = pd.DataFrame([{"event_type": t, "event_id": f"e{i}", "impact_s_min": lo, "impact_s_max": hi,
                                "duration_s": d, "started_seen": pd.Timestamp("2026-01-01", tz="UTC"),
                                "started_to_gone_s_min": lo, "started_to_gone_s_max": hi}
                               for i, (t, lo, hi, d) in enumerate(rows)])
    table = plots.duration_summary(lifecycles)
    reboot = table.loc["Reboot"]
    assert (reboot["impact_s_min"], reboot["impact_s_max"]) == (0.0, 130.0), "the extreme bounds, as before"
    assert (reboot["impact_s_median_min"], reboot["impact_s_median_max"]) == (40.0, 70.0), "and the typical one"
    assert (table.loc["Freeze", "impact_s_median_min"], table.loc["Freeze", "impact_s_median_max"]) == (2.0, 4.0)


def reaction_rows(simulated: bool) -> pd.DataFrame:
    rows = [("cycle", 40.0, 300.0, False), ("cycle", 60.0, 120.0, True), ("event-driven", 2.0, 4.0, False)]
    table = pd.DataFrame([{"trigger": t, "vm": f"vm{i}", "event_id": f"e{i}", "host": f"vm{i}", "event_type": "Reboot",
                           "prepared": True, "late": late,
                           "reaction_s_min": lo, "reaction_s_max": hi} for i, (t, lo, hi, late) in enumerate(rows)])
    table.attrs["simulated"] = simulated
    return table


def test_the_reaction_figures_ways_of_running_share_one_x_axis_and_the_legend_covers_no_bar() -> None:
    figure = plots.reaction_intervals(reaction_rows(simulated=False))
    axes = [ax for ax in figure.axes if ax.get_ylabel() or ax.get_yticklabels()]
    assert len(axes) == 2
    assert len({ax.get_xlim() for ax in axes}) == 1 and len({ax.get_xscale() for ax in axes}) == 1
    low, high = axes[0].get_xlim()
    assert low <= 2.0 and high >= 300.0, "every row of every panel is inside the shared range"
    figure.canvas.draw()
    legend = axes[0].get_legend().get_window_extent()
    assert legend.x0 >= axes[0].get_window_extent().x1, "the legend sits beside the panels"
    assert not figure.get_suptitle().startswith("SIMULATED")


def test_every_figure_drawn_from_a_simulated_history_says_so_in_its_title() -> None:
    figure = plots.reaction_intervals(reaction_rows(simulated=True))
    assert figure.get_suptitle().startswith("SIMULATED data, not Azure's behaviour\nReaction:")
