"""Every Python block of the README runs and prints what the README says it prints.

Each ```python block is run in a fresh namespace (in order, in this process) with its
standard output captured; when a ```text block follows it after a line "prints", the
output must be that text exactly (the estimators are reproducible bit for bit from
``random_state``).
"""

import contextlib
import io
import pathlib
import re
import warnings

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```python\n(?P<code>.*?)```(?:\s*prints\s*```text\n(?P<out>.*?)```)?",
                   re.DOTALL)


def _blocks():
    return [(m.group("code"), m.group("out")) for m in BLOCK.finditer(README.read_text())]


def test_the_readme_has_an_example_per_estimator():
    import sklearn_ibp

    code = "\n".join(c for c, _ in _blocks())
    estimators = [name for name in sklearn_ibp.__all__
                  if isinstance(getattr(sklearn_ibp, name), type)
                  and hasattr(getattr(sklearn_ibp, name), "fit")]
    assert len(estimators) >= 6
    for name in estimators:
        assert f"{name}(" in code, f"no README example builds {name}"


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_readme_block_runs_and_prints_what_it_says(index):
    code, expected = _blocks()[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, f"README.md block {index}", "exec"), {"__name__": "__readme__"})
    if expected is not None:
        assert out.getvalue().strip() == expected.strip()
