"""scikit-learn's estimator checks over IBPFactorAnalysis with every solver."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.solvers import SOLVERS, AcceleratedGibbs

# A small n_iter keeps the checks fast; the estimator's defaults are untouched.
ESTIMATORS = [
    IBPFactorAnalysis(solver=name, n_iter=5, burn_in=2, random_state=0) for name in SOLVERS
] + [IBPFactorAnalysis(solver=AcceleratedGibbs(window=2), n_iter=5, burn_in=2, random_state=0)]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
