"""The protocol every solver implements, and the registry of solvers by model and name.

A solver is a small, clonable parameter holder (a :class:`sklearn.base.BaseEstimator`)
that runs one inference algorithm for one model. The estimators drive every solver through
the methods and flags declared on :class:`Solver`; none of them asks what class of solver
it holds. Each family's base class (:class:`~sklearn_ibp.solvers.BaseIBPSolver`,
:class:`~sklearn_ibp.solvers.ExplicitFeatureSolver`,
:class:`~sklearn_ibp.solvers.BaseDPSolver`, ...) inherits from it.

The call forms differ by family in one way only: a family whose chains need an observation
model (the explicit-feature IBP samplers and the hierarchy sampler take a likelihood
object, the DP samplers a base measure) passes it between ``state`` and ``rng``; the others
take ``(state, rng)``. :attr:`Solver.context` names that argument.

Registering a solver is one line, :func:`register_solver` (or the class decorator form);
the estimators find it with :func:`get_solver` and list the names with
:func:`solver_names`.
"""

from __future__ import annotations

import copy

from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, StrOptions

__all__ = ["MODELS", "Solver", "SolverNameOptions", "SolverOf", "check_solver_model",
           "get_solver", "register_solver", "registered_solvers", "solver_names"]

#: The models a solver can serve, and the estimator that fits each.
MODELS = {
    "ibp": "IBPFactorAnalysis",
    "ddibp": "DistanceDependentIBP",
    "dp": "DPMixture",
    "hierarchy": "NoisyOrHierarchy",
    "eba": "InfiniteEBA",
}


class Solver(BaseEstimator):
    """The protocol of every solver: the flags and methods an estimator relies on.

    A subclass sets :attr:`model` and :attr:`name` (unique within the model), the flags
    that apply, and implements :meth:`initialize` and :meth:`sweep`; the other methods
    have defaults that suit a solver with nothing to say. Constructor arguments are the
    solver's tuning parameters and are stored untouched (scikit-learn's convention), so
    ``solver__window`` can be tuned by a grid search.

    Attributes
    ----------
    model : str
        The model the solver samples, a key of :data:`MODELS`: ``"ibp"``, ``"ddibp"``,
        ``"dp"``, ``"hierarchy"`` or ``"eba"``.
    name : str
        The name ``solver=`` takes, unique within :attr:`model`.
    context : str or None
        The observation model the family's methods take between ``state`` and ``rng``
        (``"likelihood"``, ``"base"``), or None when they take ``(state, rng)``.
    explicit : bool
        Whether the state keeps the feature values ``A`` explicit (and the solver takes a
        likelihood object), as opposed to integrating them out.
    variational : bool
        Whether the solver optimises a variational posterior (its :meth:`fit` runs to
        convergence) instead of sweeping a Markov chain.
    exact : bool
        Whether the chain targets the exact posterior; an approximate solver says in its
        docstring what it approximates.
    can_bound_features : bool
        Whether the solver can honour a bound on the number of features
        (``max_features``).
    handles_missing : bool
        Whether the solver takes data with missing entries.
    starts_empty : bool
        Whether a chain is best started with no feature (the solver adds them as the data
        support them) rather than from a draw of the prior.
    likelihoods : tuple of str
        The likelihood names the solver can serve (latent feature models).
    """

    model: str = ""
    name: str = ""
    context: str | None = None
    explicit: bool = False
    variational: bool = False
    exact: bool = True
    can_bound_features: bool = False
    handles_missing: bool = False
    starts_empty: bool = False
    likelihoods: tuple = ()
    #: The constructor arguments' constraints (scikit-learn's parameter validation).
    _parameter_constraints: dict = {}

    @property
    def bounds_features(self) -> bool:
        """Former name of :attr:`can_bound_features` (kept for one release)."""
        return self.can_bound_features

    # -- the protocol --------------------------------------------------------------------
    def initialize(self, *args, **kwargs):  # pragma: no cover - abstract
        """A new chain's state from the data and a starting point.

        The arguments are the family's (for instance ``(X, Z, hyper, rng)`` for the
        collapsed IBP samplers, ``(X, labels, alpha, base, rng)`` for the DP samplers).

        Returns
        -------
        state : object
            The chain's state; the solver's other methods update it in place.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement initialize")

    def sweep(self, state, *args):  # pragma: no cover - abstract
        """Update every latent variable of ``state`` once, in place.

        Parameters
        ----------
        state : object
            A state from :meth:`initialize`.
        *args
            ``rng`` (a :class:`numpy.random.Generator`), preceded by the family's
            :attr:`context` object where it has one.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement sweep")

    def update_state(self, state, *args, sample_hyperparameters=True, missing=None):
        """The updates of one iteration that follow :meth:`sweep`: the hyperparameters
        from their conditionals and the missing entries of the data.

        The default does nothing (a solver whose sweep already draws them). The loop in
        :class:`~sklearn_ibp.base.BaseIBPSampler` calls it after every sweep.

        Parameters
        ----------
        state : object
            A state from :meth:`initialize`.
        *args
            As for :meth:`sweep`.
        sample_hyperparameters : bool, default=True
            Whether to draw the hyperparameters (the estimator's parameter).
        missing : ndarray of bool or None, default=None
            Where the data are missing, for the solvers that impute them.
        """

    def log_joint(self, state, *args) -> float:  # pragma: no cover - abstract
        """Log joint probability of the state (the trace ``log_joint``).

        Parameters
        ----------
        state : object
            A state from :meth:`initialize`.
        *args
            The family's :attr:`context` object where it has one.

        Returns
        -------
        log_joint : float
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement log_joint")

    def trace_names(self, *args) -> tuple:
        """The names of the scalar traces the loop records every iteration.

        The first is always ``"log_joint"``; the default records nothing else.

        Parameters
        ----------
        *args
            The family's :attr:`context` object where it has one (the likelihood's
            parameters are traced by name).

        Returns
        -------
        names : tuple of str
        """
        return ("log_joint",)

    def trace_values(self, state, log_joint, *args) -> tuple:
        """The values of :meth:`trace_names` for ``state``, in that order.

        Parameters
        ----------
        state : object
            A state from :meth:`initialize`.
        log_joint : float
            What :meth:`log_joint` returned for it this iteration.
        *args
            The family's :attr:`context` object where it has one.

        Returns
        -------
        values : tuple
        """
        return (log_joint,)

    def snapshot(self, state, *args, chain=0) -> dict:
        """What is kept of a state as a posterior sample: copies of its arrays.

        The loop adds the sample's ``"log_joint"`` and ``"chain"``. The default keeps a
        deep copy of the whole state; each family keeps what its estimator needs.

        Parameters
        ----------
        state : object
            A state from :meth:`initialize`.
        *args
            The family's :attr:`context` object where it has one.
        chain : int, default=0
            The index of the chain (a family that draws something for the sample seeds
            a generator of its own with it, leaving the chain's stream untouched).

        Returns
        -------
        sample : dict
        """
        return {"state": copy.deepcopy(state)}

    def checkpoint(self, state):
        """A copy of ``state`` to roll back to if a sweep is interrupted.

        The default is a deep copy; a solver whose sweep only ever replaces the state's
        arrays (never writes into them) can return something cheaper.
        """
        return copy.deepcopy(state)

    def close(self) -> None:
        """Release what the solver started for a fit (threads, a cluster): nothing by
        default."""


# -- the registry -------------------------------------------------------------------------
_REGISTRY: dict[str, dict[str, type]] = {model: {} for model in MODELS}
#: Registered lazily: (model, name) -> "module:attribute" imported on first use.
_LAZY: dict[str, dict[str, str]] = {model: {} for model in MODELS}


def register_solver(cls=None, *, model=None, name=None):
    """Register a solver class under ``(model, name)``: its own attributes by default.

    Usable as a call, ``register_solver(MySolver)``, or a class decorator. Registering
    another class under a name already taken raises ``ValueError``.

    Parameters
    ----------
    cls : type
        A :class:`Solver` subclass.
    model, name : str or None
        The key; None takes the class's :attr:`Solver.model` and :attr:`Solver.name`.

    Returns
    -------
    cls : type
        The class, unchanged.
    """
    if cls is None:
        return lambda c: register_solver(c, model=model, name=name)
    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise TypeError(f"cls must be a subclass of Solver; got {cls!r}.")
    model = cls.model if model is None else model
    name = cls.name if name is None else name
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}; got {model!r}.")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string; got {name!r}.")
    registered = _REGISTRY[model].get(name)
    if registered is not None and registered is not cls:
        raise ValueError(
            f"a solver named {name!r} is already registered for model {model!r} "
            f"({registered.__name__}); choose another name."
        )
    _REGISTRY[model][name] = cls
    return cls


def _register_lazy(model, name, target):
    """Register ``"module:attribute"`` under ``(model, name)``, imported on first use
    (the data-parallel solvers, which import the solvers)."""
    _LAZY[model][name] = target


def _resolve_lazy(model):
    import importlib

    for name, target in list(_LAZY[model].items()):
        module, attribute = target.split(":")
        register_solver(getattr(importlib.import_module(module), attribute),
                        model=model, name=name)
        del _LAZY[model][name]


def registered_solvers(model) -> dict:
    """The solver classes registered for ``model``, by name (a new dict)."""
    _check_model(model)
    _resolve_lazy(model)
    return dict(_REGISTRY[model])


def solver_names(model) -> list:
    """The names ``solver=`` takes for ``model``, sorted (without importing lazy ones)."""
    _check_model(model)
    return sorted({*_REGISTRY[model], *_LAZY[model]})


def get_solver(model, name) -> type:
    """The solver class registered for ``model`` under ``name``.

    Raises
    ------
    ValueError
        If no solver of that name is registered for the model; the message lists the
        names that are.
    """
    _check_model(model)
    if name not in _REGISTRY[model]:
        _resolve_lazy(model)
    try:
        return _REGISTRY[model][name]
    except (KeyError, TypeError):
        raise ValueError(
            f"solver must be one of {solver_names(model)} for the {model!r} model "
            f"({MODELS[model]}); got {name!r}."
        ) from None


def check_solver_model(solver, model, estimator) -> None:
    """Refuse, with a ``ValueError`` naming ``solver``, a solver object of another model.

    An object that is not a :class:`Solver` (a duck-typed solver) is let through: the
    estimator's own checks apply to it.
    """
    if isinstance(solver, Solver) and solver.model != model:
        raise ValueError(
            f"solver must be a solver of the {model!r} model for {estimator} (one of "
            f"{solver_names(model)} or an object of such a class); got "
            f"{type(solver).__name__}, a solver of the {solver.model!r} model "
            f"({MODELS.get(solver.model, 'no estimator')})."
        )


def _check_model(model):
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}; got {model!r}.")


class SolverNameOptions(StrOptions):
    """Parameter constraint: a solver name registered for ``model`` (read from the
    registry when checked, so a solver registered after the estimator's module was
    imported is accepted by name), or one of ``extra``.

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    extra : set of str, default=()
        Names accepted besides the registered ones (``"auto"``).
    """

    def __init__(self, model, extra=()):
        _check_model(model)
        self.model = model
        self.extra = frozenset(extra)
        super().__init__(set())

    @property
    def options(self):
        return {*self.extra, *solver_names(self.model)}

    @options.setter
    def options(self, value):  # set by StrOptions.__init__; the registry is the truth
        pass


class SolverOf(HasMethods):
    """Parameter constraint: a :class:`Solver` object of ``model``.

    A solver of another model (a DP sampler given to an IBP estimator) or an object that
    is not a solver fails the estimator's parameter validation, whose message names
    ``solver`` and lists what it takes, before any data is read. (A subclass of
    scikit-learn's ``HasMethods``, the constraint kind its validation takes that is
    closest to this one: an object with the protocol's methods.)

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    """

    def __init__(self, model):
        super().__init__(["initialize", "sweep"])
        _check_model(model)
        self.model = model

    def is_satisfied_by(self, val):
        return isinstance(val, Solver) and val.model == self.model

    def __str__(self):
        return (f"a solver of the {self.model!r} model (an instance of a "
                f"sklearn_ibp.solvers.Solver subclass with model={self.model!r})")
