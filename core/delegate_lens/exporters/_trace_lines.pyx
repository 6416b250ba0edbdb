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


cdef inline Py_ssize_t _number(char* buf, Py_ssize_t at, int64_t t, int64_t divisor,
                               int64_t multiplier, char** frac_p,
                               Py_ssize_t* frac_n) noexcept nogil:
    """The microseconds of ``t`` ticks at ``buf + at``; the new end."""
    if divisor > 1:
        at += _digits(buf + at, t // divisor)
        memcpy(buf + at, frac_p[t % divisor], frac_n[t % divisor])
        return at + frac_n[t % divisor]
    at += _digits(buf + at, t * multiplier)
    buf[at] = 46  # '.0'
    buf[at + 1] = 48
    return at + 2


cdef inline Py_ssize_t _head(char* buf, Py_ssize_t at, Py_ssize_t i, Py_ssize_t j,
                             const char* run_text, Py_ssize_t run_n,
                             const int64_t[:, ::1] starts, const int64_t[:, ::1] durs,
                             Py_ssize_t c, char** head_p, Py_ssize_t* head_n, char** mid_p,
                             Py_ssize_t* mid_n, char** frac_p, Py_ssize_t* frac_n,
                             int64_t divisor, int64_t multiplier) noexcept nogil:
    """A slice's line up to its run number in the args (what precedes the extra args)."""
    memcpy(buf + at, head_p[c], head_n[c])
    at += head_n[c]
    memcpy(buf + at, run_text, run_n)
    at += run_n
    memcpy(buf + at, _TS, 8)
    at += 8
    at = _number(buf, at, starts[i, j], divisor, multiplier, frac_p, frac_n)
    memcpy(buf + at, _DUR, 9)
    at += 9
    at = _number(buf, at, durs[i, j], divisor, multiplier, frac_p, frac_n)
    memcpy(buf + at, mid_p[c], mid_n[c])
    at += mid_n[c]
    memcpy(buf + at, run_text, run_n)
    return at + run_n


cdef Py_ssize_t _run_plain(char* buf, Py_ssize_t at, Py_ssize_t i, Py_ssize_t r, int64_t run,
                           const int64_t[:, ::1] starts, const int64_t[:, ::1] durs,
                           const Py_ssize_t[:, ::1] cols, char** head_p, Py_ssize_t* head_n,
                           char** mid_p, Py_ssize_t* mid_n, char** frac_p,
                           Py_ssize_t* frac_n, int64_t divisor,
                           int64_t multiplier) noexcept nogil:
    """The lines of run ``i`` (no extra args); the new end."""
    cdef char run_text[24]
    cdef Py_ssize_t run_n = _digits(run_text, run), j
    for j in range(r):
        at = _head(buf, at, i, j, run_text, run_n, starts, durs, cols[i, j], head_p, head_n,
                   mid_p, mid_n, frac_p, frac_n, divisor, multiplier)
        buf[at] = 125  # '}}'
        buf[at + 1] = 125
        at += 2
    return at


cdef Py_ssize_t _run(char* buf, Py_ssize_t at, Py_ssize_t i, Py_ssize_t r, int64_t run,
                     const int64_t[:, ::1] starts, const int64_t[:, ::1] durs,
                     const Py_ssize_t[:, ::1] cols, char** head_p, Py_ssize_t* head_n,
                     char** mid_p, Py_ssize_t* mid_n, char** frac_p, Py_ssize_t* frac_n,
                     int64_t divisor, int64_t multiplier, list extras) except -1:
    """The lines of run ``i`` with their extra args; the new end."""
    cdef char run_text[24]
    cdef Py_ssize_t run_n = _digits(run_text, run), j
    cdef bytes piece
    for j in range(r):
        at = _head(buf, at, i, j, run_text, run_n, starts, durs, cols[i, j], head_p, head_n,
                   mid_p, mid_n, frac_p, frac_n, divisor, multiplier)
        piece = extras[i * r + j]
        memcpy(buf + at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))
        at += PyBytes_GET_SIZE(piece)
        buf[at] = 125  # '}}'
        buf[at + 1] = 125
        at += 2
    return at


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
    cdef Py_ssize_t ncols = len(heads), nfrac = len(fractions)
    cdef Py_ssize_t i, j, c, n, size = 0, at = 0
    cdef Py_ssize_t* ends_c = NULL
    cdef int64_t* run_c = NULL
    cdef char** head_p = NULL
    cdef Py_ssize_t* head_n = NULL
    cdef char** mid_p = NULL
    cdef Py_ssize_t* mid_n = NULL
    cdef char** frac_p = NULL
    cdef Py_ssize_t* frac_n = NULL
    cdef bytes piece
    cdef char* buf
    cdef bytearray out
    cdef list ends = []
    cdef bint has_extra = extras is not None
    for i in range(k):
        for j in range(r):
            if starts[i, j] < 0 or starts[i, j] >= limit or durs[i, j] < 0 or durs[i, j] >= limit:
                return None
    head_p = <char**>malloc(ncols * sizeof(char*))
    head_n = <Py_ssize_t*>malloc(ncols * sizeof(Py_ssize_t))
    mid_p = <char**>malloc(ncols * sizeof(char*))
    mid_n = <Py_ssize_t*>malloc(ncols * sizeof(Py_ssize_t))
    frac_p = <char**>malloc((nfrac + 1) * sizeof(char*))
    frac_n = <Py_ssize_t*>malloc((nfrac + 1) * sizeof(Py_ssize_t))
    if not (head_p and head_n and mid_p and mid_n and frac_p and frac_n):
        free(head_p); free(head_n); free(mid_p); free(mid_n); free(frac_p); free(frac_n)
        raise MemoryError()
    try:
        for c in range(ncols):
            piece = heads[c]
            head_p[c] = PyBytes_AS_STRING(piece)
            head_n[c] = PyBytes_GET_SIZE(piece)
            piece = mids[c]
            mid_p[c] = PyBytes_AS_STRING(piece)
            mid_n[c] = PyBytes_GET_SIZE(piece)
        for c in range(nfrac):
            piece = fractions[c]
            frac_p[c] = PyBytes_AS_STRING(piece)
            frac_n[c] = PyBytes_GET_SIZE(piece)
        # room: every static piece, and 24 bytes for each number and run
        for i in range(k):
            for j in range(r):
                c = cols[i, j]
                size += head_n[c] + mid_n[c] + 2 + 8 + 9 + 4 * 24 + 8
                if has_extra:
                    size += len(<bytes>extras[i * r + j])
        out = into if into is not None and len(into) >= size else bytearray(size)
        buf = PyByteArray_AS_STRING(out)
        ends_c = <Py_ssize_t*>malloc((k + 1) * sizeof(Py_ssize_t))
        run_c = <int64_t*>malloc((k + 1) * sizeof(int64_t))
        if ends_c == NULL or run_c == NULL:
            raise MemoryError()
        if has_extra:  # Python objects to read: with the GIL
            for i in range(k):
                at = _run(buf, at, i, r, <int64_t>runs[i], starts, durs, cols, head_p, head_n,
                          mid_p, mid_n, frac_p, frac_n, divisor, multiplier, extras)
                ends_c[i] = at
        else:  # the writer thread runs meanwhile
            for i in range(k):
                run_c[i] = runs[i]
            with nogil:
                for i in range(k):
                    at = _run_plain(buf, at, i, r, run_c[i], starts, durs, cols, head_p,
                                    head_n, mid_p, mid_n, frac_p, frac_n, divisor, multiplier)
                    ends_c[i] = at
        for i in range(k):
            ends.append(ends_c[i])
    finally:
        free(head_p); free(head_n); free(mid_p); free(mid_n); free(frac_p); free(frac_n)
        free(ends_c); free(run_c)
    return out, ends


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


cdef const char* _CLIPPED = b', "clipped": true'


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
    cdef Py_ssize_t k = positions.shape[0], r = start.shape[1], ncols = len(heads)
    cdef Py_ssize_t nfrac = len(fractions), i, j, c, p, n, at = 0, size = 0, run_n
    cdef int64_t s, e
    cdef bint cut
    cdef char run_text[24]
    cdef char** head_p = NULL
    cdef Py_ssize_t* head_n = NULL
    cdef char** mid_p = NULL
    cdef Py_ssize_t* mid_n = NULL
    cdef char** frac_p = NULL
    cdef Py_ssize_t* frac_n = NULL
    cdef int64_t* stack = NULL
    cdef int64_t* run_c = NULL
    cdef Py_ssize_t* ends_c = NULL
    cdef bint bad = False
    cdef bytes piece
    cdef bytearray out
    cdef char* buf
    cdef list ends = []
    head_p = <char**>malloc(ncols * sizeof(char*))
    head_n = <Py_ssize_t*>malloc(ncols * sizeof(Py_ssize_t))
    mid_p = <char**>malloc(ncols * sizeof(char*))
    mid_n = <Py_ssize_t*>malloc(ncols * sizeof(Py_ssize_t))
    frac_p = <char**>malloc((nfrac + 1) * sizeof(char*))
    frac_n = <Py_ssize_t*>malloc((nfrac + 1) * sizeof(Py_ssize_t))
    stack = <int64_t*>malloc((r + 1) * sizeof(int64_t))
    run_c = <int64_t*>malloc((k + 1) * sizeof(int64_t))
    ends_c = <Py_ssize_t*>malloc((k + 1) * sizeof(Py_ssize_t))
    try:
        if not (head_p and head_n and mid_p and mid_n and frac_p and frac_n and stack
                and run_c and ends_c):
            raise MemoryError()
        for c in range(ncols):
            piece = heads[c]
            head_p[c] = PyBytes_AS_STRING(piece)
            head_n[c] = PyBytes_GET_SIZE(piece)
            piece = mids[c]
            mid_p[c] = PyBytes_AS_STRING(piece)
            mid_n[c] = PyBytes_GET_SIZE(piece)
            size += head_n[c] + mid_n[c]
        for c in range(nfrac):
            piece = fractions[c]
            frac_p[c] = PyBytes_AS_STRING(piece)
            frac_n[c] = PyBytes_GET_SIZE(piece)
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
                    memcpy(buf + at, head_p[c], head_n[c])
                    at += head_n[c]
                    memcpy(buf + at, run_text, run_n)
                    at += run_n
                    memcpy(buf + at, _TS, 8)
                    at += 8
                    at = _number(buf, at, s - origin, divisor, multiplier, frac_p, frac_n)
                    memcpy(buf + at, _DUR, 9)
                    at += 9
                    at = _number(buf, at, e - s, divisor, multiplier, frac_p, frac_n)
                    memcpy(buf + at, mid_p[c], mid_n[c])
                    at += mid_n[c]
                    memcpy(buf + at, run_text, run_n)
                    at += run_n
                    if cut:
                        memcpy(buf + at, _CLIPPED, 17)
                        at += 17
                    buf[at] = 125  # '}}'
                    buf[at + 1] = 125
                    at += 2
                if bad:
                    break
                ends_c[i] = at
        if bad:
            return None
        for i in range(k):
            ends.append(ends_c[i])
    finally:
        free(head_p); free(head_n); free(mid_p); free(mid_n); free(frac_p); free(frac_n)
        free(stack); free(run_c); free(ends_c)
    return out, ends


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
