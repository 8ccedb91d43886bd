"""Package-wide: the layers of the package, checked on the source of every module.

Data flows one way, estimator -> solver -> (prior, likelihood) -> kernels (``doc/`` and the
README's Layout section describe them).

Every module of ``sklearn_ibp`` is read with :mod:`ast` (no import runs) and each of its
imports, at module level or inside a function, is resolved to a module of the package. The
test fails on

- an import from a lower layer to a higher one (kernels, priors and likelihoods import no
  solver or estimator; solvers import no estimator);
- an estimator (or ``base.py``) importing a kernel module (``*_kernels``): it calls its
  solver or likelihood instead;
- any import of ``sklearn_ibp.distributed`` but the solver registry
  (``sklearn_ibp/solvers/__init__.py``), which offers the parallel solvers;
- any import of ``sklearn_ibp.estimators`` but the package ``__init__``, ``demo`` and
  ``datasets``.
"""

from __future__ import annotations

import ast
import pathlib

import sklearn_ibp

#: Modules below every layer: they import nothing of the package above them.
UTILITIES = {"_numba", "_slice", "_deprecation", "_memory", "exceptions", "diagnostics"}
#: The entry points above the estimators.
TOP = {"__init__", "demo", "datasets"}
RANKS = {"utility": 0, "kernel": 0, "prior": 1, "likelihood": 1, "solver": 2,
         "estimator": 3, "top": 4}
ESTIMATOR_IMPORTERS = {"sklearn_ibp", "sklearn_ibp.demo", "sklearn_ibp.datasets"}
DISTRIBUTED_IMPORTERS = {"sklearn_ibp.solvers"}


def module_names(package_dir):
    """``{dotted module name: path}`` of every module under ``package_dir``."""
    package_dir = pathlib.Path(package_dir)
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = ("sklearn_ibp", *path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def layer(module):
    """The layer of a module of the package, by where it lives and what it is."""
    parts = module.split(".")
    if parts[-1].endswith("_kernels"):
        return "kernel"
    if len(parts) == 1:
        return "top"
    if len(parts) == 2 and parts[1] in UTILITIES:
        return "utility"
    if len(parts) == 2 and parts[1] in TOP:
        return "top"
    return {"priors": "prior", "likelihoods": "likelihood", "solvers": "solver",
            "distributed": "solver", "estimators": "estimator", "base": "estimator"}[parts[1]]


def imported_modules(module, path, modules):
    """The modules of the package that ``module`` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module
            # ``from a import b`` imports ``a`` and, when ``b`` is a module, ``a.b`` too.
            targets = [source, *(f"{source}.{alias.name}" for alias in node.names)]
        else:
            continue
        # The module named counts, not the packages above it that Python also runs (a
        # kernel may import a likelihood's kernel module, whose package ``__init__``
        # imports the likelihood classes).
        found.update(t for t in targets if t in modules and t != module)
    return found


def layer_violations(package_dir):
    """Every import of the package at ``package_dir`` that breaks one of the rules."""
    modules = module_names(package_dir)
    problems = []
    for module, path in modules.items():
        own = layer(module)
        for target in sorted(imported_modules(module, path, modules)):
            if module.startswith(target + "."):
                continue  # a package's own modules may import from their package
            other = layer(target)
            if RANKS[other] > RANKS[own]:
                problems.append(f"{module} ({own}) imports {target} ({other}): upward")
            if own in ("estimator",) and other == "kernel":
                problems.append(f"{module} (estimator) imports the kernel module {target}")
            if (target.startswith("sklearn_ibp.distributed")
                    and not module.startswith("sklearn_ibp.distributed")
                    and module not in DISTRIBUTED_IMPORTERS):
                problems.append(f"{module} imports {target}: only the solver registry may")
            if (target.startswith("sklearn_ibp.estimators")
                    and not module.startswith("sklearn_ibp.estimators")
                    and module not in ESTIMATOR_IMPORTERS):
                problems.append(f"{module} imports {target}: only the package entry points may")
    return problems


def test_every_module_has_a_layer():
    modules = module_names(pathlib.Path(sklearn_ibp.__file__).parent)
    assert len(modules) > 80
    assert {layer(m) for m in modules} == set(RANKS)


def test_imports_follow_the_layers():
    problems = layer_violations(pathlib.Path(sklearn_ibp.__file__).parent)
    assert not problems, "\n".join(problems)


def test_the_rules_catch_each_kind_of_import(tmp_path):
    # A fake package with one import of each forbidden kind: the walk must see all four.
    files = {
        "__init__.py": "from .estimators import Model\n",
        "base.py": "",
        "exceptions.py": "",
        "priors/__init__.py": "",
        "priors/ibp.py": "def f():\n    from ..solvers.ibp import accelerated\n",
        "likelihoods/__init__.py": "",
        "likelihoods/_gauss_kernels.py": "from ..estimators import Model\n",
        "solvers/__init__.py": "from ..distributed import PARALLEL_SOLVERS\n",
        "solvers/ibp/__init__.py": "",
        "solvers/ibp/accelerated.py": "from ...distributed import engines\n",
        "solvers/ibp/_accelerated_kernels.py": "",
        "distributed/__init__.py": "",
        "distributed/engines.py": "",
        "estimators/__init__.py": "Model = None\n",
        "estimators/model.py": "from ..solvers.ibp._accelerated_kernels import sweep\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    problems = layer_violations(tmp_path)
    assert any("priors.ibp (prior) imports sklearn_ibp.solvers" in p for p in problems)
    assert any("_gauss_kernels (kernel) imports sklearn_ibp.estimators" in p for p in problems)
    assert any("estimators.model (estimator) imports the kernel module" in p for p in problems)
    assert any("solvers.ibp.accelerated imports sklearn_ibp.distributed" in p
               for p in problems)
    assert not any(p.startswith("sklearn_ibp.solvers imports") for p in problems)
    assert not any(p.startswith("sklearn_ibp imports") for p in problems)
