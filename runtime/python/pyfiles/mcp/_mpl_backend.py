"""matplotlib's backend inside run_python: Agg, whose plt.show() returns the
open figures with the run's result (see mcp.results). The runner selects it
through MPLBACKEND before any code runs; matplotlib.use() still switches."""

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import results

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(*args, **kwargs):
    results._send_open_figures()
