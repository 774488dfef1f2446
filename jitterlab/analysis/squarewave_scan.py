"""The squarewave metrics' one pass over the edges, compiled with numba.

One loop reads each edge once and keeps everything the metrics need: min/max of the periods,
half periods and duty ratios, the exact sum of P_i - T, the sums of the drift fit, and a
histogram of |P_i - T| from which the percentiles are selected exactly (a second pass over the
edges is needed only when more large deviations came than scan() could keep aside). Numpy
needed a dozen passes and a partition for the same; bench/analysis.py prints the time of this
against one np.diff pass over the same edges.
"""

from __future__ import annotations

import os
import tempfile

from jitterlab.cache import user_cache


def _numba_cache_dir() -> str:
    """Where numba keeps compiled functions: beside the package when it may write there, else a
    per-user cache (an installation the user may only read: numba would refuse to cache)."""
    for candidate in (str(user_cache() / "numba"),
                      os.path.join(tempfile.gettempdir(), f"jitterlab-numba-{os.getuid()}")):
        try:
            os.makedirs(candidate, mode=0o700, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK):
            return candidate
    return ""


if "NUMBA_CACHE_DIR" not in os.environ and not os.access(os.path.dirname(__file__), os.W_OK):
    os.environ["NUMBA_CACHE_DIR"] = _numba_cache_dir()

import numba  # noqa: E402  (after its cache directory is chosen)
import numpy as np  # noqa: E402

EXACT_NS = 1 << 16  # |P - T| below 65.5 us has one bucket per ns: percentiles there need no 2nd pass
COARSE_SHIFT = 10  # then 1024 ns buckets up to 2**26 ns (67 ms); beyond: one overflow bucket
COARSE_END = 1 << 26
N_BUCKETS = EXACT_NS + (COARSE_END >> COARSE_SHIFT) + 1
# sums are kept exact in integers per block of 1024 edges, then added compensated: no drift with n
_FLUSH = 1024
_W_EXACT = 1 << 41  # |w| below: sum l w over a block stays below 2**62
_DEV_EXACT = 1 << 26  # |P - T| below (67 ms): sum (P - T)^2 over a block stays below 2**62


@numba.njit(cache=True, nogil=True, inline="always")
def _bucket(v: int) -> int:
    if v < EXACT_NS:
        return v
    if v < COARSE_END:
        return EXACT_NS + (v >> COARSE_SHIFT)
    return N_BUCKETS - 1


@numba.njit(cache=True, nogil=True, inline="always")
def _add(total, comp, x):  # Neumaier's compensated sum
    s = total + x
    if abs(total) >= abs(x):
        comp += (total - s) + x
    else:
        comp += (x - s) + total
    return s, comp


def segments(n: int, p_lo, p_hi, h_lo, h_hi, f_lo, f_hi, m_at, m_cum) -> np.ndarray:
    """Edge ranges [start, next start) over which nothing changes, as rows
    (start, fit edge?, use half period k-1?, use period k-2?, missed edges before): the scan's
    inner loop then runs without a check per edge."""
    cuts = np.unique(np.concatenate(([2, n], p_lo + 2, p_hi + 2, h_lo + 1, h_hi + 1, f_lo,
                                     f_hi, m_at)))
    cuts = cuts[(cuts >= 2) & (cuts <= n)]
    starts = cuts[:-1]

    def inside(lo: np.ndarray, hi: np.ndarray, x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(hi, x, side="right")
        return np.append(lo, np.iinfo(np.int64).max)[k] <= x

    shift = np.concatenate(([0], m_cum))[np.searchsorted(m_at, starts, side="right")]
    rows = np.stack([starts, ~inside(f_lo, f_hi, starts), ~inside(h_lo, h_hi, starts - 1),
                     ~inside(p_lo, p_hi, starts - 2), shift], axis=1).astype(np.int64)
    return np.concatenate([rows, [[n, 0, 0, 0, 0]]])


def first_edges(p_lo, h_lo, h_hi, f_lo, f_hi, m_at, m_cum) -> np.ndarray:
    """What scan() needs about edges 0 and 1, which come before the first segment."""
    fit = [not (len(f_lo) and f_lo[0] <= k < f_hi[0]) for k in (0, 1)]
    use_h0 = not (len(h_lo) and h_lo[0] == 0)
    shift1 = int(m_cum[0]) if len(m_at) and m_at[0] <= 1 else 0
    return np.array([*fit, use_h0, shift1], dtype=np.int64)


def fit_moments(segs: np.ndarray, first: np.ndarray, center: float) -> tuple[int, float, float]:
    """Count, sum and sum of squares of x_k = K_k - center over the fitted edges, in closed
    form: within a segment x runs through consecutive values."""
    fitted = segs[:-1, 1] == 1
    y0 = (segs[:-1, 0] + segs[:-1, 4])[fitted] - center
    length = (segs[1:, 0] - segs[:-1, 0])[fitted].astype(np.float64)
    sx = float(np.sum(length * y0 + length * (length - 1) / 2))
    sxx = float(np.sum(length * y0 * y0 + y0 * length * (length - 1)
                       + (length - 1) * length * (2 * length - 1) / 6))
    count = int(length.sum())
    for k in (0, 1):
        if first[k]:
            x = k + first[3] * k - center
            count, sx, sxx = count + 1, sx + x, sxx + x * x
    return count, sx, sxx


@numba.njit(cache=True, nogil=True, inline="always")
def _block(t, k, stop, t0, shift, period, fit, use_h, use_p, dev_buf):
    """One block of scan(): its integer sums, minima and maxima; |P - T| into dev_buf. Drift
    sums: w = 2 u_k, ia = sum w, ib = sum l w with l = kk - k < _FLUSH (exact while
    |w| < _W_EXACT); sq = sum (P - T)^2 (exact while |P - T| < _DEV_EXACT)."""
    big = np.iinfo(np.int64).max
    ia = ib = wmax = sq = vmax = lmax = sum_dev = 0
    pmin, pmax, dmin, dmax = big, -big, big, -big
    for kk in range(k, stop):
        tk = t[kk]
        t1 = t[kk - 1]
        d = tk - t1
        if fit:
            w = 2 * (tk - t0) - (kk + shift) * period
            ia += w
            ib += (kk - k) * w
            wmax = max(wmax, abs(w))
        if use_h:
            dmin = min(dmin, d)
            dmax = max(dmax, d)
        if use_p:
            lead = t1 - t[kk - 2]
            p = lead + d
            pmin = min(pmin, p)
            pmax = max(pmax, p)
            lmax = max(lmax, abs(lead - d))
            dev = p - period
            sum_dev += dev
            sq += dev * dev
            dev_buf[kk - k] = abs(dev)
    if use_p and pmax >= pmin:  # max |P - T|, from the extremes instead of per edge
        vmax = max(pmax - period, period - pmin)
    return ia, ib, wmax, sq, vmax, lmax, pmin, pmax, dmin, dmax, sum_dev


@numba.njit(cache=True, nogil=True)
def scan(t, period, segs, first, center, hist, tail):
    """Walk the edges 2..n-1 by segments (see segments()); fills `hist`, returns (ints, floats).

    The |P - T| >= EXACT_NS of the used periods also go to `tail`, in order, while it has room
    (ints[8] counts them all): the percentiles then need no second pass when it held them.

    ints: pmin, pmax, dmin, dmax, sum(P - T), used periods, used half periods, fitted edges.
    floats: max |lead - d| / P over the used periods of P > 0 (the duty error), unused, sum
    (P - T)^2, Su, Sxu of the drift fit, where x_k = K_k - center (K_k = k + missed edges before
    k, the true index) and u_k = t_k - t_0 - K_k T/2 (ns). `first` describes edges 0 and 1:
    (fit edge 0?, fit edge 1?, use half period 0?, missed edges before edge 1).

    The edges go by blocks of _FLUSH whose inner loop keeps only integer sums, minima and maxima
    (the compiler vectorizes it) and the |P - T| in a buffer; the histogram is then filled from
    the buffer, and a block is read again only when it may hold a larger duty error than found
    so far (a division per edge cost more than everything else) or its sums left the exact range.
    """
    t0 = t[0]
    big = np.iinfo(np.int64).max
    pmin, pmax, dmin, dmax = big, -big, big, -big
    sum_dev = 0
    used_p = used_h = fitted = n_tail = 0
    duty = 0.0
    tot = np.zeros(3)  # compensated totals of the block sums: sumsq, Su, Sxu
    comp = np.zeros(3)
    half = period / 2.0
    su = sxu = 0.0
    for k in range(2):
        if first[k]:
            true_k = k + first[3] * k
            u = float(t[k] - t0) - true_k * half
            su += u
            sxu += (true_k - center) * u
            fitted += 1
    if first[2]:
        dmin = dmax = t[1] - t0
        used_h += 1
    tot[1], tot[2] = su, sxu
    dev_buf = np.empty(_FLUSH, dtype=np.int64)
    for s in range(segs.shape[0] - 1):
        a, b = segs[s, 0], segs[s + 1, 0]
        fit, use_h, use_p, shift = segs[s, 1], segs[s, 2], segs[s, 3], segs[s, 4]
        k = a
        while k < b:
            stop = min(b, k + _FLUSH)
            n_in = stop - k
            if fit and use_h and use_p:  # the usual case: a copy of the loop without branches
                r = _block(t, k, stop, t0, shift, period, True, True, True, dev_buf)
            else:
                r = _block(t, k, stop, t0, shift, period, fit, use_h, use_p, dev_buf)
            ia, ib, wmax, sq, vmax, lmax, bpmin, bpmax, bdmin, bdmax, bsum = r
            pmax, dmin, dmax = max(pmax, bpmax), min(dmin, bdmin), max(dmax, bdmax)
            sum_dev += bsum
            sumsq = su = sxu = 0.0
            if use_p:
                pmin = min(pmin, bpmin)
                if vmax < EXACT_NS:  # the usual block: every |P - T| has its own bucket
                    for j in range(n_in):
                        hist[dev_buf[j]] += 1
                else:
                    for j in range(n_in):
                        v = dev_buf[j]
                        hist[_bucket(v)] += 1
                        if v >= EXACT_NS:
                            if n_tail < tail.shape[0]:
                                tail[n_tail] = v
                            n_tail += 1
                if vmax < _DEV_EXACT:
                    sumsq = float(sq)
                else:  # a period off by more than 67 ms: this block's squares in floats
                    for j in range(n_in):
                        sumsq += float(dev_buf[j]) * float(dev_buf[j])
                # no period here beats the duty error found so far: lmax/bpmin bounds them all
                # and within a block that may, only a |lead - d| that reaches duty * bpmin may
                low = duty * bpmin * (1.0 - 1e-12)
                if lmax > 0 and lmax >= low:
                    for kk in range(k, stop):
                        lead = t[kk - 1] - t[kk - 2]
                        d = t[kk] - t[kk - 1]
                        x = abs(lead - d)
                        if x >= low and lead + d > 0:
                            duty = max(duty, x / (lead + d))
            if fit:
                if wmax < _W_EXACT:
                    su = ia / 2.0
                    sxu = ((k + shift - center) * ia + ib) / 2.0
                else:  # deviations beyond 18 min: the same sums in floats
                    for kk in range(k, stop):
                        true_k = kk + shift
                        u = float(t[kk] - t0) - true_k * half
                        su += u
                        sxu += (true_k - center) * u
            fitted += n_in * fit
            used_h += n_in * use_h
            used_p += n_in * use_p
            for c, v in enumerate((sumsq, su, sxu)):
                tot[c], comp[c] = _add(tot[c], comp[c], v)
            k = stop
    ints = np.array([pmin, pmax, dmin, dmax, sum_dev, used_p, used_h, fitted, n_tail],
                    dtype=np.int64)
    floats = np.array([duty, 0.0, tot[0] + comp[0], tot[1] + comp[1], tot[2] + comp[2]])
    return ints, floats


@numba.njit(cache=True, nogil=True)
def collect(t, period, p_lo, p_hi, low, out):
    """The |P_i - T| >= low of the used periods, in order, into `out` (sized by the histogram)."""
    n = t.shape[0]
    pi = 0
    w = 0
    for i in range(n - 2):
        while pi < p_hi.shape[0] and p_hi[pi] <= i:
            pi += 1
        if pi < p_lo.shape[0] and p_lo[pi] <= i:
            continue
        v = abs(t[i + 2] - t[i] - period)
        if v >= low:
            out[w] = v
            w += 1
    return w


def percentiles(t: np.ndarray, period: int, p_lo: np.ndarray, p_hi: np.ndarray,
                hist: np.ndarray, ranks: list[int], tail: np.ndarray, n_tail: int) -> list[int]:
    """The ranks-th smallest |P - T| (1-based) of the used periods, exactly.

    A rank in an exact bucket is its bucket; a rank in a coarse bucket is read from the sorted
    values >= EXACT_NS: those scan() kept in `tail`, or, when more than fit, a second pass.
    """
    cum = np.cumsum(hist)
    buckets = [int(np.searchsorted(cum, r, side="left")) for r in ranks]
    if all(b < EXACT_NS for b in buckets):
        return buckets
    below = int(cum[EXACT_NS - 1])  # values < EXACT_NS
    if n_tail <= len(tail):
        values = np.sort(tail[:n_tail])
    else:
        values = np.empty(n_tail, dtype=np.int64)
        values = np.sort(values[: collect(t, period, p_lo, p_hi, EXACT_NS, values)])
    return [b if b < EXACT_NS else int(values[r - below - 1])
            for b, r in zip(buckets, ranks, strict=True)]
