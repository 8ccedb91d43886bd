"""Package-wide: every gallery example runs to the end, at the reduced sizes of its quick mode.

Each ``examples/plot_*.py`` reads ``SKLEARN_IBP_QUICK_EXAMPLES=1`` and then cuts its data
and its chains down so that it runs in seconds; the docs build runs the full sizes. The
scripts run in this process (``runpy``), so the numba kernels are loaded once for all of
them rather than once per script. New examples are picked up by the glob.
"""

import runpy
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

matplotlib = pytest.importorskip("matplotlib", reason="the examples draw with matplotlib")

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("plot_*.py"))


def test_examples_found():
    assert EXAMPLES, f"no plot_*.py in {EXAMPLES_DIR}"


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_runs(path, monkeypatch, tmp_path):
    monkeypatch.setenv("SKLEARN_IBP_QUICK_EXAMPLES", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    # Anything an example writes lands in a temporary directory.
    monkeypatch.chdir(tmp_path)
    try:
        # One BLAS thread, as the estimators use while sampling: scikit-learn's own fits
        # in the examples (mixtures, logistic regression) call BLAS on tiny matrices.
        with threadpool_limits(limits=1, user_api="blas"):
            runpy.run_path(str(path), run_name="__main__")
        assert plt.get_fignums(), f"{path.name} draws no figure"
    finally:
        plt.close("all")
