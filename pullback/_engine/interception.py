"""Interception scoped to differentiation: NumPy's and SciPy's objects are their own except
while something is being differentiated.

pullback reaches plain NumPy code through NumPy's dispatch protocols, which see a tracked
value given directly to a NumPy function. Two things escape them: a list holding tracked
values (``np.array([a, b])``, ``np.sum([1.0, a])``: NumPy converts lists in C), and the
SciPy functions written in Python whose bodies pullback cannot follow (they have rules of
their own). For those, pullback keeps a table of *swaps*, each registered once:

- an **attribute swap** puts a stand-in (``StandIn``) at ``owner.name`` (``np.stack``,
  ``np.array``): a callable that compares equal to the original, hashes,
  pickles, binds as a method and reports its signature, docstring and attributes as the
  original does, and differs from it only by ``is`` and ``type()``;
- a **code swap** gives a SciPy Python function (``scipy.special.logsumexp``, the
  ``rv_continuous.logpdf`` that ``scipy.stats.norm.logpdf`` binds) a
  trampoline for its ``__code__``, with the same parameters: the function object stays
  the one every module bound, however early it was imported, so identity, pickling and
  ``inspect.signature`` are untouched; a call with tracked values goes to the rule.

``activate()`` and ``deactivate()`` count the differentiations running in the process (a
transform's computation, a pb.jit trace, a live ``pb.param``): the first installs every
swap, the last one ending removes them all. While none runs, NumPy's and SciPy's
namespaces hold their own objects. During one, code that passes no tracked value gets
NumPy's own results and errors through the stand-ins, in every thread; what it can observe
is ``is`` against a saved reference and one more Python frame (a warning raised with
``stacklevel=2`` names pullback's line instead of the caller's).

SciPy's rules live in ``rules/scipy_*.py``, one module per SciPy module. They are imported
when the program imports that SciPy module (``_ScipyWatch``, a finder on ``sys.meta_path``
that only notes the name: the rule module itself is imported at the next activation, or at
once when the import happens during a differentiation), so ``import pullback`` imports no
SciPy module.
"""

import copyreg
import importlib
import inspect
import operator
import sys
import threading
import types
from collections import deque
from itertools import repeat

# ---------------------------------------------------------------------------- stand-ins


class _Module:
    """A module pickled by its name: unpickling imports it (and needs no pullback)."""

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return importlib.import_module, (self.name,)


def _by_reference(func):
    """What pickling ``func`` by its module and name gives: the object found there when
    unpickled (NumPy's or SciPy's own, in a process without pullback)."""
    return getattr, (_Module(func.__module__), func.__qualname__)


class StandIn:
    """A callable standing in for ``original`` at one place (``np.stack``): calls go to
    ``call``; everything else is the original's. Not a method when put in a class (as
    NumPy's builtins are not): ``BindingStandIn`` is, for originals that bind."""

    __slots__ = ("_pb_original", "_pb_call", "__wrapped__")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a class body sets its own __module__ and __doc__: the original's, here too
        for name in ("__module__", "__doc__"):
            type.__setattr__(cls, name, StandIn.__dict__[name])

    def __init__(self, original, call):
        object.__setattr__(self, "_pb_original", original)
        object.__setattr__(self, "_pb_call", call)
        object.__setattr__(self, "__wrapped__", original)  # inspect.signature, Dask

    def __call__(self, *args, **kwargs):
        return self._pb_call(*args, **kwargs)

    def __getattr__(self, name):  # __name__, _implementation (unyt), __signature__ ...
        return getattr(self._pb_original, name)

    def __setattr__(self, name, value):
        setattr(self._pb_original, name, value)

    def __dir__(self):
        return dir(self._pb_original)

    @property  # type: ignore[misc]
    def __class__(self):  # isinstance() answers for the original
        return type(self._pb_original)

    @property
    def __doc__(self):
        return self._pb_original.__doc__

    @property
    def __module__(self):
        return self._pb_original.__module__

    def __eq__(self, other):
        if other is self:
            return True
        return self._pb_original == getattr(other, "_pb_original", other) if type(
            other) in _STAND_INS else self._pb_original == other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._pb_original)

    def __repr__(self):
        return repr(self._pb_original)

    def __reduce__(self):
        original = self._pb_original
        module = sys.modules.get(getattr(original, "__module__", None) or "")
        name = getattr(original, "__qualname__", None)
        if module is not None and name and getattr(module, name, None) is self:
            return name  # found where pickle looks it up: a global, as the original is
        if module is not None and name and "." not in name:
            return _by_reference(original)
        return original.__reduce_ex__(2)


class BindingStandIn(StandIn):
    """A ``StandIn`` that binds as a method in a class, as a Python function does (and
    NumPy 2's dispatched functions do)."""

    __slots__ = ()

    def __get__(self, obj, cls=None):
        return self if obj is None else types.MethodType(self, obj)


_STAND_INS = {StandIn, BindingStandIn}


def stand_in(original, call, stand_in_type=None):
    """A stand-in for ``original`` that calls ``call``; of ``stand_in_type`` (a subclass of
    StandIn) where given, else one that binds exactly when the original does."""
    if stand_in_type is None:
        stand_in_type = BindingStandIn if hasattr(type(original), "__get__") else StandIn
    _STAND_INS.add(stand_in_type)
    return stand_in_type(original, call)


def original_of(func):
    """The original under a stand-in (the function itself otherwise)."""
    return func._pb_original if type(func) in _STAND_INS else func


# ---------------------------------------------------------------------------- code swaps

_bodies: list = []  # index -> (function, its own code's copy as a function, dispatch)


def _call(index, args, kwargs):
    """A trampoline's call: ``dispatch(func, body, args, kwargs)`` decides between the
    rule's path and the function's own body."""
    func, body, dispatch = _bodies[index]
    return dispatch(func, body, args, kwargs)


def _trampoline_code(func, index):
    """A code object with ``func``'s parameters (names, kinds, free variables) whose body
    hands its arguments to ``_call``."""
    co = func.__code__
    names = co.co_varnames
    npos, nkw = co.co_argcount, co.co_kwonlyargcount
    pos, kwonly = list(names[:npos]), list(names[npos:npos + nkw])
    k = npos + nkw
    varargs = names[k] if co.co_flags & inspect.CO_VARARGS else None
    k += varargs is not None
    varkw = names[k] if co.co_flags & inspect.CO_VARKEYWORDS else None
    params = pos[:co.co_posonlyargcount] + ["/"] * bool(co.co_posonlyargcount) + pos[
        co.co_posonlyargcount:]
    params += [f"*{varargs}"] if varargs else ["*"] if kwonly else []
    params += kwonly + ([f"**{varkw}"] if varkw else [])
    positional = "(" + "".join(f"{p}, " for p in pos) + (f"*{varargs}," if varargs else "") + ")"
    keywords = "{" + "".join(f"{k!r}: {k}, " for k in kwonly) + (
        f"**{varkw}" if varkw else "") + "}"
    body = (f"return __import__({__name__!r}, None, None, ('_call',))._call("
            f"{index}, {positional}, {keywords})")
    free = co.co_freevars
    if free:  # the same number of free variables as the closure has cells (never read)
        source = (f"def _outer():\n    {' = '.join(free)} = None\n"
                  f"    def {co.co_name}({', '.join(params)}):\n        {body}\n"
                  f"        {', '.join(free)},\n    return {co.co_name}\n")
    else:
        source = f"def {co.co_name}({', '.join(params)}):\n    {body}\n"
    namespace: dict = {}
    exec(compile(source, co.co_filename, "exec"), namespace)
    made = namespace["_outer"]() if free else namespace[co.co_name]
    code = made.__code__.replace(co_firstlineno=co.co_firstlineno, co_name=co.co_name,
                                 co_qualname=co.co_qualname) if hasattr(
        co, "co_qualname") else made.__code__.replace(co_firstlineno=co.co_firstlineno)
    if code.co_freevars != free:  # (the closure's cells pair with names in order)
        code = code.replace(co_freevars=free)
    return code


def swap_code(func, dispatch):
    """Give the Python function ``func`` a trampoline while differentiations run: a call
    goes to ``dispatch(func, body, args, kwargs)``, ``body`` being ``func``'s own code as a
    function (which ``dispatch`` calls for plain arguments). Returns ``func``."""
    if func in _code_swaps:
        return func
    body = types.FunctionType(func.__code__, func.__globals__, func.__name__,
                              func.__defaults__, func.__closure__)
    body.__kwdefaults__ = func.__kwdefaults__
    body.__qualname__ = func.__qualname__
    body.__dict__.update(func.__dict__)  # (__wrapped__: the signature a decorator keeps)
    index = len(_bodies)
    _bodies.append((func, body, dispatch))
    _body_of[func] = body
    _code_swaps[func] = (func.__code__, _trampoline_code(func, index))
    if _installed:
        func.__code__ = _code_swaps[func][1]
    return func


_code_swaps: dict = {}  # function -> (its own code, its trampoline's)
_body_of: dict = {}  # function -> its own code as a function


def body_of_swapped(func):
    """The function computing ``func``'s own body (``func`` given to ``swap_code``)."""
    return _body_of[func]

# ---------------------------------------------------------------------------- attribute swaps

_ABSENT = object()


class _Swaps:
    """The attribute swaps of one owner (a module, a class, an instance): its names, their
    replacements and the owner's own entries (``_ABSENT`` where it has none: an instance
    whose class holds the method). Installing and removing them is one ``dict.update``
    when the owner's entries are as recorded (the common case: a loop in Python over every
    name of NumPy's namespace would cost a differentiation's start 100 µs)."""

    __slots__ = ("owner", "new", "old", "names", "get", "old_values", "new_values", "plain",
                 "stale")

    def __init__(self, owner):
        self.owner, self.new, self.old, self.stale = owner, {}, {}, True

    def refresh(self):
        self.stale = False
        self.names = tuple(self.new)
        if not self.names:
            self.plain = False
            return
        self.get = operator.itemgetter(*self.names) if len(self.names) > 1 else (
            lambda own, name=self.names[0]: (own[name],))  # (a tuple, always)
        self.old_values = tuple(self.old[n] for n in self.names)
        self.new_values = tuple(self.new[n] for n in self.names)
        # one update either way: a module's namespace with every name present
        self.plain = isinstance(self.owner, types.ModuleType) and _ABSENT not in self.old_values

    def _holds(self, own, values):
        try:
            return self.get(own) == values
        except KeyError:
            return False

    def install(self):
        if self.stale:
            self.refresh()
        own = vars(self.owner)
        if self.plain and self._holds(own, self.old_values):
            own.update(self.new)
            return
        for name in self.names:  # the owner's entries changed since: record the new ones
            self.old[name] = own.get(name, _ABSENT)
            _put(self.owner, name, self.new[name])
        self.refresh()

    def remove(self):
        if self.stale:
            self.refresh()
        own = vars(self.owner)
        if self.plain and self._holds(own, self.new_values):
            own.update(self.old)
            return
        for name in self.names:  # (one rebound meanwhile keeps what it was given)
            if own.get(name, _ABSENT) is self.new[name]:
                _restore(self.owner, name, self.old[name])


_swaps: dict = {}  # id(owner) -> its _Swaps


def swap_attribute(owner, name, replacement):
    """Put ``replacement`` at ``owner.name`` while differentiations run (the last
    registration for a place wins). ``owner`` is a module, a class or an instance with a
    ``__dict__``."""
    group = _swaps.get(id(owner))
    if group is None:
        group = _swaps[id(owner)] = _Swaps(owner)
    if name not in group.new:
        own = vars(owner).get(name, _ABSENT)
        group.old[name] = own if not _installed else original_of(own)
    group.new[name] = replacement
    group.stale = True
    if _installed:
        _put(owner, name, replacement)


def unswap_attribute(owner, name):
    """Drop the swap registered at ``owner.name`` (putting back the original if in place)."""
    group = _swaps.get(id(owner))
    if group is None or name not in group.new:
        return
    if _installed and vars(owner).get(name, _ABSENT) is group.new[name]:
        _restore(owner, name, group.old[name])
    del group.new[name], group.old[name]
    group.stale = True


def _put(owner, name, replacement):
    if isinstance(owner, type):
        type.__setattr__(owner, name, replacement)
    else:
        vars(owner)[name] = replacement


def _restore(owner, name, own):
    if own is _ABSENT:
        if isinstance(owner, type):
            type.__delattr__(owner, name)
        else:
            vars(owner).pop(name, None)
    elif isinstance(owner, type):
        type.__setattr__(owner, name, own)
    else:
        vars(owner)[name] = own


def attribute_swaps():
    """Every registered attribute swap, as (owner, name, replacement)."""
    return [(g.owner, name, made) for g in _swaps.values() for name, made in g.new.items()]


# ---------------------------------------------------------------------------- pickling


def _reduce_swapped(obj):
    """Pickle a NumPy function whose place a stand-in holds (pickle's own by-name lookup
    would find the stand-in and refuse the function): by its module and name."""
    if obj in _swapped_originals:
        return _by_reference(obj)
    return obj.__reduce_ex__(2)


_swapped_originals: set = set()  # the originals of module-level stand-ins (pickled by name)
_reducer_types: set = set()  # their types, for copyreg while installed
_copyreg_saved: dict = {}

# ---------------------------------------------------------------------------- activation

_lock = threading.RLock()
_count = 0
_installed = False


def activate():
    """One more differentiation running: the first installs every swap."""
    global _count
    with _lock:
        _count += 1
        if not _installed:
            try:
                _install()
            except BaseException:  # (a SciPy rule module that failed to load): as before
                _count -= 1
                if _installed:
                    _uninstall()
                raise
        elif _pending:  # (imported in another thread while this lock was held)
            _load_pending_rules()


def deactivate():
    """One differentiation ended: the last puts NumPy's and SciPy's objects back."""
    global _count
    with _lock:
        _count -= 1
        if _count == 0 and _installed:
            _uninstall()


def _set_codes(which):
    """Every swapped function's own code (0) or trampoline (1), set in one C loop."""
    funcs = tuple(_code_swaps)
    codes = map(operator.itemgetter(which), map(_code_swaps.__getitem__, funcs))
    deque(map(setattr, funcs, repeat("__code__"), codes), 0)


def _install():
    global _installed
    _load_pending_rules()
    _installed = True
    for group in _swaps.values():
        group.install()
    _set_codes(1)
    for t in _reducer_types:
        _copyreg_saved[t] = copyreg.dispatch_table.get(t, _ABSENT)
        copyreg.dispatch_table[t] = _reduce_swapped


def _uninstall():
    global _installed
    for group in _swaps.values():
        group.remove()
    _set_codes(0)
    for t, saved in _copyreg_saved.items():
        if saved is _ABSENT:
            copyreg.dispatch_table.pop(t, None)
        else:
            copyreg.dispatch_table[t] = saved
    _copyreg_saved.clear()
    _installed = False


def replace_attributes(owner, values):
    """Put ``values`` (names to objects) into another library's ``owner`` for a stretch
    that the caller ends with ``restore_attributes``, returning what was there: how
    pb.jit's trace hears of builtins' getattr and hasattr, warnings' filters and NumPy's
    randbits while it runs (the one module that changes other libraries' namespaces)."""
    saved = {name: vars(owner).get(name, _ABSENT) for name in values}
    for name, value in values.items():
        _put(owner, name, value)
    return saved


def restore_attributes(owner, saved):
    """Put back what ``replace_attributes`` returned."""
    for name, own in saved.items():
        _restore(owner, name, own)


def swap_module_function(module, name, replacement):
    """``swap_attribute`` for a function in a module's namespace whose original pickles by
    that name (NumPy's ``np.stack``): pickling the original while the stand-in is there
    goes by reference through copyreg."""
    original = vars(module)[name]
    swap_attribute(module, name, replacement)
    if not isinstance(original, types.FunctionType) and not isinstance(original, type):
        _swapped_originals.add(original)
        _reducer_types.add(type(original))


# ---------------------------------------------------------------------------- SciPy's rules

# each SciPy module with rules, and pullback's modules holding them
SCIPY_RULES = {
    "scipy.fft": ("fft",),
    "scipy.integrate": ("integrate", "integrate_quad", "integrate_ivp"),
    "scipy.linalg": ("linalg", "linalg_functions", "linalg_decomp"),
    "scipy.signal": ("array_api", "signal"),
    "scipy.sparse": ("sparse",),
    "scipy.spatial.distance": ("spatial",),
    "scipy.special": ("array_api", "special", "special_bessel", "special_elliptic",
                      "special_integrals", "special_distributions", "special_more",
                      "special_waves"),
    "scipy.stats": ("array_api", "stats", "stats_quantiles",
                    "stats_generic"),
}
_pending: list = []  # SciPy modules imported whose rules are not loaded yet
_loaded: set = set()


def _load_pending_rules():
    while _pending:
        name = _pending.pop(0)
        for rule_module in SCIPY_RULES.get(name, ()):
            if rule_module not in _loaded:
                _loaded.add(rule_module)
                importlib.import_module(f"pullback.rules.scipy.{rule_module}")


def load_scipy_rules():
    """Register the rules of every SciPy module imported so far (the registry's listings
    call this; a differentiation does at its start)."""
    with _lock:
        _load_pending_rules()


def _imported(name):
    """The import system finished loading SciPy's module ``name``."""
    _pending.append(name)
    # imported inside a differentiation: its rules are needed now (but never wait for the
    # lock here, under the import system's: the thread holding it loads what is pending)
    if _installed and _lock.acquire(blocking=False):
        try:
            _load_pending_rules()
        finally:
            _lock.release()


class _ScipyWatch:
    """Notes when one of the SciPy modules with rules has been imported: it finds the
    module's spec with the other finders and wraps its loader for that one load (the
    module's ``__loader__`` and ``__spec__.loader`` are the real loader's)."""

    def find_spec(self, name, path=None, target=None):
        if name not in SCIPY_RULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Noting(spec.loader, name)
        return spec


class _Noting:
    def __init__(self, loader, name):
        self.loader, self.name = loader, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _imported(self.name)


def watch_scipy():
    """Note the SciPy modules imported already, and watch for the others."""
    for name in SCIPY_RULES:
        if name in sys.modules:
            _pending.append(name)
    if not any(isinstance(f, _ScipyWatch) for f in sys.meta_path):
        sys.meta_path.insert(0, _ScipyWatch())
