"""Machinery shared by the sampling estimators: validation, random streams and the loop.

:class:`BaseIBPSampler` owns the whole Markov chain Monte Carlo loop the way
:class:`sklearn.mixture._base.BaseMixture` owns EM: independent chains each with its own
random stream, burn-in, thinning, kept samples, per-iteration traces, a progress bar,
``KeyboardInterrupt`` handling and ``warm_start``, and runs the chains in parallel processes
when the estimator has ``n_jobs``. A subclass supplies a solver (see
:mod:`sklearn_ibp.solvers`), an initial state and what to do with the kept samples.
"""

from __future__ import annotations

import copy
import functools
import io
import lzma
import pickle
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from threadpoolctl import ThreadpoolController

from ._deprecation import renamed_option
from .exceptions import (
    NoFeaturesWarning,
    NonFiniteResultWarning,
    SamplingInterruptedWarning,
    SamplingStoppedError,
    warn_at_caller,
)
from .solvers import RENAMED_SOLVERS, get_solver
from .solvers._protocol import check_solver_model
from .solvers.ibp._base import TRACE_NAMES

__all__ = ["BaseIBPSampler", "NoFeaturesWarning", "NonFiniteResultWarning",
           "SamplingInterruptedWarning", "SamplingStoppedError", "TRACE_NAMES", "atomic_fit"]



#: The parameters of the sampling loop, declared once: their constraints. Every sampling
#: estimator takes them, in this order, after its model's parameters (``InfiniteEBA``
#: takes ``sample_alpha`` for ``sample_hyperparameters``); its ``__init__`` stores them
#: with :meth:`BaseIBPSampler._set_loop_parameters` and its docstring describes them
#: with :func:`loop_parameters_doc`.
LOOP_PARAMETER_CONSTRAINTS: dict = {
    "n_iter": [Interval(Integral, 1, None, closed="left")],
    "burn_in": [Interval(Integral, 0, None, closed="left"), None],
    "thin": [Interval(Integral, 1, None, closed="left")],
    "n_chains": [Interval(Integral, 1, None, closed="left")],
    "n_jobs": [Integral, None],
    "sample_hyperparameters": ["boolean"],
    "warm_start": ["boolean"],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

#: Where :func:`loop_parameters_doc` goes in an estimator's docstring (a line of its
#: Parameters section).
LOOP_PARAMETERS_DOC = "    %(loop_parameters)s\n"

_LOOP_PARAMETERS_TEXT = {
    "n_iter": """n_iter : int, default={n_iter}
    Sweeps per chain.""",
    "burn_in": """burn_in : int or None, default=None
    Sweeps discarded at the start of each chain; None discards the first half
    (``n_iter // 2``).""",
    "thin": """thin : int, default=1
    Keep every ``thin``-th sweep after the burn-in.""",
    "n_chains": """n_chains : int, default=1
    Independent chains, each from its own random stream; their kept samples are
    pooled.""",
    "n_jobs": """n_jobs : int or None, default=None
    Number of chains run at the same time when ``n_chains > 1``, in joblib worker
    processes. None means 1 unless in a :func:`joblib.parallel_config` context; -1
    uses all processors. Each chain keeps its own random stream, so the result is
    bit-identical to ``n_jobs=None`` for the same ``random_state``. In parallel the
    progress bar advances as chains finish, and a ``KeyboardInterrupt`` keeps the
    chains returned before it, in chain order (the others keep their starting state).""",
    "warm_start": """warm_start : bool, default=False
    Continue the chains of the previous ``fit`` for ``n_iter`` more sweeps, keeping
    every ``thin``-th (no burn-in), instead of starting new ones; ``n_chains`` must be
    unchanged. A chain stopped by ``KeyboardInterrupt`` continues from its last
    completed sweep.""",
    "random_state": """random_state : int, RandomState instance or None, default=None
    Seeds every chain, numba kernels included: the same seed gives the same result.""",
    "verbose": """verbose : int, default=0
    Show a progress bar of the sweeps.""",
}


def loop_parameters_doc(n_iter: int, sample_hyperparameters: str, /, **extra: str) -> str:
    """The numpydoc entries of the loop parameters, indented for a class docstring.

    Parameters
    ----------
    n_iter : int
        The estimator's default ``n_iter``.
    sample_hyperparameters : str
        The whole entry of the estimator's ``sample_hyperparameters`` (or its
        counterpart), name line included, unindented; it goes after ``n_jobs``.
    **extra : str
        Sentences appended to a parameter's description, keyed by its name.
    """
    entries = []
    for name, text in _LOOP_PARAMETERS_TEXT.items():
        text = text.format(n_iter=n_iter)  # the default
        if name in extra:
            text += "\n    " + extra.pop(name).strip().replace("\n", "\n    ")
        entries.append(text)
        if name == "n_jobs":
            entries.append(sample_hyperparameters.strip())
    if extra:
        raise ValueError(f"no loop parameter named {sorted(extra)}")
    lines = "\n".join(entries).splitlines()
    return "".join(f"    {line}\n" if line else "\n" for line in lines)


def document_loop_parameters(n_iter: int, sample_hyperparameters: str, /, **extra: str):
    """Class decorator: put :func:`loop_parameters_doc` at the class docstring's
    :data:`LOOP_PARAMETERS_DOC` line."""

    def decorate(cls):
        if cls.__doc__:  # None under python -OO
            if LOOP_PARAMETERS_DOC not in cls.__doc__:
                raise ValueError(f"{cls.__name__}'s docstring has no {LOOP_PARAMETERS_DOC!r}")
            cls.__doc__ = cls.__doc__.replace(
                LOOP_PARAMETERS_DOC, loop_parameters_doc(n_iter, sample_hyperparameters,
                                                         **extra))
        return cls

    return decorate


def warn_no_features(estimator, sigma_x) -> None:
    """Warn, saying what to do, that ``estimator``'s fit kept no feature."""
    noise = "" if sigma_x is None else f" (noise level sigma_x_={sigma_x:.3g})"
    warn_at_caller(
        f"{type(estimator).__name__} ended its fit with no features: every row is explained "
        f"as noise{noise}, and transform returns an array of shape (n_samples, 0). Try "
        "standardising X (e.g. StandardScaler), a smaller fixed sigma_x or a larger alpha, "
        "or more iterations (n_iter).",
        NoFeaturesWarning,
    )


# -- all-or-nothing fits ------------------------------------------------------------------
def _c_ordered(X):
    """``X`` itself, or a C-ordered copy of a NumPy array that is not C-contiguous: every
    fit then makes the same floating-point operations whatever the input's memory order
    (a Fortran-ordered ``X`` gave ``components_`` differing in the last bit). The input
    is never modified."""
    if isinstance(X, np.ndarray) and X.ndim >= 2 and not X.flags.c_contiguous:
        return np.ascontiguousarray(X)
    return X


def _non_finite_attributes(estimator) -> list:
    """Names of the fitted float attributes (and ``traces_`` entries) holding a NaN or an
    infinity. The NaN padding of an interrupted fit's traces is not counted."""
    bad = []
    for name, value in vars(estimator).items():
        if not name.endswith("_") or name.startswith("_") or name == "traces_":
            continue
        if isinstance(value, float | np.floating):
            if not np.isfinite(value):
                bad.append(name)
        elif (isinstance(value, np.ndarray) and value.dtype.kind == "f"
              and not np.isfinite(value).all()):
            bad.append(name)
    traces = vars(estimator).get("traces_")
    if isinstance(traces, dict):
        interrupted = bool(vars(estimator).get("interrupted_", False))
        for name, values in traces.items():
            values = np.asarray(values, dtype=float)
            if interrupted:
                values = values[~np.isnan(values)]
            if not np.isfinite(values).all():
                bad.append(f"traces_[{name!r}]")
    return bad


def atomic_fit(fit):
    """Decorator of a fitting method: all or nothing.

    - A fit that raises (any exception, a second ``KeyboardInterrupt`` included) leaves
      the estimator as it was before the call: unfitted after a first fit (so
      ``transform`` raises ``NotFittedError``, and ``n_features_in_`` is not set), or
      with its previous fit for a ``warm_start`` refit.
    - A non-C-ordered array ``X`` is copied to C order once, so results do not depend on
      the input's memory order.
    - A fit that ends with a non-finite fitted attribute or log-joint trace warns
      (:class:`~sklearn_ibp.exceptions.NonFiniteResultWarning`) naming it.
    """

    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        before = dict(self.__dict__)
        depth = before.get("_atomic_fit_depth", 0)
        try:
            self.__dict__["_atomic_fit_depth"] = depth + 1
            result = fit(self, _c_ordered(X), *args, **kwargs)
        except BaseException:
            # Restore whatever happens next: a further Ctrl-C while restoring is retried
            # so that the estimator is never left half fitted.
            while True:
                try:
                    self.__dict__.clear()
                    self.__dict__.update(before)
                    break
                except KeyboardInterrupt:  # pragma: no cover - needs a real signal
                    continue
            raise
        if depth:
            self.__dict__["_atomic_fit_depth"] = depth
        else:
            self.__dict__.pop("_atomic_fit_depth", None)
            bad = _non_finite_attributes(self)
            if bad:
                warn_at_caller(
                    f"{type(self).__name__}'s fit ended with non-finite values (NaN or "
                    f"infinity) in {', '.join(bad)}: the result is not usable. Try "
                    "standardising X (e.g. StandardScaler) or other hyperparameters.",
                    NonFiniteResultWarning,
                )
        return result

    wrapper.__atomic_fit__ = True
    return wrapper


# -- compact pickles ----------------------------------------------------------------------
def _unpack_binary(packed, shape, fortran):
    """A 0/1 int8 matrix from :class:`_BinaryPackingPickler`'s column-wise bit packing."""
    rows, cols = shape
    columns = np.unpackbits(packed, count=rows * cols).reshape(cols, rows).view(np.int8)
    return np.asfortranarray(columns.T) if fortran else np.ascontiguousarray(columns.T)


class _BinaryPackingPickler(pickle.Pickler):
    """Pickles every 0/1 int8 matrix (the feature matrices ``Z`` of the samples and the
    chains) as bits, column by column: a column that several samples share is then the
    same run of bytes in each, which the compressor stores once."""

    def reducer_override(self, obj):
        if (type(obj) is np.ndarray and obj.dtype == np.int8 and obj.ndim == 2
                and obj.size >= 64 and ((obj == 0) | (obj == 1)).all()):
            fortran = bool(obj.flags.f_contiguous and not obj.flags.c_contiguous)
            packed = np.packbits(np.ascontiguousarray(obj.T).view(np.uint8), axis=None)
            return _unpack_binary, (packed, obj.shape, fortran)
        return NotImplemented


def _pack_state(state) -> bytes:
    """A fitted estimator's ``__dict__`` as LZMA-compressed bytes, its binary matrices
    bit-packed (a tenth or less of a plain pickle for a fit that keeps many samples)."""
    buffer = io.BytesIO()
    _BinaryPackingPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return lzma.compress(buffer.getvalue(), preset=1)


def _chain_seeds(random_state, n_chains):
    """One independent 32-bit seed per chain, drawn from the estimator's random state."""
    rs = check_random_state(random_state)
    return [int(s) for s in rs.randint(0, np.iinfo(np.int32).max, size=n_chains)]


def _join_traces(old, new):
    """The traces of a warm start after the previous fit's, chain by chain: each chain's
    sweeps follow its last completed one (an interrupted fit's NaN padding is dropped, not
    left as a gap), and the rows are padded at the end with NaN to a common length.

    ``old`` and ``new`` map trace names to arrays of shape (n_chains, sweeps); a chain's
    completed sweeps are the leading ones whose ``log_joint`` is not NaN.
    """
    done_old = (~np.isnan(old["log_joint"])).sum(axis=1)
    done_new = (~np.isnan(new["log_joint"])).sum(axis=1)
    width = int((done_old + done_new).max())
    joined = {}
    for name in new:
        out = np.full((len(done_old), width), np.nan)
        for c, (a, b) in enumerate(zip(done_old, done_new, strict=True)):
            out[c, :a] = old[name][c, :a]
            out[c, a:a + b] = new[name][c, :b]
        joined[name] = out
    return joined


def _progress(total, verbose, desc):
    if not verbose:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=True)


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The thread pools of the BLAS libraries loaded in this process, found once."""
    return ThreadpoolController()


def single_blas_thread():
    """Limit BLAS to one thread until the returned limiter is restored or its ``with``
    block ends (``threadpoolctl.threadpool_limits(limits=1, user_api="blas")``).

    The loaded libraries are looked up once per process, at the first fit (NumPy's and
    SciPy's BLAS are loaded by then: the package imports both): ``threadpool_limits``
    reads ``/proc/self/maps`` and matches every loaded library on each call, which cost
    several milliseconds a fit, more than a small fit's sampling.
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def _sample_chain_in_worker(estimator, solver, chain, c, missing, burn_in, names, start,
                            stop):
    """Run sweeps ``start`` to ``stop`` of one chain in a joblib worker; return the chain,
    the solver (which a sweep may update), its trace rows and its samples.

    Module-level so that it pickles by reference. BLAS is limited to one thread as in the
    sequential loop, so both paths make the same floating-point operations.
    """
    traces = {name: np.full(estimator.n_iter, np.nan) for name in names}
    samples = []
    with single_blas_thread():
        estimator._sample_chain(solver, chain, c, missing, burn_in, traces, samples,
                                start=start, stop=stop)
    return chain, solver, traces, samples


#: The parallel chains come back to the main process this many times per fit, so that an
#: interrupt loses at most the sweeps since the last return (a tenth of the fit).
_PARALLEL_ROUNDS = 10


class BaseIBPSampler(BaseEstimator):
    """Base class of the estimators fitted by Markov chain Monte Carlo.

    Parameters are documented on the subclasses. ``n_iter`` sweeps are run per chain; the
    first ``burn_in`` are discarded and every ``thin``-th after that is kept.
    """

    _parameter_constraints: dict = dict(LOOP_PARAMETER_CONSTRAINTS)

    #: The fitting methods made all-or-nothing by :func:`atomic_fit` in every subclass
    #: that defines them.
    _atomic_methods = ("fit", "fit_counts")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls._atomic_methods:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "__atomic_fit__", False):
                setattr(cls, name, atomic_fit(method))

    def _set_loop_parameters(self, n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                             random_state, verbose):
        """Store the loop parameters (for ``__init__``; ``sample_hyperparameters``, or
        its counterpart, is stored by the estimator)."""
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    # -- the solver ---------------------------------------------------------------------
    #: The model whose solvers the estimator takes: the registry's key (see
    #: :data:`sklearn_ibp.solvers.MODELS`).
    _solver_model: str = ""

    def _new_solver(self, solver=None):
        """A new solver for a fit: the registered class a name (``solver`` by default)
        names, an old name with a ``FutureWarning``, or a clone of a solver object (the
        user's object is never changed by a fit)."""
        solver = self.solver if solver is None else solver
        if isinstance(solver, str):
            name = renamed_option(solver, RENAMED_SOLVERS, "solver")
            return get_solver(self._solver_model, name)()
        # A solver of another model (a ddIBP solver for IBPFactorAnalysis, which takes
        # duck-typed objects too) is refused here, naming ``solver``, before any data.
        check_solver_model(solver, self._solver_model, type(self).__name__)
        # safe=False: an object without get_params (a duck-typed collapsed IBP solver) is
        # deep-copied.
        return clone(solver, safe=False)

    def _resolve_solver(self):
        """The solver of a new fit, its parameters validated (an estimator adds the checks
        of its model)."""
        solver = self._new_solver()
        solver._validate_params()
        return solver

    def _burn_in(self) -> int:
        burn_in = self.n_iter // 2 if self.burn_in is None else self.burn_in
        if burn_in >= self.n_iter:
            raise ValueError(
                f"burn_in must be smaller than n_iter so that some samples are kept; got "
                f"burn_in={burn_in} and n_iter={self.n_iter}."
            )
        return burn_in

    # -- the loop -----------------------------------------------------------------------
    def _run_chains(self, X, missing, hyper, solver, init_Z):
        """Run (or continue) every chain and set ``samples_``, ``traces_`` and friends.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_dims)
            Centred data; missing entries hold a starting value.
        missing : ndarray of bool or None
            Where ``X`` is missing; those entries are redrawn from the model every sweep.
        hyper : dict
            Starting ``alpha``, ``beta``, ``sigma_x``, ``sigma_a``.
        solver : BaseIBPSolver
        init_Z : callable
            ``init_Z(rng) -> Z`` draws a starting feature matrix for a new chain.

        Notes
        -----
        New chains are initialised here, one after the other; with ``n_jobs`` (an
        estimator parameter) the sweeps then run in joblib workers, one chain per task
        (see :meth:`_sample_chains_in_parallel`), with the same results.
        """
        continuing = self.warm_start and hasattr(self, "_chains")
        if continuing:
            # A copy: the sweeps change a chain's state and generator in place, and a fit
            # that fails must leave the previous fit as it was (see atomic_fit).
            chains = copy.deepcopy(self._chains)
            if len(chains) != self.n_chains:
                raise ValueError(
                    f"warm_start=True continues the previous {len(chains)} chain(s); "
                    f"n_chains={self.n_chains} would need new ones. Set warm_start=False "
                    "to start afresh."
                )
            for chain in chains:
                # Continue on the data passed to this fit: observed entries come from X,
                # entries missing now keep the chain's current imputation. Unchanged data
                # leaves the state untouched, so the chain continues exactly.
                state = chain["state"]
                X_now = X if missing is None else np.where(missing, state.X, X)
                if not np.array_equal(X_now, state.X):
                    solver.set_data(state, X_now)
            burn_in = 0
            samples = list(self.samples_)
            old_traces = self.traces_
        else:
            chains = []
            for seed in _chain_seeds(self.random_state, self.n_chains):
                rng = np.random.default_rng(seed)
                # one BLAS thread, as for the sweeps: a start's solves are as small as
                # theirs (a 30-row fit's starting state took 3-12 ms with OpenBLAS's
                # threads on a busy machine, microseconds without)
                with single_blas_thread():
                    state = self._initialize_chain(solver, X, hyper, init_Z, rng)
                chains.append({"state": state, "rng": rng})
            burn_in = self._burn_in()
            samples = []
            old_traces = None
        n_chains = len(chains)
        # The solver names the traces (the likelihood's parameters, say) for the chains'
        # shared context; every chain records the same ones.
        trace_names = solver.trace_names(*self._solver_context(chains[0]["state"]))
        traces = {name: np.full((n_chains, self.n_iter), np.nan) for name in trace_names}
        # More workers than chains would only be started to idle.
        n_jobs = min(effective_n_jobs(getattr(self, "n_jobs", None)), n_chains)
        parallel = n_jobs > 1
        bar = _progress(n_chains * self.n_iter, self.verbose, type(self).__name__)
        interrupted = False
        # (chain index, its state before the running iteration). A KeyboardInterrupt
        # surfaces at the first bytecode after a numba kernel returns, that is in the
        # middle of a sweep, with Z and the statistics changed in place but not yet
        # n_features or the compaction; the chain is rolled back to this copy.
        guard = [None]
        # The loop's BLAS calls are on K x K and N x K matrices, far too small to gain from
        # threads; OpenBLAS threads on a busy machine slowed them tenfold (benchmarks/).
        blas_limit = single_blas_thread()
        try:
            if parallel:
                self._sample_chains_in_parallel(
                    n_jobs, solver, chains, missing, burn_in, traces, samples, bar
                )
            else:
                for c, chain in enumerate(chains):
                    rows = {name: traces[name][c] for name in traces}  # views
                    self._sample_chain(
                        solver, chain, c, missing, burn_in, rows, samples, guard, bar
                    )
        except (KeyboardInterrupt, SamplingStoppedError) as exc:
            interrupted = True
            if guard[0] is not None:
                c, state = guard[0]
                chains[c]["state"] = state
            done = int(np.sum(~np.isnan(traces["log_joint"])))
            reason = "" if isinstance(exc, KeyboardInterrupt) else f" ({exc})"
            warn_at_caller(
                f"Sampling interrupted after {done} of {n_chains * self.n_iter} "
                f"iterations{reason}; the estimator keeps the samples drawn so far.",
                SamplingInterruptedWarning,
            )
        finally:
            blas_limit.restore_original_limits()
            # Threads, or a LocalCluster the solver started for this fit.
            solver.close()
            if bar is not None:
                bar.close()
        if not samples:
            # Interrupted during burn-in: keep the current state of each started chain.
            for c, chain in enumerate(chains):
                state = chain["state"]
                samples.append(self._snapshot(solver, state, c,
                                              self._log_joint(solver, state)))
                if np.isnan(traces["log_joint"][c]).all():
                    break
        if old_traces is not None:
            traces = _join_traces(old_traces, traces)
        self._chains = chains
        if not continuing:
            # Where the traces' burn-in ends, for convergence_summary: a warm start
            # appends sweeps that are all kept, after the first fit's burn-in.
            self._trace_burn_in = burn_in
        self.samples_ = samples
        self.traces_ = traces
        self.interrupted_ = interrupted
        self.n_iter_ = int(np.sum(~np.isnan(traces["log_joint"][0])))

    def _run_variational(self, solver, *args):
        """Fit a variational solver (``solver.fit(*args, rng)``, to convergence) and keep
        its record as the chains' would be: one sample (the variational posterior), a
        trace per quantity over the iterations, no burn-in. Returns the solver's state."""
        rng = np.random.default_rng(_chain_seeds(self.random_state, 1)[0])
        state = solver.fit(*args, rng)
        self.traces_ = {name: np.asarray(values)[None, :]
                        for name, values in solver.traces(state).items()}
        self._trace_burn_in = 0
        self.samples_ = [self._snapshot(solver, state, 0, solver.log_joint(state))]
        self.n_iter_ = int(state.n_iter)
        self.interrupted_ = False
        self._chains = []
        return state

    def _sample_chain(self, solver, chain, c, missing, burn_in, traces, samples, guard=None,
                      bar=None, start=0, stop=None):
        """Run sweeps ``start`` to ``stop`` (all ``n_iter`` by default) of chain ``c``,
        filling ``traces`` and ``samples``.

        ``traces`` maps each trace name to this chain's row (length ``n_iter``), written as
        the sweeps complete, and kept samples are appended to ``samples``, so whatever was
        drawn before an exception is still there. With ``guard`` (a one-item list), the
        chain's state before the running sweep is kept in ``guard[0]`` for a rollback.
        """
        rng = chain["rng"]
        stop = self.n_iter if stop is None else stop
        for it in range(start, stop):
            if guard is not None:
                # A deep copy, or something cheaper from a solver whose sweep only ever
                # replaces the state's arrays (never writes into them).
                guard[0] = (c, solver.checkpoint(chain["state"]))
            state = chain["state"]
            self._iterate(solver, state, rng, missing)
            if guard is not None:
                guard[0] = None  # the state is whole again: nothing to undo
            log_joint = self._log_joint(solver, state)
            values = solver.trace_values(state, log_joint, *self._solver_context(state))
            for name, value in zip(traces, values, strict=True):
                traces[name][it] = value
            if it >= burn_in and (it - burn_in) % self.thin == 0:
                samples.append(self._snapshot(solver, state, c, log_joint))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(chain=c, K=values[1], log_joint=f"{log_joint:.1f}")

    def _sample_chains_in_parallel(self, n_jobs, solver, chains, missing, burn_in, traces,
                                   samples, bar):
        """Run the chains in joblib workers; the results are those of the sequential loop.

        The sweeps run in rounds (:data:`_PARALLEL_ROUNDS` per fit): in each, every chain's
        state, random generator and solver go to a worker, run the round's sweeps and come
        back advanced, so every chain draws the same numbers as in the sequential loop.
        The samples are appended chain by chain in the same order. Processes (loky) are
        preferred because the numba kernels hold the GIL; a ``joblib.parallel_config``
        backend set by the caller is honoured.

        A ``KeyboardInterrupt`` stops the workers. Every chain keeps what it drew up to
        the last round that came back whole (its state, samples and traces); the sweeps
        of the round that was running are lost, as a worker's partial work cannot be
        recovered.
        """
        # The workers need the hooks and the parameters, not earlier fits' samples.
        worker_self = object.__new__(type(self))
        worker_self.__dict__.update({k: v for k, v in self.__dict__.items()
                                     if k not in ("samples_", "traces_", "_chains")})
        n_chains = len(chains)
        # Each chain's solver: a sweep may update the solver object itself (a record, a
        # tuning), so each chain continues with the copy its worker returned.
        solvers = [solver] * n_chains
        chain_samples = [[] for _ in range(n_chains)]
        step = -(-self.n_iter // _PARALLEL_ROUNDS)
        try:
            with Parallel(n_jobs=n_jobs, prefer="processes") as parallel:
                for start in range(0, self.n_iter, step):
                    stop = min(start + step, self.n_iter)
                    # Deep copies: with a thread backend a chain interrupted mid-sweep
                    # must not leave its half-updated state in ``chains``.
                    results = parallel(
                        delayed(_sample_chain_in_worker)(
                            worker_self, solvers[c], copy.deepcopy(chain), c, missing,
                            burn_in, tuple(traces), start, stop,
                        )
                        for c, chain in enumerate(chains)
                    )
                    for c, (chain, chain_solver, rows, drawn) in enumerate(results):
                        chains[c] = chain
                        solvers[c] = chain_solver
                        for name in traces:
                            traces[name][c, start:stop] = rows[name][start:stop]
                        chain_samples[c].extend(drawn)
                    if bar is not None:
                        bar.update(n_chains * (stop - start))
                        bar.set_postfix(sweeps_done=stop)
        finally:
            # In chain order, whatever each chain drew: chain c's samples follow c - 1's.
            for drawn in chain_samples:
                samples.extend(drawn)

    def _iterate(self, solver, state, rng, missing):
        """One iteration of a chain: the solver's sweep, then its :meth:`update_state`
        (hyperparameters and missing entries), each with the estimator's context and
        options (see :meth:`_solver_context` and :meth:`_update_options`)."""
        context = self._solver_context(state)
        solver.sweep(state, *context, rng)
        solver.update_state(state, *context, rng, missing=missing, **self._update_options())

    def _solver_context(self, state) -> tuple:
        """The observation model the solver's methods take between ``state`` and ``rng``
        (its :attr:`~sklearn_ibp.solvers.Solver.context`) for a chain's state: none by
        default."""
        return ()

    def _update_options(self) -> dict:
        """Keyword arguments of the solver's ``update_state`` besides ``missing``."""
        return {"sample_hyperparameters": self.sample_hyperparameters}

    # -- what the loop asks the solver, with the estimator's context -------------------
    def _initialize_chain(self, solver, X, hyper, init, rng):
        """A new chain's state; ``init(rng)`` draws its starting point."""
        return solver.initialize(X, init(rng), hyper, rng)

    def _log_joint(self, solver, state) -> float:
        """Log joint probability of the state (the trace ``log_joint``)."""
        return solver.log_joint(state, *self._solver_context(state))

    def _snapshot(self, solver, state, chain, log_joint):
        """What is kept of a state as a sample: the solver's snapshot, with the sample's
        ``log_joint`` and ``chain``."""
        sample = solver.snapshot(state, *self._solver_context(state), chain=chain)
        sample["log_joint"] = float(log_joint)
        sample["chain"] = chain
        return sample

    def convergence_summary(self, burn_in=None):
        """Post-burn-in mean, sd, ESS, R-hat and hairiness of every scalar trace.

        See :func:`sklearn_ibp.diagnostics.convergence_summary`.

        Parameters
        ----------
        burn_in : int or None, default=None
            Leading sweeps of each chain left out; None uses the fit's burn-in.

        Returns
        -------
        summary : pandas.DataFrame or dict
            One row per trace (a dict of dicts when pandas is not installed).
        """
        from .diagnostics import convergence_summary

        return convergence_summary(self, burn_in=burn_in)

    def _best_sample(self):
        """The kept sample with the highest log joint probability."""
        return max(self.samples_, key=lambda s: s["log_joint"])

    # -- pickling ---------------------------------------------------------------------
    def __getstate__(self):
        """A fitted estimator pickles compactly: its state bit-packed and compressed
        (:func:`_pack_state`); loading it gives the same arrays, bit for bit."""
        state = super().__getstate__()
        if "samples_" not in state:
            return state
        return {"_packed_state": _pack_state(state)}

    def __copy__(self):
        # A plain shallow copy: copy.copy would otherwise go through __getstate__ and
        # compress the whole fitted state only to unpack it again.
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __setstate__(self, state):
        if "_packed_state" in state:
            state = pickle.loads(lzma.decompress(state["_packed_state"]))
        super().__setstate__(state)
