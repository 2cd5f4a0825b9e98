"""What every report figure shares: its legend sits under the plot, never over the data."""

from __future__ import annotations


def legend_below(fig, handles: list, labels: list, fontsize: int = 8, ncols: int = 2) -> None:
    """The legend under the plot (the figure needs layout='constrained' to make room)."""
    fig.legend(handles, labels, loc="outside lower center", ncols=min(ncols, len(labels)),
               fontsize=fontsize, frameon=False, markerscale=0.4)
