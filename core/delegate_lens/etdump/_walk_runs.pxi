# Included by _walk.pyx: the files' root tables, their runs and allocators, and the check
# that no table or non-empty vector is named twice.

# --- order --------------------------------------------------------------------------------
# Writers lay the tables (and vectors) of a kind out in the order they name them: flatcc
# backward, ours forward. So a table named twice shows as a position that does not continue
# its kind's strict order in the file; any other order is left to numpy as well (the walk
# declines), which sorts the positions and names a table or vector named twice.

cdef struct Order:
    int64_t last          # the last position seen in the file (-1: none yet)
    int64_t dir           # 1 forward, -1 backward, 0 not known yet


cdef inline void _order_init(Order* o) noexcept nogil:
    o.last = -1
    o.dir = 0


cdef int _order_slow(Order* o, int64_t pos) noexcept nogil:
    """:func:`_ordered` past its usual case: the first two positions of a file, or -1."""
    if o.last < 0:
        o.last = pos
        return 0
    if pos == o.last or o.dir != 0:
        return -1
    o.dir = 1 if pos > o.last else -1
    o.last = pos
    return 0


cdef inline int _ordered(Order* o, int64_t pos) noexcept nogil:
    """0 when ``pos`` continues the strict order of its kind in its file, else -1 (the
    caller starts each file with :func:`_order_init`)."""
    if (pos - o.last) * o.dir > 0:  # the usual case: one test
        o.last = pos
        return 0
    return _order_slow(o, pos)


cdef struct Seen:         # what the event loop has seen, kept across its returns
    Order events
    Order profile
    Order alloc
    Order debug
    Order meta            # non-empty delegate_debug_metadata vectors
    int64_t file          # the file all these are of (-1: none yet)
    int64_t meta_bytes    # bytes the metadata vectors claim in that file


cdef inline void _seen_init(Seen* s, int64_t file) noexcept nogil:
    _order_init(&s.events)
    _order_init(&s.profile)
    _order_init(&s.alloc)
    _order_init(&s.debug)
    _order_init(&s.meta)
    s.file = file
    s.meta_bytes = 0


cdef inline void _keep(Seen* kept, Seen* s, int64_t ev_last, int64_t ev_dir,
                       int64_t pr_last, int64_t pr_dir) noexcept nogil:
    """Store ``s``, with the event loop's local orders of event and profile tables."""
    s.events.last = ev_last
    s.events.dir = ev_dir
    s.profile.last = pr_last
    s.profile.dir = pr_dir
    kept[0] = s[0]


cdef int _named_once(Seen* s, int64_t event, int64_t prof, int64_t alloc,
                     int64_t debug) noexcept nogil:
    """The tables of an event, each named for the first time in its file: 0, else -1."""
    if _ordered(&s.events, event) < 0:
        return -1
    if prof >= 0:
        return _ordered(&s.profile, prof)
    if alloc >= 0:
        return _ordered(&s.alloc, alloc)
    if debug >= 0:
        return _ordered(&s.debug, debug)
    return 0


cdef int _metadata_once(Seen* s, int64_t vec, int64_t count, int64_t size) noexcept nogil:
    """A non-empty metadata vector at ``vec``, named for the first time in its file, and
    the file's metadata vectors claiming at most its ``size`` bytes: 0, else -1."""
    s.meta_bytes += count
    if _ordered(&s.meta, vec) < 0 or s.meta_bytes > size:
        return -1
    return 0


cdef inline int _vector_field(const uint8_t* b, Tab* t, int slot, int64_t hi, int64_t* vec,
                              int64_t* count) noexcept nogil:
    """The vector of uoffsets in field ``slot``: its first element and length (0, 0 when
    absent); -1 when malformed."""
    cdef int64_t at = _offset(b, t, slot, hi)
    vec[0] = 0
    count[0] = 0
    if at == -2:
        return -1
    if at >= 0:
        vec[0] = _vector(b, at, 4, hi, count)
        if vec[0] < 0:
            return -1
    return 0


cdef int _files(const uint8_t* b, const int64_t[::1] roots, const int64_t[::1] lo,
                const int64_t[::1] hi, uint32_t[::1] versions, int64_t[::1] run_vec,
                int64_t[::1] run_count) noexcept nogil:
    """Each file's root table: its version and its ``run_data`` vector."""
    cdef Tab t
    cdef int64_t k, at, vec, count
    for k in range(roots.shape[0]):
        if _table(b, roots[k], lo[k], hi[k], &t) < 0:
            return -1
        at = _field(b, &t, 0, 4)
        if at == -2:
            return -1
        versions[k] = 0 if at < 0 else _u32(b, at)
        if _vector_field(b, &t, 1, hi[k], &vec, &count) < 0:
            return -1
        run_vec[k] = vec
        run_count[k] = count
    return 0


cdef inline int32_t _string(Interner* it, const uint8_t* b, int64_t n, Tab* t, int slot,
                            int64_t file, int64_t lo, int64_t hi) noexcept nogil:
    """Code of the string field ``slot``: -1 absent, -2 malformed."""
    cdef int64_t at = _offset(b, t, slot, hi)
    if at == -2:
        return -2
    return _intern(it, b, n, at, file, lo, hi)


cdef inline int32_t _string_hinted(Interner* it, const uint8_t* b, int64_t n, Tab* t, int slot,
                                   int64_t file, int64_t lo, int64_t hi,
                                   int32_t* hint) noexcept nogil:
    """:func:`_string` through :func:`_intern_hinted`."""
    cdef int64_t at = _offset(b, t, slot, hi)
    if at == -2:
        return -2
    return _intern_hinted(it, b, n, at, file, lo, hi, hint)


cdef int _runs(Interner* it, const uint8_t* b, int64_t n, const int64_t[::1] lo,
               const int64_t[::1] hi, const int64_t[::1] run_vec, const int64_t[::1] run_count,
               int64_t[::1] run_file, int32_t[::1] run_name, int32_t[::1] bundled,
               int64_t[::1] alloc_vec, int64_t[::1] alloc_count, int64_t[::1] ev_vec,
               int64_t[::1] ev_count) noexcept nogil:
    """Each run's table: name, bundled input, allocator and event vectors; per file, the
    elements of those vectors may not claim more than the file's bytes (bounds the work),
    and no run table or non-empty vector is named twice (:func:`_ordered`)."""
    cdef Tab t
    cdef int64_t k, j, r = 0, at, vec, count, size, events, allocators
    cdef int bad = 0
    cdef Order runs, alloc_vecs, ev_vecs
    for k in range(run_vec.shape[0]):
        _order_init(&runs)
        _order_init(&alloc_vecs)
        _order_init(&ev_vecs)
        size = hi[k] - lo[k]
        events = 0
        allocators = 0
        for j in range(run_count[k]):
            at = _entry(b, run_vec[k] + 4 * j, hi[k])
            if at < 0 or _table(b, at, lo[k], hi[k], &t) < 0 or _ordered(&runs, at) < 0:
                return -1
            run_file[r] = k
            run_name[r] = _string(it, b, n, &t, 0, k, lo[k], hi[k])
            if run_name[r] == -2:
                return -1
            if run_name[r] >= 0:
                it.named[k] += it.lengths[run_name[r]]
            bundled[r] = _i32(b, &t, 1, -1, &bad)
            if _vector_field(b, &t, 2, hi[k], &vec, &count) < 0:
                return -1
            if count and _ordered(&alloc_vecs, vec) < 0:
                return -1
            alloc_vec[r] = vec
            alloc_count[r] = count
            allocators += count
            if _vector_field(b, &t, 3, hi[k], &vec, &count) < 0:
                return -1
            if count and _ordered(&ev_vecs, vec) < 0:
                return -1
            ev_vec[r] = vec
            ev_count[r] = count
            events += count
            r += 1
        if bad or 4 * events > size or 4 * allocators > size:
            return -1
    return 0


cdef int _allocators(Interner* it, const uint8_t* b, int64_t n, const int64_t[::1] lo,
                     const int64_t[::1] hi, const int64_t[::1] run_file,
                     const int64_t[::1] alloc_vec, const int64_t[::1] alloc_count,
                     int32_t[::1] names) noexcept nogil:
    """Each allocator's name; no allocator table is named twice (:func:`_ordered`)."""
    cdef Tab t
    cdef int64_t r, j, k, at, a = 0, file = -1
    cdef Order tables
    for r in range(run_file.shape[0]):
        k = run_file[r]
        if k != file:
            file = k
            _order_init(&tables)
        for j in range(alloc_count[r]):
            at = _entry(b, alloc_vec[r] + 4 * j, hi[k])
            if at < 0 or _table(b, at, lo[k], hi[k], &t) < 0 or _ordered(&tables, at) < 0:
                return -1
            names[a] = _string(it, b, n, &t, 0, k, lo[k], hi[k])
            if names[a] == -2:
                return -1
            if names[a] >= 0:
                it.named[k] += it.lengths[names[a]]
            a += 1
    return 0
