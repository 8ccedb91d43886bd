"""Issue 23's matrix of bad and edge inputs for every public estimator.

Each case asserts the error type and a phrase of its message, or a finite result; every
fit is small (a few sweeps) so that the whole matrix runs in seconds once the kernels are
compiled. Allocations that would be large run in a subprocess with a capped address
space, and former hangs in a subprocess with a short timeout.
"""

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_ibp import (
    DistanceDependentIBP,
    DPMixture,
    IBPFactorAnalysis,
    IBPImputer,
    InfiniteEBA,
    NoisyOrHierarchy,
)
from sklearn_ibp.datasets import make_paris_rome
from sklearn_ibp.solvers import MODELS, get_solver, solver_names

X = np.random.default_rng(0).standard_normal((40, 5))
BINARY = (np.random.default_rng(0).random((40, 6)) < 0.4).astype(float)
X_MISSING = np.where(np.random.default_rng(1).random(X.shape) < 0.1, np.nan, X)
PAIRS, CHOICES, _ = make_paris_rome(n_comparisons=20, random_state=0)

#: name -> (a small estimator, valid training data); InfiniteEBA apart (pairs and labels).
ESTIMATORS = {
    "IBPFactorAnalysis": (lambda **p: IBPFactorAnalysis(n_iter=4, random_state=0, **p), X),
    "DPMixture": (lambda **p: DPMixture(n_iter=4, random_state=0, **p), X),
    "DistanceDependentIBP": (
        lambda **p: DistanceDependentIBP(n_iter=4, random_state=0, **p), X),
    "NoisyOrHierarchy": (lambda **p: NoisyOrHierarchy(n_iter=4, random_state=0, **p), BINARY),
    "IBPImputer": (
        lambda **p: IBPImputer(IBPFactorAnalysis(n_iter=4, random_state=0), **p), X_MISSING),
}
MODEL_OF = {"IBPFactorAnalysis": "ibp", "DPMixture": "dp", "DistanceDependentIBP": "ddibp",
            "NoisyOrHierarchy": "hierarchy", "InfiniteEBA": "eba"}


def _with(D, value, where=3):
    out = D.copy()
    out.flat[where] = value
    return out


def _output(est, D):
    return est.transform(D) if hasattr(est, "transform") else est.predict(D)


# -- bad X: (case, transform of valid X, error type, phrase) -----------------------------
BAD_X = [
    ("inf", lambda D: _with(D, np.inf), ValueError, "infinity"),
    ("empty", lambda D: D[:0], ValueError, "0 sample"),
    ("no column", lambda D: D[:, :0], ValueError, "0 feature"),
    ("one sample", lambda D: D[:1], ValueError, "minimum of 2"),
    ("object", lambda D: np.full(D.shape, "a", dtype=object), ValueError, "convert string"),
    ("complex", lambda D: D + 1j, ValueError, "Complex data not supported"),
    ("sparse", lambda D: sp.csr_matrix(np.nan_to_num(D)), TypeError, "dense data"),
    ("1-d", lambda D: D[:, 0], ValueError, "Expected 2D array"),
    ("3-d", lambda D: D[None], ValueError, "dim 3"),
]


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("case, make, error, phrase", BAD_X, ids=[c[0] for c in BAD_X])
def test_bad_X_is_refused(name, case, make, error, phrase):
    factory, D = ESTIMATORS[name]
    if name == "IBPImputer" and case in ("one sample", "empty"):
        pytest.skip("an imputer's own checks on the sample count differ")
    bad = make(D)
    est = factory()
    with pytest.raises(error, match=phrase):
        est.fit(bad)
    with pytest.raises(NotFittedError):  # a failed fit leaves nothing half fitted
        _output(est, D)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_categorical_frame_is_refused(name):
    pd = pytest.importorskip("pandas")
    factory, _ = ESTIMATORS[name]
    frame = pd.DataFrame({"a": pd.Categorical(["x", "y"] * 20), "b": np.ones(40)})
    with pytest.raises(ValueError, match="convert string"):
        factory().fit(frame)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_wrong_width_at_transform_and_two_samples(name):
    factory, D = ESTIMATORS[name]
    # Two samples (NoisyOrHierarchy once hung there: test_former_hang_returns below).
    two = name != "IBPImputer"
    est = factory().fit(D[:2] if two else D)
    assert np.isfinite(_output(est, D[:2])).all()
    with pytest.raises(ValueError, match=f"X has 3 features, but {type(est).__name__}"):
        _output(est, D[:, :3])


def test_nan_is_refused_where_the_model_has_no_missing_values():
    with pytest.raises(ValueError, match="NaN"):
        DPMixture(n_iter=4, random_state=0).fit(_with(X, np.nan))


@pytest.mark.parametrize("name", ["IBPFactorAnalysis", "DistanceDependentIBP",
                                  "NoisyOrHierarchy", "IBPImputer"])
def test_nan_is_missing_where_the_model_allows_it(name):
    factory, D = ESTIMATORS[name]
    est = factory().fit(_with(D, np.nan))
    assert np.isfinite(_output(est, np.nan_to_num(D))).all()


# -- bad hyperparameters -----------------------------------------------------------------
BAD_VALUES = [-1.0, 0.0, np.nan, np.inf, "a", [1.0]]
HYPER = {"IBPFactorAnalysis": "alpha", "DPMixture": "alpha", "DistanceDependentIBP": "alpha",
         "NoisyOrHierarchy": "q"}


@pytest.mark.parametrize("name", sorted(HYPER))
@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
def test_bad_hyperparameter_names_the_parameter(name, value):
    factory, D = ESTIMATORS[name]
    if value == np.inf and name != "NoisyOrHierarchy":
        # alpha = inf: no finite prior; refused as out of range or by the model.
        pass
    with pytest.raises((ValueError, TypeError), match=f"'{HYPER[name]}' parameter"):
        factory(**{HYPER[name]: value}).fit(D)


@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
def test_bad_eba_alpha(value):
    with pytest.raises((ValueError, TypeError), match="'alpha' parameter"):
        InfiniteEBA(n_iter=4, random_state=0, alpha=value).fit(PAIRS, CHOICES)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("value", ["x", 1.5, -1])
def test_bad_random_state(name, value):
    factory, D = ESTIMATORS[name]
    est = factory()
    est.set_params(**{"random_state": value})
    with pytest.raises(ValueError, match="random_state"):
        est.fit(D)


# -- wrong-kind solvers --------------------------------------------------------------------
SOLVER_CASES = [(name, model) for name in MODEL_OF for model in MODELS
                if model != MODEL_OF[name]]


@pytest.mark.parametrize("name, model", SOLVER_CASES)
def test_a_solver_of_another_model_is_refused_naming_solver(name, model):
    solver = get_solver(model, solver_names(model)[0])()
    if name == "InfiniteEBA":
        est, args = InfiniteEBA(n_iter=4, random_state=0, solver=solver), (PAIRS, CHOICES)
    else:
        factory, D = ESTIMATORS[name]
        est, args = factory(solver=solver), (D,)
    with pytest.raises((ValueError, TypeError), match="solver"):
        est.fit(*args)


# -- InfiniteEBA: bad pairs and labels -----------------------------------------------------
BAD_PAIRS = [
    ("self pair", [[0, 0], [0, 1]], [1, 0], "differ"),
    ("negative", [[-1, 0], [0, 1]], [1, 0], "non-negative"),
    ("fractional", [[0.5, 1], [0, 1]], [1, 0], "integer"),
    ("three columns", [[0, 1, 2], [0, 1, 2]], [1, 0], "2"),
    ("nan", [[0, np.nan], [1, 2]], [1, 0], "NaN"),
    ("labels too short", PAIRS, CHOICES[:-1], "one outcome per row"),
    ("three labels", [[0, 1], [1, 2], [0, 2]], [0, 1, 2], "binary"),
]


@pytest.mark.parametrize("case, pairs, labels, phrase", BAD_PAIRS,
                         ids=[c[0] for c in BAD_PAIRS])
def test_bad_pairs_are_refused(case, pairs, labels, phrase):
    with pytest.raises(ValueError, match=phrase):
        InfiniteEBA(n_iter=4, random_state=0).fit(pairs, labels)


@pytest.mark.parametrize("counts, phrase", [([[0, -1], [1, 0]], "negative"),
                                            ([[0, 1, 2], [1, 0, 1]], "square")])
def test_bad_counts_are_refused(counts, phrase):
    with pytest.raises(ValueError, match=phrase):
        InfiniteEBA(n_iter=4, random_state=0).fit_counts(counts)


def test_eba_fits_and_predicts_finite():
    est = InfiniteEBA(n_iter=4, random_state=0).fit(PAIRS, CHOICES)
    assert np.isfinite(est.predict_proba(PAIRS)).all()


# -- the ddIBP's decay callables ---------------------------------------------------------
BAD_DECAY = [
    ("negative", lambda d: -np.ones_like(d)),
    ("nan", lambda d: np.full_like(d, np.nan)),
]


@pytest.mark.parametrize("case, decay", BAD_DECAY, ids=[c[0] for c in BAD_DECAY])
def test_bad_decay_callables_are_refused(case, decay):
    with pytest.raises((ValueError, TypeError), match="decay"):
        DistanceDependentIBP(n_iter=4, random_state=0, decay_function=decay).fit(X)


def test_a_decay_callable_that_raises_propagates_and_leaves_nothing():
    def decay(d):
        raise ZeroDivisionError("user's bug")

    est = DistanceDependentIBP(n_iter=4, random_state=0, decay_function=decay)
    with pytest.raises(ZeroDivisionError, match="user's bug"):
        est.fit(X)
    assert not hasattr(est, "n_features_in_")


# -- input order and input mutation --------------------------------------------------------
def _fitted_arrays(est):
    return {k: v for k, v in vars(est).items()
            if k.endswith("_") and isinstance(v, np.ndarray)}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fortran_input_gives_bit_identical_fits_and_is_not_modified(name):
    factory, D = ESTIMATORS[name]
    F = np.asfortranarray(D)
    F_before = F.copy()
    F.setflags(write=False)
    a, b = factory().fit(np.ascontiguousarray(D)), factory().fit(F)
    np.testing.assert_array_equal(F, F_before)
    arrays_a, arrays_b = _fitted_arrays(a), _fitted_arrays(b)
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key], err_msg=key)
    np.testing.assert_array_equal(_output(a, np.nan_to_num(D)), _output(b, np.nan_to_num(F)))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_dataframe_input_gives_the_array_fit_bit_for_bit(name):
    # a DataFrame's values are Fortran-ordered; validation copies them to C order (the
    # DPMixture fit of a DataFrame once differed from the fit of its array)
    pd = pytest.importorskip("pandas")
    factory, D = ESTIMATORS[name]
    frame = pd.DataFrame(D, columns=[f"c{j}" for j in range(D.shape[1])])
    a, b = factory().fit(np.ascontiguousarray(D)), factory().fit(frame)
    arrays_a, arrays_b = _fitted_arrays(a), _fitted_arrays(b)
    arrays_b.pop("feature_names_in_", None)
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key], err_msg=key)
    frame_out = pd.DataFrame(np.nan_to_num(D), columns=frame.columns)
    np.testing.assert_array_equal(_output(a, np.nan_to_num(D)), _output(b, frame_out))


def test_eba_input_order_and_no_mutation():
    P = np.asfortranarray(PAIRS)
    P.setflags(write=False)
    a = InfiniteEBA(n_iter=4, random_state=0).fit(np.ascontiguousarray(PAIRS), CHOICES)
    b = InfiniteEBA(n_iter=4, random_state=0).fit(P, CHOICES)
    np.testing.assert_array_equal(a.predict_proba(PAIRS), b.predict_proba(PAIRS))


# -- the numerical, memory and hang cases -------------------------------------------
def _finite_or_refused(fit):
    """The fit either refuses with a ValueError or gives finite fitted floats without a
    warning of non-finite results."""
    import warnings

    from sklearn_ibp.exceptions import NonFiniteResultWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteResultWarning)
        try:
            est = fit()
        except ValueError as exc:
            # A refusal, not a numerical failure (LinAlgError is a ValueError too): it
            # names the data or a parameter.
            assert not isinstance(exc, np.linalg.LinAlgError), exc
            assert re.search(r"\bX\b|sigma_|alpha|too large|too small", str(exc)), exc
            return
    for key, value in vars(est).items():
        if key.endswith("_") and isinstance(value, float | np.ndarray):
            assert np.all(np.isfinite(value)) or key == "traces_", key


@pytest.mark.parametrize("name", [
    "IBPFactorAnalysis",
    "IBPImputer",
    "DistanceDependentIBP",
    "DPMixture",
    "NoisyOrHierarchy",
])
def test_data_scaled_by_1e300(name):
    factory, D = ESTIMATORS[name]
    if name == "NoisyOrHierarchy":
        D = X  # real-valued data, as in the report
    _finite_or_refused(lambda: factory().fit(D * 1e300))


@pytest.mark.parametrize("params", [
    {"sigma_a": 1e-300},
    {"sigma_x": 1e-3, "sigma_a": 1e3, "sample_hyperparameters": False},
    {"sigma_x": 1e-3, "sigma_a": 1e3, "sample_hyperparameters": False,
     "solver": "collapsed", "n_iter": 3},
])
def test_extreme_ibp_hyperparameters(params):
    # sigma_a / sigma_x = 1e6 is now refused (rounding errors added features without end);
    # should that regress, a few sweeps keep the test short: K grew to about 300 in 20
    # sweeps, and the collapsed sampler's sweeps cost O(K^3) (it failed in its first).
    params = {"n_iter": 10, **params}
    _finite_or_refused(lambda: IBPFactorAnalysis(random_state=0, **params).fit(X))


def test_variational_on_constant_data():
    _finite_or_refused(lambda: IBPFactorAnalysis(solver="variational").fit(np.ones((40, 5))))


def _refuses_in_a_capped_process(code, timeout=120, cap=2**31):
    """Run ``code`` in a subprocess whose address space is capped (``cap`` bytes) with a
    package memory limit of 256 MiB; True when it raises a ValueError naming the memory
    before allocating (so that a test never allocates much, even before the fix)."""
    prelude = f"""
    import resource, os
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
    os.environ["SKLEARN_IBP_MAX_MEMORY"] = str(2**28)
    """
    body = textwrap.dedent(prelude) + textwrap.dedent(code) + textwrap.dedent("""
    try:
        run()
    except ValueError as exc:
        print("REFUSED", exc)
    """)
    try:
        done = subprocess.run([sys.executable, "-c", body], timeout=timeout,
                              capture_output=True, text=True, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and "REFUSED" in done.stdout


MEMORY_CASES = {
    "ibp-alpha-1e4": ("IBP", """
        import numpy as np
        from sklearn_ibp import IBPFactorAnalysis
        X = np.random.default_rng(0).standard_normal((40, 5))
        def run():
            IBPFactorAnalysis(alpha=1e4, solver="collapsed", n_iter=2, random_state=0).fit(X)
        """),
    "eba-unseen-alternatives": ("EBA+hierarchy", """
        from sklearn_ibp import InfiniteEBA
        def run():
            InfiniteEBA(n_iter=2, random_state=0).fit([[0, 50000], [0, 1]], [1, 0])
            raise ValueError("fitted without the win-count matrix: fine")
        """),
    "eba-counts-1e9": ("EBA+hierarchy", """
        from sklearn_ibp import InfiniteEBA
        def run():
            InfiniteEBA(n_iter=2, random_state=0).fit_counts([[0, 10**9], [1, 0]])
        """),
    "ddibp-n-20000": ("DP+ddIBP", """
        import numpy as np
        from sklearn_ibp import DistanceDependentIBP
        X = np.random.default_rng(0).standard_normal((20_000, 2))
        def run():
            DistanceDependentIBP(n_iter=1, random_state=0).fit(X)
        """),
}


@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_large_allocations_are_checked_first(case):
    assert _refuses_in_a_capped_process(MEMORY_CASES[case][1])


# -- former hangs: each in a subprocess with a timeout -------------------------------------
def _returns_within(code, timeout=120):
    try:
        subprocess.run([sys.executable, "-c", textwrap.dedent(code)], timeout=timeout,
                       capture_output=True, check=False)
    except subprocess.TimeoutExpired:
        return False
    return True


HANGS = [
    """
    from sklearn_ibp import InfiniteEBA
    from sklearn_ibp.datasets import make_paris_rome
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    InfiniteEBA(n_iter=30, weight_shape=1e-3, random_state=0).fit(Xp, y)
    """,
    """
    from sklearn_ibp import InfiniteEBA
    from sklearn_ibp.datasets import make_paris_rome
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    InfiniteEBA(n_iter=100, weight_shape=1e-3, random_state=0).fit(Xp, y)
    """,
    """
    from sklearn_ibp import InfiniteEBA
    from sklearn_ibp.datasets import make_paris_rome
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    try:
        InfiniteEBA(alpha=1e4, n_iter=5, random_state=0).fit(Xp, y)
    except ValueError:
        pass
    """,
]


HANGS.append(
    # Found by this matrix: two samples spin in hierarchy_gibbs.sweep_structure.
    """
    import numpy as np
    from sklearn_ibp import NoisyOrHierarchy
    X = (np.random.default_rng(0).random((40, 6)) < 0.4).astype(float)
    try:
        NoisyOrHierarchy(n_iter=4, random_state=0).fit(X[:2])
    except ValueError:
        pass
    """
)


@pytest.mark.parametrize("code", HANGS, ids=["eba-shape-1e-3", "eba-shape-1e-3-100",
                                             "eba-alpha-1e4", "hierarchy-two-samples"])
def test_former_hang_returns(code):
    assert _returns_within(code)


def test_clone_of_a_failed_fit_is_clean():
    est = IBPFactorAnalysis(n_iter=4, random_state=0)
    with pytest.raises(ValueError):
        est.fit(X[:1])
    assert clone(est).get_params() == est.get_params()
