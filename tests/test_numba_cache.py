"""Package-wide: the numba kernels cache where the package's own folder is read-only.

A kernel compiled with ``cache=True`` is stored beside its module (``__pycache__``) when
that folder can be written; when it cannot (a package installed in a read-only
site-packages), numba falls back to the user's cache folder (``$XDG_CACHE_HOME/numba``),
so the compilation is still paid once per user, not once per process. Checked on a copy of
the package whose ``__pycache__`` folders cannot be created (a file stands in their place;
permissions alone would not stop a test run as root).
"""

import os
import pathlib
import shutil
import subprocess
import sys

import sklearn_ibp

CHILD = """
import numpy as np
from sklearn_ibp.solvers import _draw_kernels as k
print(k.log_poisson_table(2.0, np.int64(4))[1])
print(sum(k.log_poisson_table.stats.cache_hits.values()))
"""


def test_kernels_cache_in_the_user_folder_when_the_package_folder_is_read_only(tmp_path):
    source = pathlib.Path(sklearn_ibp.__file__).parent
    copy = tmp_path / "site" / "sklearn_ibp"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder in [copy, *[p for p in copy.rglob("*") if p.is_dir()]]:
        (folder / "__pycache__").write_text("not a folder")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(PYTHONPATH=str(tmp_path / "site"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")

    def run():
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path,
                             capture_output=True, text=True, check=True)
        return out.stdout.split()

    first = run()
    cached = list((tmp_path / "cache" / "numba").rglob("*_draw_kernels*.nbi"))
    assert cached, "no index file in the user's cache folder"
    assert not any(p.suffix in (".nbi", ".nbc") for p in copy.rglob("*"))
    second = run()
    assert second[0] == first[0]
    assert first[1] == "0" and int(second[1]) >= 1  # the second process loads the cache
