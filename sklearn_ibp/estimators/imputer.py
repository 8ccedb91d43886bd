"""IBPImputer: fill missing values from the posterior predictive of a latent feature model."""

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.impute._base import _BaseImputer
from sklearn.utils import check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, MissingValues, StrOptions
from sklearn.utils.validation import (
    FLOAT_DTYPES,
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from ..base import atomic_fit, single_blas_thread
from ..likelihoods.correlated_noise import (
    draw_missing,
    missing_count_groups,
    predict_missing,
    residual_covariance,
)
from .distance_dependent import DistanceDependentIBP
from .factor_analysis import MAX_EXACT_FEATURES, IBPFactorAnalysis
from .noisy_or_hierarchy import NoisyOrHierarchy

__all__ = ["IBPImputer"]

#: The estimators of the package that take NaN in ``fit`` and ``transform``.
_NAN_ESTIMATORS = "IBPFactorAnalysis, DistanceDependentIBP or NoisyOrHierarchy"

#: Weight of the plain multivariate Gaussian (no feature) in the averaged imputation of
#: ``noise="full"`` with the imputer's own model, what ``gaussian_weight="auto"`` means
#: then (chosen on the benchmark of doc/imputation.rst).
DEFAULT_GAUSSIAN_WEIGHT = 0.5

#: The default model's fixed noise and feature standard deviations, as fractions of the
#: standard deviation of the centred data (chosen on the benchmark of doc/imputation.rst).
DEFAULT_SIGMA_X = 0.9
DEFAULT_SIGMA_A = 1.0


class IBPImputer(_BaseImputer):
    """Fill missing values with the posterior predictive mean of a latent feature model.

    A latent feature estimator of the package (by default :class:`IBPFactorAnalysis`) is
    fitted to the data with its missing entries masked out of the likelihood. Each missing
    entry of a row is then filled with its posterior predictive mean given the row's
    observed entries, averaged over ``n_samples`` kept posterior samples of the fitted
    estimator; observed entries are returned unchanged. With ``noise="full"`` (the
    default) the residuals ``x - z A`` of each sample get a full covariance ``Sigma``
    (estimated by EM from the observed entries) and a row's missing entries are filled
    with ``E[z | x_o] A_m + mean_m + Sigma_mo Sigma_oo^-1 (x_o - E[z | x_o] A_o -
    mean_o)``; with ``noise="model"`` with the model's own predictive,
    ``E[z | x_o] A_m + mean_m``. With ``noise="full"`` and the imputer's own model, that
    is averaged evenly with the plain multivariate Gaussian's conditional mean of the
    missing entries (``gaussian_weight``). See :doc:`/imputation` for the measurements.

    Parameters
    ----------
    estimator : estimator object, default=None
        The latent feature model, cloned before fitting. It must accept NaN in ``fit`` and
        ``transform`` (its ``__sklearn_tags__().input_tags.allow_nan`` is True) and map
        feature probabilities back to data space with ``inverse_transform``:
        :class:`IBPFactorAnalysis`, :class:`DistanceDependentIBP` or
        :class:`NoisyOrHierarchy`. None means the imputer's own model,
        ``IBPFactorAnalysis(sigma_x=0.9 * s, sigma_a=1.0 * s,
        sample_hyperparameters=False)`` with ``s`` the standard deviation of the observed
        entries around their column means: a fixed, wide noise keeps the features to the
        coarse structure (with its noise sampled the model grows dozens of features that
        fit a few rows each, and predicts missing entries worse). When its
        ``random_state`` is None it is seeded from this imputer's ``random_state``.
    missing_values : int, float or np.nan, default=np.nan
        The placeholder of a missing entry. With a value other than NaN, NaN in ``X`` is
        an error.
    n_samples : int, default=10
        Number of kept posterior samples of the estimator whose predictive means are
        averaged, evenly spaced over its kept samples (so over all of its chains). All of
        them are used when the estimator kept fewer.
    sample_posterior : bool, default=False
        Instead of the average predictive mean, fill each missing entry with one draw from
        the posterior predictive, for multiple imputation: one kept sample chosen at
        random, the row's features drawn from their posterior marginals given its observed
        entries, and observation noise at the sample's noise level (with
        ``noise="full"``: the features drawn from their joint posterior under the
        correlated noise, and the missing entries from their Gaussian conditional given
        the observed ones). The draws are
        reproducible from ``random_state``; different seeds give different imputations.
    noise : {"full", "model"}, default="full"
        The noise of the predictive mean. ``"full"``: features plus correlated Gaussian
        noise, the residual covariance of each kept sample estimated by EM from the
        training rows (Little and Rubin 2002, sec. 11.2) and ``E[z | x_o]`` enumerated
        under it (see :mod:`sklearn_ibp.likelihoods.correlated_noise`); with
        ``sample_posterior=True`` the draws come from that model too. It serves
        :class:`IBPFactorAnalysis` and :class:`DistanceDependentIBP` with binary features
        and a real-valued likelihood.
        ``"model"``: the estimator's own (isotropic) noise, through its ``transform``
        and ``inverse_transform``; always used for the other estimators.
    gaussian_weight : "auto" or float in [0, 1], default="auto"
        With ``noise="full"``: the weight of a second model in the imputation, the
        plain multivariate Gaussian of the columns (no feature, its covariance
        estimated by EM from the training rows), whose predictive mean of the missing
        entries is the Gaussian conditional mean given the observed ones. The imputation
        is ``gaussian_weight`` times that plus ``1 - gaussian_weight`` times the
        features-plus-correlated-noise average over the kept samples: the predictive of
        the mixture of the two models with these weights (with
        ``sample_posterior=True``, each call of ``transform`` draws from the Gaussian
        with probability ``gaussian_weight``, else from the feature model). 0 uses the
        feature model alone, 1 the Gaussian alone. ``"auto"``: 0.5 with the imputer's
        own model (``estimator=None``), whose binary features describe groups of rows
        well and linear relations only in steps (on the real tables of
        :doc:`/imputation` neither model is best everywhere and the even mixture beats
        both); 0 with an ``estimator`` you give, which is then your model of the data
        (a dd-IBP with a time covariate, say). Ignored with ``noise="model"`` and for
        estimators that ``"full"`` does not serve.
    add_indicator : bool, default=False
        Append a :class:`~sklearn.impute.MissingIndicator` of the columns that had
        missing entries in ``fit``.
    keep_empty_features : bool, default=False
        Keep the columns that are entirely missing in ``fit`` in the output, their missing
        entries filled with 0; by default they are dropped.
    random_state : int, RandomState instance or None, default=None
        Seeds the estimator when its own ``random_state`` is None, and the draws of
        ``sample_posterior=True``.

    Attributes
    ----------
    estimator_ : estimator object
        The fitted clone of ``estimator``, fitted on the columns with an observed entry
        and the rows with an observed entry among them (a dd-IBP's ``covariate_columns``
        renumbered when columns before them were dropped).
    gaussian_weight_ : float
        The weight of the plain Gaussian in the imputation (what ``"auto"`` resolved
        to; 0 when ``noise="full"`` does not apply).
    indicator_ : MissingIndicator or None
        The indicator of missing values, when ``add_indicator=True``.
    n_features_in_ : int
        Number of columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit``, when ``X`` has them.

    See Also
    --------
    sklearn.impute.SimpleImputer : Fill with a per-column statistic.
    sklearn.impute.KNNImputer : Fill from the nearest rows.
    sklearn.impute.IterativeImputer : Regress each column on the others in turn.

    Notes
    -----
    *Posterior samples* (``noise="model"``, or an estimator that ``"full"`` does not
    serve). For :class:`IBPFactorAnalysis` and :class:`DistanceDependentIBP`
    each of the ``n_samples`` kept samples ``(Z, sigma_x, sigma_a)`` gives the features'
    posterior mean ``A`` given ``Z`` and the training data; for :class:`NoisyOrHierarchy`
    each kept sample carries its own categories, links and ``A``. The estimator's
    ``inverse_transform(transform(x))`` computed with the features of one sample is that
    sample's predictive mean of the row (new features of the row have mean zero and add
    nothing). For any other estimator, ``inverse_transform(transform(X))`` of the fitted
    estimator is used. Averaging over samples from several chains
    (``n_chains`` of the estimator) smooths the imputations markedly.

    A :class:`DistanceDependentIBP` gives each row a prior over the features from its
    covariates. Without ``covariate_columns`` every row to impute counts as coming right
    after the training rows, so it borrows features from the last rows only; give the
    estimator covariate columns (a time column, say) to impute rows from their
    neighbours.

    *Empty columns and rows.* As :class:`~sklearn.impute.SimpleImputer` does, a column
    with no observed entry in ``fit`` is dropped from the output, or, with
    ``keep_empty_features=True``, kept with its missing entries filled with 0 (observed
    entries that appear in it later are kept). The estimator never sees such columns.
    The estimators reject rows with no observed entry, so the estimator is fitted on the
    other rows; a row with no observed entry (in ``fit`` or later) is filled from the
    model's prior predictive, which is what the posterior given no observation is.

    ``transform`` is deterministic once fitted. With ``sample_posterior=False`` a row's
    imputation depends on that row only; with ``sample_posterior=True`` the random stream
    restarts at every call and the draws depend on the rows' positions.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ibp import IBPFactorAnalysis, IBPImputer
    >>> from sklearn_ibp.datasets import make_block_images
    >>> X, _, _ = make_block_images(n_samples=100, random_state=0)
    >>> X_missing = X.copy()
    >>> X_missing[::7, 3] = np.nan
    >>> imputer = IBPImputer(IBPFactorAnalysis(n_iter=20, random_state=0), random_state=0)
    >>> X_filled = imputer.fit_transform(X_missing)
    >>> bool(np.isnan(X_filled).any())
    False
    """

    _parameter_constraints: dict = {
        **_BaseImputer._parameter_constraints,
        "estimator": [HasMethods(["fit", "transform"]), None],
        "missing_values": [MissingValues(numeric_only=True)],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "sample_posterior": ["boolean"],
        "noise": [StrOptions({"full", "model"})],
        "gaussian_weight": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        missing_values=np.nan,
        n_samples=10,
        sample_posterior=False,
        noise="full",
        gaussian_weight="auto",
        add_indicator=False,
        keep_empty_features=False,
        random_state=None,
    ):
        super().__init__(
            missing_values=missing_values,
            add_indicator=add_indicator,
            keep_empty_features=keep_empty_features,
        )
        self.estimator = estimator
        self.n_samples = n_samples
        self.sample_posterior = sample_posterior
        self.noise = noise
        self.gaussian_weight = gaussian_weight
        self.random_state = random_state

    # -- validation ---------------------------------------------------------------------
    def _validate_X(self, X, *, reset):
        """``X`` as a float array (float32 kept) and its mask of missing entries."""
        nan_missing = _is_nan(self.missing_values)
        X = validate_data(
            self, X, dtype=FLOAT_DTYPES, reset=reset, order="C",
            ensure_all_finite="allow-nan" if nan_missing else True,
            ensure_min_samples=2 if reset else 1,
        )
        mask = np.isnan(X) if nan_missing else X == self.missing_values
        return X, mask

    def _check_estimator(self, scale=1.0):
        """A clone of ``estimator`` (or the default for data of standard deviation
        ``scale``), checked to take missing values."""
        if self.estimator is None:
            return _default_estimator(scale)
        estimator = clone(self.estimator)
        name = type(estimator).__name__
        if not get_tags(estimator).input_tags.allow_nan:
            raise ValueError(
                f"estimator={name} cannot take missing values (NaN) in fit and transform "
                f"(its allow_nan tag is False); IBPImputer needs one that can: "
                f"{_NAN_ESTIMATORS}."
            )
        if not hasattr(estimator, "inverse_transform"):
            raise ValueError(
                f"estimator={name} has no inverse_transform to map its features back to "
                f"the data; IBPImputer needs {_NAN_ESTIMATORS}."
            )
        return estimator

    def _resolve_gaussian_weight(self) -> float:
        """The weight of the plain Gaussian: ``gaussian_weight``, or what ``"auto"``
        means for this ``estimator``."""
        if self.gaussian_weight != "auto":
            return float(self.gaussian_weight)
        return DEFAULT_GAUSSIAN_WEIGHT if self.estimator is None else 0.0

    # -- fitting ------------------------------------------------------------------------
    # Not skipped: the wrapped estimator's fit validates its own parameters.
    @atomic_fit  # all or nothing, like the sampling estimators' fits
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit the latent feature model to the observed entries of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with missing entries marked by ``missing_values``.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : IBPImputer
            The fitted imputer.
        """
        X, mask = self._validate_X(X, reset=True)
        valid = ~mask.all(axis=0)
        if not valid.any():
            raise ValueError(
                "X has no observed entry (every column is entirely missing); IBPImputer "
                "needs at least one observed value to fit its model."
            )
        estimator = self._check_estimator(_data_scale(X[:, valid], mask[:, valid]))
        estimator = _adapt_to_columns(estimator, valid)
        data = _data_columns(estimator, int(valid.sum()))
        X_model = _model_input(X[:, valid], mask[:, valid])
        filled_rows = ~np.isnan(X_model[:, data]).all(axis=1)
        if filled_rows.sum() < 2:
            raise ValueError(
                f"X has {int(filled_rows.sum())} row(s) with an observed entry; IBPImputer "
                "needs at least 2 to fit its model (rows with every entry missing are "
                "filled from the fitted model, not used to fit it)."
            )
        if not filled_rows.all() and getattr(estimator, "metric", None) == "precomputed":
            raise ValueError(
                'With estimator=DistanceDependentIBP(metric="precomputed") every row of X '
                "needs an observed data entry: leaving a row out of the fit would misalign "
                "the distance columns of the training rows."
            )
        rng = check_random_state(self.random_state)
        estimator_seed = rng.randint(np.iinfo(np.int32).max)
        draw_seed = rng.randint(np.iinfo(np.int32).max)
        if estimator.get_params().get("random_state", 0) is None:
            estimator.set_params(random_state=estimator_seed)
        estimator.fit(X_model[filled_rows])

        n_kept = _n_kept_samples(estimator)
        if n_kept == 0:
            chosen = []
        elif self.sample_posterior:
            chosen = [rng.randint(n_kept)]
        else:
            # Evenly spaced over the kept samples, which list the chains one after another.
            chosen = np.unique(np.linspace(0, n_kept - 1, num=self.n_samples).round())
        # Small matrices: BLAS threads only contend (see BaseIBPSampler._run_chains).
        with single_blas_thread():
            train = X_model[filled_rows][:, data]
            views = _posterior_views(estimator, train, chosen)
            covariances = gaussian_covariance = None
            weight = self._resolve_gaussian_weight()
            if self.noise == "full" and all(
                _takes_full_noise(view) for view in views
            ):
                covariances = _residual_covariances(views, train)
                if weight > 0.0:
                    gaussian_covariance = _residual_covariances(
                        [_NoFeatures(views[0].mean_, train.shape[0])], train)[0]
        self.estimator_ = estimator
        self._views = views
        self._covariances = covariances
        self._gaussian_covariance = gaussian_covariance
        self.gaussian_weight_ = weight if gaussian_covariance is not None else 0.0
        self._data = data
        self._valid_mask = valid
        self._draw_seed = draw_seed
        self._fit_indicator(mask)
        return self

    # -- imputation ---------------------------------------------------------------------
    def _predict(self, X_model):
        """The model's imputation of every data column of the rows of ``X_model``."""
        with single_blas_thread():
            if self._covariances is not None:
                return self._predict_full_noise(X_model)
            if not self.sample_posterior:
                total = 0.0
                for view in self._views:
                    total = total + view.inverse_transform(view.transform(X_model))
                return total / len(self._views)
            view = self._views[0]
            rng = np.random.default_rng(self._draw_seed)
            if isinstance(view, IBPFactorAnalysis) and view._weighted():
                features = view._draw_weights(X_model, rng)  # real weights, not bits
            else:
                probabilities = view.transform(X_model)
                features = (rng.random(probabilities.shape) < probabilities).astype(float)
            mean = view.inverse_transform(features)
            binary, scale = _noise(view)
            if binary:
                return (rng.random(mean.shape) < mean).astype(float)
            return mean + scale * rng.standard_normal(mean.shape)

    def _predict_full_noise(self, X_model):
        """The imputation under features plus correlated noise, averaged over the views
        (one draw from the single view with ``sample_posterior=True``; see
        :mod:`sklearn_ibp.likelihoods.correlated_noise`), mixed with the plain Gaussian's
        with weight ``gaussian_weight_``."""
        total = 0.0
        groups = None
        rng = np.random.default_rng(self._draw_seed) if self.sample_posterior else None
        weight = self.gaussian_weight_
        if rng is not None and weight > 0.0:
            # One draw from the mixture: the model first, then the entries from it.
            weight = 1.0 if rng.random() < weight else 0.0
        for view, cov in zip(self._views, self._covariances, strict=True):
            Xc, log_odds, _ = view._check_X(X_model)
            missing = np.isnan(Xc)
            if groups is None:
                groups = missing_count_groups(missing)
            if weight == 1.0:
                break
            probabilities = None
            if view.n_components_ > MAX_EXACT_FEATURES:
                probabilities = view.transform(X_model)  # mean field, isotropic noise
            args = (Xc, missing, view.components_, log_odds, cov)
            if rng is None:
                fill = predict_missing(*args, probabilities, groups)
            else:
                fill = draw_missing(*args, rng, probabilities, groups)
            total = total + fill + view.mean_
        fill = total / len(self._views) if weight < 1.0 else 0.0
        if weight > 0.0:
            # The plain Gaussian: no feature, the conditional mean (or a draw) of the
            # missing entries given the observed ones.
            args = (Xc, missing, np.zeros((0, Xc.shape[1])), np.zeros((Xc.shape[0], 0)),
                    self._gaussian_covariance)
            if rng is None:
                gaussian = predict_missing(*args, None, groups)
            else:
                gaussian = draw_missing(*args, rng, None, groups)
            fill = (1.0 - weight) * fill + weight * (gaussian + self._views[0].mean_)
        return fill

    def transform(self, X):
        """Fill every missing entry of ``X``; observed entries are returned unchanged.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data with missing entries marked by ``missing_values``.

        Returns
        -------
        X_imputed : ndarray of shape (n_samples, n_features_out)
            ``X`` with its missing entries filled, without the columns that were entirely
            missing in ``fit`` (unless ``keep_empty_features=True``), followed by the
            missing indicator when ``add_indicator=True``.
        """
        check_is_fitted(self)
        X, mask = self._validate_X(X, reset=False)
        valid = self._valid_mask
        out = X.copy()
        mask_valid = mask[:, valid]
        rows = np.flatnonzero(mask_valid.any(axis=1))
        if rows.size:
            X_model = _model_input(X[np.ix_(rows, valid)], mask_valid[rows])
            filled = np.full(X_model.shape, np.nan)
            filled[:, self._data] = self._predict(X_model)
            block = out[np.ix_(rows, valid)]
            block[mask_valid[rows]] = filled[mask_valid[rows]]
            out[np.ix_(rows, valid)] = block
        if self.keep_empty_features:
            out[:, ~valid] = np.where(mask[:, ~valid], 0.0, X[:, ~valid])
        else:
            out = out[:, valid]
        return self._concatenate_indicator(out, self._transform_indicator(mask))

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input column names; None uses ``feature_names_in_`` or ``x0, x1, ...``.

        Returns
        -------
        ndarray of str
            The kept input names, then the indicator's names when ``add_indicator=True``.
        """
        check_is_fitted(self, "n_features_in_")
        input_features = _check_feature_names_in(self, input_features)
        names = input_features if self.keep_empty_features else input_features[self._valid_mask]
        return self._concatenate_indicator_feature_names_out(names, input_features)


# -- per-estimator logic ----------------------------------------------------------------
def _is_nan(value) -> bool:
    return isinstance(value, float) and np.isnan(value)


def _data_scale(X, mask) -> float:
    """Standard deviation of the observed entries around their column means (1 when
    there is no spread)."""
    observed = np.where(mask, np.nan, X)
    with np.errstate(all="ignore"):
        scale = float(np.nanstd(observed - np.nanmean(observed, axis=0)))
    return scale if np.isfinite(scale) and scale > 0.0 else 1.0


def _default_estimator(scale):
    """The imputer's own model: an IBP with fixed, wide noise (see doc/imputation.rst).

    With the noise sampled, ``sigma_x`` shrinks and the features multiply (30 to 100
    for 8 to 10 columns), each fitting a few rows; held at ``0.9`` times the data's
    standard deviation the features describe the coarse structure (groups of rows)
    and the correlated residual model of ``noise="full"`` the linear structure.
    """
    return IBPFactorAnalysis(
        sigma_x=DEFAULT_SIGMA_X * scale,
        sigma_a=DEFAULT_SIGMA_A * scale,
        sample_hyperparameters=False,
    )


def _takes_full_noise(view) -> bool:
    """Whether the view's model is ``x = z A + Gaussian noise`` with binary ``z``."""
    return (
        isinstance(view, IBPFactorAnalysis)
        and view.likelihood in ("gaussian", "exponential")
        and not view._weighted()
    )


def _residual_covariances(views, data):
    """Each view's EM estimate of the covariance of the training residuals
    ``x - mean - Z A`` (``data`` holds the training rows' data columns, NaN where
    missing)."""
    missing = np.isnan(data)
    groups = missing_count_groups(missing)
    covariances = []
    for view in views:
        residuals = data - view.mean_ - view.Z_ @ view.components_
        # Successive views are close: EM continues from the previous view's estimate.
        start = covariances[-1] if covariances else None
        covariances.append(residual_covariance(
            residuals, missing, n_iter=10 if start is None else 3, groups=groups,
            start=start))
    return covariances


class _NoFeatures:
    """A stand-in view with no feature: its residuals are the centred data."""

    def __init__(self, mean, n_rows):
        self.mean_ = mean
        self.Z_ = np.zeros((n_rows, 0))
        self.components_ = np.zeros((0, mean.shape[0]))


def _model_input(X, mask):
    """Float64 copy of ``X`` with NaN at the missing entries, as the estimators take it."""
    return np.where(mask, np.nan, X).astype(np.float64)


def _covariate_columns(estimator, n_columns):
    """Column indices the dd-IBP uses for distances only (None when there are none)."""
    if not isinstance(estimator, DistanceDependentIBP) or estimator.covariate_columns is None:
        return None
    # Out-of-range or repeated indices are reported by the estimator's own fit.
    cols = np.asarray(estimator.covariate_columns)
    if cols.ndim != 1 or not np.issubdtype(cols.dtype, np.integer):
        return None
    return np.unique(cols[(cols >= -n_columns) & (cols < n_columns)] % n_columns)


def _data_columns(estimator, n_columns):
    """Indices of the columns the estimator models (and ``inverse_transform`` returns)."""
    covariates = _covariate_columns(estimator, n_columns)
    if covariates is None:
        return np.arange(n_columns)
    return np.setdiff1d(np.arange(n_columns), covariates)


def _adapt_to_columns(estimator, valid):
    """Point a dd-IBP's ``covariate_columns`` at the kept columns.

    Columns entirely missing are never covariates (those must be observed), but dropping
    them shifts the indices of the covariate columns after them.
    """
    if (
        valid.all()
        or not isinstance(estimator, DistanceDependentIBP)
        or estimator.covariate_columns is None
    ):
        return estimator
    n_columns = valid.size
    cols = np.asarray(estimator.covariate_columns)
    # Malformed indices are left for the estimator's own fit to report.
    if cols.ndim == 1 and np.issubdtype(cols.dtype, np.integer):
        if ((cols >= -n_columns) & (cols < n_columns)).all():
            new_index = np.cumsum(valid) - 1
            estimator.set_params(covariate_columns=new_index[cols % n_columns].tolist())
    return estimator


def _n_kept_samples(estimator) -> int:
    """Number of kept posterior samples a view can be built from (0: none)."""
    if isinstance(estimator, IBPFactorAnalysis | NoisyOrHierarchy):
        return len(getattr(estimator, "samples_", None) or ())
    return 0


def _posterior_views(estimator, data, chosen):
    """Copies of the fitted estimator, each holding one kept sample of ``chosen``.

    The estimator's ``transform`` and ``inverse_transform`` read the sample its fit
    chose; a copy told that this one sample was kept reads it instead. ``data`` holds the
    training rows' data columns (NaN where missing). With no sample chosen the fitted
    estimator is its own single view.
    """
    if len(chosen) == 0:
        return [estimator]
    views = []
    for index in chosen:
        # A shallow copy: rebuilding rebinds the fitted attributes, never mutates them.
        view = copy.copy(estimator)
        view.samples_ = [estimator.samples_[int(index)]]
        if isinstance(view, IBPFactorAnalysis):
            view._set_posterior(data - view.mean_)
        else:
            view._set_posterior()
        views.append(view)
    return views


#: The binary ``likelihood`` names of the estimators (``"bernoulli"``: the deprecated old
#: name of both).
_BINARY_LIKELIHOODS = ("noisy_or", "detection", "bernoulli")


def _noise(view):
    """``(binary, scale)``: whether the view's observations are binary, else their noise
    standard deviation (0 when the estimator does not expose one)."""
    if isinstance(view, NoisyOrHierarchy | IBPFactorAnalysis):
        # NoisyOrHierarchy(likelihood="auto") records its choice in likelihood_.
        if getattr(view, "likelihood_", view.likelihood) in _BINARY_LIKELIHOODS:
            return True, 0.0
        params = getattr(view, "likelihood_params_", {})
        return False, float(params.get("sigma_x", getattr(view, "sigma_x_", 0.0)))
    return False, float(getattr(view, "sigma_x_", 0.0))
