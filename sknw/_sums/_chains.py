"""Squaring chains: Gaussian and Laplacian heads whose coefficients are powers
of two apart take their terms by squaring instead of ``exp``."""

from dataclasses import dataclass

import numpy as np

from ._base import _FLOOR_VALUE, EXP_FLOOR, _rescale

#: Most squarings between a log-linear head evaluated by ``exp`` and a head
#: derived from it: each squaring doubles the relative error of a term, so a
#: derived term is within ``2**12 * 2**-53`` (5e-13) of its ``exp``.
MAX_SQUARINGS = 12

#: Coefficients whose ratio is within this relative distance of a power of two
#: ``2**s`` are taken as exactly ``2**s`` apart (bandwidths ``sqrt(2)`` apart
#: are so only up to rounding): the terms that can matter in a sum, of log
#: weight above ``-40``, then change by less than ``40 * RATIO_TOLERANCE``.
RATIO_TOLERANCE = 2.0**-46

#: Chain values are kept at least ``exp(CHAIN_FLOOR)``: their squares are then
#: normal floats (a subnormal result makes a multiplication many times slower),
#: at least ``exp(2 * CHAIN_FLOOR)``, the floor of the derived heads.
CHAIN_FLOOR = EXP_FLOOR / 2

_CHAIN_VALUE = float(np.exp(CHAIN_FLOOR))

_CHAIN_FLOOR_VALUE = _CHAIN_VALUE * _CHAIN_VALUE


class _SquareChains:
    """The terms ``exp(coef * D)`` of the log-linear heads of one pass.

    A head whose coefficient is ``2**s`` times that of another (a bandwidth
    ``sqrt(2)**s`` times smaller for a Gaussian) takes its terms as the other's
    squared ``s`` times, ``exp(c D)**(2**s) = exp(2**s c D)``: a multiplication
    instead of ``exp``. Heads are taken from the smallest ``|coef|`` (widest
    bandwidth) up; each derives from the nearest such head at most
    :data:`MAX_SQUARINGS` squarings from an ``exp``, else it is evaluated.

    Floors are those of :func:`_exp`, at ``exp(EXP_FLOOR)``: a head's chain
    values (the ones squared) are raised to ``exp(CHAIN_FLOOR)``, so a derived
    head's squares below ``exp(2 * CHAIN_FLOOR)`` are exactly those whose
    arguments are below the floor, and subtracting that value makes their
    terms exactly 0. A head none of whose terms in a tile reach the floor is
    skipped there, with the heads derived from it.
    """

    def __init__(self, coefs, fused, size):
        order = sorted(fused, key=lambda h: -coefs[h])
        depth, self.children, self.plan = {}, dict.fromkeys(order, 0), []
        for i, h in enumerate(order):
            best = None
            for p in order[:i]:
                with np.errstate(over="ignore"):
                    ratio = coefs[h] / coefs[p]
                if not np.isfinite(ratio):
                    continue
                s = round(float(np.log2(ratio)))
                if (
                    1 <= s <= MAX_SQUARINGS - depth[p]
                    and abs(ratio / 2.0**s - 1.0) <= RATIO_TOLERANCE
                    and (best is None or (s, depth[p]) < (best[1], depth[best[0]]))
                ):
                    best = (p, s)
            parent, squarings = best if best is not None else (None, 0)
            depth[h] = 0 if parent is None else depth[parent] + squarings
            if parent is not None:
                self.children[parent] += 1
            self.plan.append((h, coefs[h], parent, squarings))
        self.size = size
        self.pool = []

    def _buffer(self, shape):
        raw = self.pool.pop() if self.pool else np.empty(self.size)
        return raw, raw[: shape[0] * shape[1]].reshape(shape)

    def tile(self, t, out):
        """Yield ``(head, E)`` for every log-linear head: ``E`` its tile of
        terms (valid until the next one is asked for), after moving the head's
        shift in ``out[head]`` to ``coef * dmin``, for the :class:`ExcessTile`
        ``t``."""
        state = _ChainState(dict(self.children))
        for h, coef, parent, squarings in self.plan:
            with np.errstate(over="ignore", invalid="ignore"):
                _rescale(out[h], t.rows, coef * t.dmin)
                zero = not coef * t.gap >= EXP_FLOOR
                lowest = np.min(coef * t.excess, initial=0.0)
            keep = self.children[h] > 0
            src, inherit, zero = self._source(parent, keep, zero, state)
            if zero:
                # Every term is below the floor: 0, as are the derived heads'.
                if keep:
                    state.chain[h] = None
                continue
            buf = self._output(h, parent, keep, inherit, src, t, state)
            if parent is None:
                floor, floor_value = _exp_terms(t.D, coef, lowest, buf), _FLOOR_VALUE
            else:
                floor = _square_terms(src, buf, squarings, lowest, state, parent)
                floor_value = _CHAIN_FLOOR_VALUE
            E = buf
            if floor:
                E = np.subtract(buf, floor_value, out=t.target)
            elif keep and t.copy:
                E = t.target
                np.copyto(E, buf)
            if keep:
                state.raised[h] = not lowest >= CHAIN_FLOOR
                state.chain[h] = buf
            yield h, E
            if keep and state.raised[h]:
                np.maximum(buf, _CHAIN_VALUE, out=buf)

    def _source(self, parent, keep, zero, state):
        """The parent's chain values, whether this head takes over their
        buffer (the parent's last derived head squares them in place), and
        whether every term is 0."""
        if parent is None:
            return None, False, zero
        src = state.chain[parent]
        state.pending[parent] -= 1
        last = not state.pending[parent] and src is not None
        inherit = last and keep
        if last and not inherit:
            self.pool.append(state.raw[parent])
        zero = zero or src is None
        if zero and inherit:
            self.pool.append(state.raw[parent])
        return src, inherit, zero

    def _output(self, h, parent, keep, inherit, src, t, state):
        """Where a head's terms go: its parent's buffer, a buffer of its own
        for a head others derive from, else the tile's target."""
        if inherit:
            state.raw[h] = state.raw[parent]
            return src
        if keep:
            state.raw[h], buf = self._buffer(t.D.shape)
            return buf
        return t.target


class _ChainState:
    """Per-tile bookkeeping of :meth:`_SquareChains.tile`: derived heads still
    to come per parent, chain values (None: all zero), their raw buffers and
    whether they were raised to the chain floor."""

    def __init__(self, pending):
        self.pending = pending
        self.chain, self.raw, self.raised = {}, {}, {}


@dataclass
class ExcessTile:
    """The tile the log-linear heads share.

    ``D`` holds the excess of each distance over its row's smallest so far
    (masked entries at ``inf``), ``excess`` each row's largest, ``gap`` the
    tile's smallest and ``dmin`` this tile's smallest distance per row;
    ``target`` is a buffer for terms, ``rows`` the tile's query rows.
    ``copy``: the caller changes the terms, so never yield a chain's own
    values.
    """

    D: np.ndarray
    dmin: np.ndarray
    gap: float
    excess: np.ndarray
    target: np.ndarray
    rows: slice
    copy: bool


def _exp_terms(D, coef, lowest, buf):
    """``exp(coef * D)`` into ``buf``, floored where some argument (the
    smallest, ``lowest``) is below :data:`EXP_FLOOR`; returns whether it was."""
    floor = not lowest >= EXP_FLOOR
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(D, coef, out=buf)
    if floor:
        np.maximum(buf, EXP_FLOOR, out=buf)
    np.exp(buf, out=buf)
    return floor


def _square_terms(src, buf, squarings, lowest, state, parent):
    """The parent's chain values ``src`` squared ``squarings`` times into
    ``buf``; returns whether the derived floor applies.

    Squares of raised chain values sit at the derived floor, so a floored head
    squares raised values only (masked zeros included), and raises each
    intermediate square too.
    """
    floor = state.raised[parent] or not lowest >= EXP_FLOOR
    if floor and not state.raised[parent]:
        np.maximum(src, _CHAIN_VALUE, out=src)
        state.raised[parent] = True
    np.multiply(src, src, out=buf)
    for _ in range(squarings - 1):
        if floor:
            np.maximum(buf, _CHAIN_VALUE, out=buf)
        np.multiply(buf, buf, out=buf)
    return floor
