# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The timeline writers' loops in C: :func:`track_order`, each run's slices in track order
(what the Inspector's ``block_slices`` sorts with numpy), :func:`nest_runs`, the stack walk
of ``delegate_lens.exporters._slices.nest``, and :func:`run_lines`, chrome-trace's slice
lines: the text :class:`_ChromeBlock.text` makes with one
``%`` per run (``delegate_lens.exporters._chrome_trace``), byte for byte, written straight
from the tick columns into one buffer (no Python int, tuple or format per slice).

A slice's line is ``head[col] RUN ', "ts": ' TS ', "dur": ' DUR mid[col] RUN EXTRA '}}'``;
a number is its microseconds: ``ticks / divisor`` as the integer and the fraction's text
(``fractions[ticks % divisor]``), or ``ticks * multiplier`` and ``.0``. A value that text
cannot print exactly as the float's repr (negative, or ``limit`` or more) makes
:func:`run_lines` return None: the Python path prints those.
"""

import numpy as np

from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef const char* _TS = b', "ts": '
cdef const char* _DUR = b', "dur": '
cdef const char* _CLIPPED = b', "clipped": true'


cdef struct _Texts:
    # the text around a slice's numbers, by column (``heads``, ``mids``), and the
    # fraction texts of the microseconds, pointing into bytes the caller holds
    Py_ssize_t ncols
    Py_ssize_t nfrac
    char** head_p
    Py_ssize_t* head_n
    char** mid_p
    Py_ssize_t* mid_n
    char** frac_p
    Py_ssize_t* frac_n
    int64_t divisor
    int64_t multiplier


cdef int _texts_open(_Texts* t, list heads, list mids, list fractions, int64_t divisor,
                     int64_t multiplier) except -1:
    """Point ``t`` at the bytes of ``heads``, ``mids`` and ``fractions`` (they must outlive
    it); :func:`_texts_close` frees what this allocates, even when it raised."""
    cdef Py_ssize_t c
    cdef bytes piece
    t.head_p = NULL
    t.head_n = NULL
    t.mid_p = NULL
    t.mid_n = NULL
    t.frac_p = NULL
    t.frac_n = NULL
    t.ncols = len(heads)
    t.nfrac = len(fractions)
    t.divisor = divisor
    t.multiplier = multiplier
    t.head_p = <char**>malloc((t.ncols + 1) * sizeof(char*))
    t.head_n = <Py_ssize_t*>malloc((t.ncols + 1) * sizeof(Py_ssize_t))
    t.mid_p = <char**>malloc((t.ncols + 1) * sizeof(char*))
    t.mid_n = <Py_ssize_t*>malloc((t.ncols + 1) * sizeof(Py_ssize_t))
    t.frac_p = <char**>malloc((t.nfrac + 1) * sizeof(char*))
    t.frac_n = <Py_ssize_t*>malloc((t.nfrac + 1) * sizeof(Py_ssize_t))
    if not (t.head_p and t.head_n and t.mid_p and t.mid_n and t.frac_p and t.frac_n):
        raise MemoryError()
    for c in range(t.ncols):
        piece = heads[c]
        t.head_p[c] = PyBytes_AS_STRING(piece)
        t.head_n[c] = PyBytes_GET_SIZE(piece)
        piece = mids[c]
        t.mid_p[c] = PyBytes_AS_STRING(piece)
        t.mid_n[c] = PyBytes_GET_SIZE(piece)
    for c in range(t.nfrac):
        piece = fractions[c]
        t.frac_p[c] = PyBytes_AS_STRING(piece)
        t.frac_n[c] = PyBytes_GET_SIZE(piece)
    return 0


cdef void _texts_close(_Texts* t) noexcept:
    free(t.head_p)
    free(t.head_n)
    free(t.mid_p)
    free(t.mid_n)
    free(t.frac_p)
    free(t.frac_n)
    t.head_p = t.mid_p = t.frac_p = NULL
    t.head_n = t.mid_n = t.frac_n = NULL


cdef inline Py_ssize_t _digits(char* out, int64_t value) noexcept nogil:
    """``value`` (>= 0) in decimal at ``out``; the number of bytes."""
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, i
    if value == 0:
        out[0] = 48
        return 1
    while value > 0:
        tmp[n] = <char>(48 + value % 10)
        value //= 10
        n += 1
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


cdef inline Py_ssize_t _number(char* buf, Py_ssize_t at, int64_t t,
                               const _Texts* x) noexcept nogil:
    """The microseconds of ``t`` ticks at ``buf + at``; the new end."""
    if x.divisor > 1:
        at += _digits(buf + at, t // x.divisor)
        memcpy(buf + at, x.frac_p[t % x.divisor], x.frac_n[t % x.divisor])
        return at + x.frac_n[t % x.divisor]
    at += _digits(buf + at, t * x.multiplier)
    buf[at] = 46  # '.0'
    buf[at + 1] = 48
    return at + 2


cdef inline Py_ssize_t _line(char* buf, Py_ssize_t at, const _Texts* x, Py_ssize_t c,
                             const char* run_text, Py_ssize_t run_n, int64_t ts,
                             int64_t dur) noexcept nogil:
    """A slice's line (column ``c``) up to its run number in the args: what precedes the
    extra args; the new end."""
    memcpy(buf + at, x.head_p[c], x.head_n[c])
    at += x.head_n[c]
    memcpy(buf + at, run_text, run_n)
    at += run_n
    memcpy(buf + at, _TS, 8)
    at += 8
    at = _number(buf, at, ts, x)
    memcpy(buf + at, _DUR, 9)
    at += 9
    at = _number(buf, at, dur, x)
    memcpy(buf + at, x.mid_p[c], x.mid_n[c])
    at += x.mid_n[c]
    memcpy(buf + at, run_text, run_n)
    return at + run_n


cdef inline Py_ssize_t _close_line(char* buf, Py_ssize_t at) noexcept nogil:
    buf[at] = 125  # '}}'
    buf[at + 1] = 125
    return at + 2


cdef list _ends(const Py_ssize_t* ends_c, Py_ssize_t k):
    """Where each of ``k`` runs' lines end, as a list."""
    cdef Py_ssize_t i
    cdef list out = []
    for i in range(k):
        out.append(ends_c[i])
    return out


def run_lines(
    list heads,
    list mids,
    const int64_t[:, ::1] starts,
    const int64_t[:, ::1] durs,
    const Py_ssize_t[:, ::1] cols,
    list runs,
    object extras,
    int64_t divisor,
    int64_t multiplier,
    list fractions,
    int64_t limit,
    bytearray into=None,
):
    """The lines of the runs of one chunk (rows of ``starts``, ``durs``, ``cols``) in a
    bytearray, and the offset where each run's lines end; None when a value is out of the
    exact range. ``extras``: None, or one bytes per slice (run by run). The lines go into
    ``into`` when it is large enough (it is never resized: views of it may be alive), else
    into a new bytearray; the bytes after the last offset are left as they were."""
    cdef Py_ssize_t k = starts.shape[0], r = starts.shape[1]
    cdef Py_ssize_t i, j, c, size = 0, at = 0, run_n
    cdef Py_ssize_t* ends_c = NULL
    cdef int64_t* run_c = NULL
    cdef _Texts x
    cdef char run_text[24]
    cdef bytes piece
    cdef char* buf
    cdef bytearray out
    cdef bint has_extra = extras is not None
    for i in range(k):
        for j in range(r):
            if starts[i, j] < 0 or starts[i, j] >= limit or durs[i, j] < 0 or durs[i, j] >= limit:
                return None
    try:
        _texts_open(&x, heads, mids, fractions, divisor, multiplier)
        # room: every static piece, and 24 bytes for each number and run
        for i in range(k):
            for j in range(r):
                c = cols[i, j]
                size += x.head_n[c] + x.mid_n[c] + 2 + 8 + 9 + 4 * 24 + 8
                if has_extra:
                    size += len(<bytes>extras[i * r + j])
        out = into if into is not None and len(into) >= size else bytearray(size)
        buf = PyByteArray_AS_STRING(out)
        ends_c = <Py_ssize_t*>malloc((k + 1) * sizeof(Py_ssize_t))
        run_c = <int64_t*>malloc((k + 1) * sizeof(int64_t))
        if ends_c == NULL or run_c == NULL:
            raise MemoryError()
        for i in range(k):
            run_c[i] = runs[i]
        if has_extra:  # Python objects to read: with the GIL
            for i in range(k):
                run_n = _digits(run_text, run_c[i])
                for j in range(r):
                    at = _line(buf, at, &x, cols[i, j], run_text, run_n, starts[i, j],
                               durs[i, j])
                    piece = extras[i * r + j]
                    memcpy(buf + at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))
                    at = _close_line(buf, at + PyBytes_GET_SIZE(piece))
                ends_c[i] = at
        else:  # the writer's other threads run meanwhile
            with nogil:
                for i in range(k):
                    run_n = _digits(run_text, run_c[i])
                    for j in range(r):
                        at = _line(buf, at, &x, cols[i, j], run_text, run_n, starts[i, j],
                                   durs[i, j])
                        at = _close_line(buf, at)
                    ends_c[i] = at
        return out, _ends(ends_c, k)
    finally:
        _texts_close(&x)
        free(ends_c)
        free(run_c)


def block_lines(
    list heads,
    list mids,
    const int64_t[:, ::1] start,
    const int64_t[:, ::1] end,
    const uint8_t[:, ::1] clipped,
    const Py_ssize_t[:, ::1] order,
    const Py_ssize_t[::1] positions,
    list runs,
    int64_t origin,
    int64_t divisor,
    int64_t multiplier,
    list fractions,
    int64_t limit,
    bytearray into=None,
):
    """:func:`run_lines` from a block's slices as they are (``Slices``: ``start``, ``end``,
    ``clipped``, each run's track ``order``) for the runs at ``positions``: each run's
    slices taken in track order and nested (the stack walk of :func:`nest_runs`) as they
    are written, a clipped slice's args ending ``"clipped": true``. None when a value is
    out of the exact range (the caller then nests with numpy and prints in Python)."""
    cdef Py_ssize_t k = positions.shape[0], r = start.shape[1]
    cdef Py_ssize_t i, j, c, p, n, at = 0, size = 0, run_n
    cdef int64_t s, e
    cdef bint cut
    cdef char run_text[24]
    cdef _Texts x
    cdef int64_t* stack = NULL
    cdef int64_t* run_c = NULL
    cdef Py_ssize_t* ends_c = NULL
    cdef bint bad = False
    cdef bytearray out
    cdef char* buf
    try:
        _texts_open(&x, heads, mids, fractions, divisor, multiplier)
        stack = <int64_t*>malloc((r + 1) * sizeof(int64_t))
        run_c = <int64_t*>malloc((k + 1) * sizeof(int64_t))
        ends_c = <Py_ssize_t*>malloc((k + 1) * sizeof(Py_ssize_t))
        if not (stack and run_c and ends_c):
            raise MemoryError()
        for c in range(x.ncols):
            size += x.head_n[c] + x.mid_n[c]
        for i in range(k):
            run_c[i] = runs[i]
        # room: each run's static text (every column once), 24 bytes per number and run
        size = k * (size + r * (2 + 8 + 9 + 4 * 24 + 17 + 8))
        out = into if into is not None and len(into) >= size else bytearray(size)
        buf = PyByteArray_AS_STRING(out)
        with nogil:
            for i in range(k):
                p = positions[i]
                run_n = _digits(run_text, run_c[i])
                n = 0
                for j in range(r):
                    c = order[p, j]
                    s = start[p, c]
                    e = end[p, c]
                    while n > 0 and stack[n - 1] <= s and not (stack[n - 1] == s and s == e):
                        n -= 1
                    cut = clipped[p, c] != 0
                    if n > 0 and e > stack[n - 1]:
                        e = stack[n - 1]
                        cut = True
                    stack[n] = e
                    n += 1
                    if s - origin < 0 or s - origin >= limit or e - s < 0 or e - s >= limit:
                        bad = True
                        break
                    at = _line(buf, at, &x, c, run_text, run_n, s - origin, e - s)
                    if cut:
                        memcpy(buf + at, _CLIPPED, 17)
                        at += 17
                    at = _close_line(buf, at)
                if bad:
                    break
                ends_c[i] = at
        if bad:
            return None
        return out, _ends(ends_c, k)
    finally:
        _texts_close(&x)
        free(stack)
        free(run_c)
        free(ends_c)


def nest_runs(const int64_t[:, ::1] start, const int64_t[:, ::1] end):
    """``nest(start, end)`` (``_slices``): each run's stack walk in C, every run in turn."""
    cdef Py_ssize_t k = start.shape[0], r = start.shape[1], i, j, n
    cdef int64_t s, e
    out = np.array(end, dtype=np.int64, copy=True)
    cut = np.zeros((k, r), dtype=np.uint8)
    depth = np.zeros((k, r), dtype=np.int32)
    cdef int64_t[:, ::1] o = out
    cdef uint8_t[:, ::1] c = cut
    cdef int32_t[:, ::1] d = depth
    cdef int64_t* stack = <int64_t*>malloc((r + 1) * sizeof(int64_t))  # open slices' ends
    if stack == NULL:
        raise MemoryError()
    with nogil:
        for i in range(k):
            n = 0
            for j in range(r):
                s = start[i, j]
                e = end[i, j]
                while n > 0 and stack[n - 1] <= s and not (stack[n - 1] == s and s == e):
                    n -= 1
                d[i, j] = <int32_t>n
                if n > 0 and e > stack[n - 1]:
                    e = stack[n - 1]
                    c[i, j] = 1
                stack[n] = e
                n += 1
                o[i, j] = e
    free(stack)
    return out, cut.view(np.bool_), depth


cdef inline bint _before(Py_ssize_t a, Py_ssize_t b, const int64_t* s, const int64_t* e,
                         const int64_t* lv) noexcept nogil:
    """Slice ``a`` goes strictly before ``b``: by start, level, zero length first, longest."""
    if s[a] != s[b]:
        return s[a] < s[b]
    if lv[a] != lv[b]:
        return lv[a] < lv[b]
    if (e[a] > s[a]) != (e[b] > s[b]):
        return e[b] > s[b]
    return e[a] > e[b]


def track_order(
    const int64_t[:, ::1] start, const int64_t[:, ::1] end, const int64_t[::1] levels
):
    """``np.lexsort((-end, end > start, levels, start), axis=-1)`` by a stable insertion
    sort of each run (a run's rows are nearly in track order: a call or ``Method::execute``
    is logged after what it holds); None when a run needs more than a few moves per slice
    (then the numpy sort, whose cost does not depend on the order)."""
    cdef Py_ssize_t k = start.shape[0], r = start.shape[1], i, j, m, x
    cdef Py_ssize_t budget = 8 * r + 64, moves
    order = np.empty((k, r), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] o = order
    cdef const int64_t* lv = &levels[0] if r else NULL
    cdef bint far = False
    with nogil:
        for i in range(k):
            moves = 0
            for j in range(r):
                x = j
                m = j
                while m > 0 and _before(x, o[i, m - 1], &start[i, 0], &end[i, 0], lv):
                    o[i, m] = o[i, m - 1]
                    m -= 1
                moves += j - m
                o[i, m] = x
            if moves > budget:
                far = True
                break
    return None if far else order
