# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The ETDump decoder's compiled walk: every table, vector and offset of one buffer
(one file, or many laid out by ``joined_layout``) visited in one pass of C loops.

It makes exactly the checks of the numpy decoder (:mod:`delegate_lens.etdump._reader`,
:class:`~delegate_lens.etdump._buffer.Tables`): every read inside the file it started in,
vtables well formed, fields inside their tables, uoffsets forward and inside the file,
vector lengths that fit, no file asking for more vector elements than it has bytes, at
most one member per ``Event``, strings in bounds, valid UTF-8 and (per file) not claiming
more bytes than the file has; and, as numpy's default limits ask
(:mod:`delegate_lens.etdump._limits`), no table or non-empty vector named twice. It
counts the bytes of the strings named; the caller holds them to their limit. It never
raises for a bad buffer: :func:`walk` returns None and the caller decodes with numpy,
which names the first problem. Debug ``Value`` tables are left to numpy (their positions
are returned).
"""

import sys

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy

# Event members (EventColumns.kind)
cdef enum:
    PROFILE = 1
    ALLOCATION = 2
    DEBUG = 3

cdef bint _BIG_ENDIAN = sys.byteorder != "little"  # the loads below assume little-endian

include "_walk_reads.pxi"
include "_walk_strings.pxi"
include "_walk_runs.pxi"


# Columns that most files leave at their default (no delegate ids, metadata, allocations or
# debug entries) are allocated only when an event first needs them: the walk stops there,
# the column is made (default-filled up to that event) and the walk resumes at that event.
cdef enum:
    DDI_INT = 1
    DDI_STR = 2
    META = 4
    ALLOCATOR = 8
    ALLOC_SIZE = 16
    ENTRY = 32

_LAZY = (  # bit -> (column name, dtype, default) of each column made on first need
    (DDI_INT, (("delegate_debug_id_int", np.int32, -1),)),
    (DDI_STR, (("delegate_debug_id_str", np.int32, -1),)),
    (META, (("metadata_offset", np.int64, 0), ("metadata_length", np.int64, -1))),
    (ALLOCATOR, (("allocator_id", np.int32, 0),)),
    (ALLOC_SIZE, (("allocation_size", np.uint64, 0),)),
    (ENTRY, (("debug_entry", np.int64, -1),)),
)

_ALWAYS = ("kind", "name", "chain_index", "instruction_id", "start_time", "end_time")
_ALWAYS_WIDEST_FIRST = (
    ("chain_index", np.int64),
    ("start_time", np.uint64),
    ("end_time", np.uint64),
    ("name", np.int32),
    ("instruction_id", np.int32),
    ("kind", np.uint8),
)

cdef struct Cursor:
    int64_t r          # the run to go on with
    int64_t j          # its event to go on with
    int64_t e          # that event's position in the columns
    int64_t stop       # return (2) when e reaches this
    int have           # the lazy columns made (bits)
    int need           # the lazy columns the event at e needs (when returning 1)
    int set            # the columns always made that some event set (bits, _ALWAYS order)
    int64_t again      # the event returned for (1): its tables were counted (-1: none)


cdef int _events(Interner* it, const uint8_t* b, int64_t n, const int64_t[::1] lo,
                 const int64_t[::1] hi, const int64_t[::1] run_file, const int64_t[::1] ev_vec,
                 const int64_t[::1] ev_count, Cursor* cur, uint8_t[::1] kind, int32_t[::1] name,
                 int64_t[::1] chain, int32_t[::1] instruction, int32_t[::1] ddi_int,
                 int32_t[::1] ddi_str, uint64_t[::1] start, uint64_t[::1] end,
                 int64_t[::1] meta_off, int64_t[::1] meta_len, int32_t[::1] allocator,
                 uint64_t[::1] alloc_size, int64_t[::1] entry, int32_t[::1] hints,
                 Seen* named) noexcept nogil:
    """Every event from ``cur``: which member is set, and that member's fields (defaults
    elsewhere). Returns 0 when done, -1 for a malformed buffer (or a table or non-empty
    vector named twice: ``named``), 1 when the event at ``cur`` needs lazy columns not made
    yet (``cur.need``), 2 at ``cur.stop``."""
    cdef Tab t, m
    cdef int64_t r, j, k, at, member, prof, alloc, debug, count, e = cur.e, h
    cdef int64_t again = cur.again  # the event returned for last time (-1: none)
    cdef int bad = 0, need, have = cur.have, seen = cur.set
    cdef Seen once = named[0]  # (stored back on return)
    # the orders of event and profile tables, in locals (registers) for the usual event
    cdef int64_t ev_last = once.events.last, ev_dir = once.events.dir
    cdef int64_t pr_last = once.profile.last, pr_dir = once.profile.dir
    cdef Layout ev_layout, pr_layout
    ev_layout.vt = -1
    ev_layout.file = -1
    pr_layout.vt = -1
    pr_layout.file = -1
    cdef uint8_t v_kind
    cdef int32_t v_name, v_instruction, v_ddi_int, v_ddi_str, v_allocator
    cdef int64_t v_chain, v_meta_off, v_meta_len, v_entry
    cdef uint64_t v_start, v_end, v_alloc_size
    j = cur.j
    for r in range(cur.r, run_file.shape[0]):
        k = run_file[r]
        h = hi[k]
        if k != once.file:
            _seen_init(&once, k)
            ev_last, ev_dir, pr_last, pr_dir = -1, 0, -1, 0
        while j < ev_count[r]:
            if e >= cur.stop:
                cur.r = r
                cur.j = j
                cur.e = e
                cur.set = seen
                _keep(named, &once, ev_last, ev_dir, pr_last, pr_dir)
                return 2
            at = _entry(b, ev_vec[r] + 4 * j, h)
            if at < 0 or _layout(b, at, k, lo[k], h, &ev_layout, 3, _EVENT_SIZES) < 0:
                return -1
            prof = _offset_at(b, _at(&ev_layout, at, 0), h)
            alloc = _offset_at(b, _at(&ev_layout, at, 1), h)
            debug = _offset_at(b, _at(&ev_layout, at, 2), h)
            if prof == -2 or alloc == -2 or debug == -2:
                return -1
            if (prof >= 0) + (alloc >= 0) + (debug >= 0) > 1:
                return -1
            # no table named twice (the event returned for last time was counted then)
            if (at - ev_last) * ev_dir > 0 and (prof - pr_last) * pr_dir > 0 and prof >= 0:
                ev_last = at  # the usual event: both tables in their order
                pr_last = prof
            elif e != again:
                once.events.last, once.events.dir = ev_last, ev_dir
                once.profile.last, once.profile.dir = pr_last, pr_dir
                if _named_once(&once, at, prof, alloc, debug) < 0:
                    return -1
                ev_last, ev_dir = once.events.last, once.events.dir
                pr_last, pr_dir = once.profile.last, once.profile.dir
            v_kind = 0
            v_name = -1
            v_chain = 0
            v_instruction = -1
            v_ddi_int = -1
            v_ddi_str = -1
            v_start = 0
            v_end = 0
            v_meta_off = 0
            v_meta_len = -1
            v_allocator = 0
            v_alloc_size = 0
            v_entry = -1
            if prof >= 0:
                if _layout(b, prof, k, lo[k], h, &pr_layout, 8, _PROFILE_SIZES) < 0:
                    return -1
                v_kind = PROFILE
                at = _offset_at(b, _at(&pr_layout, prof, 0), h)
                v_name = -2 if at == -2 else _intern_hinted(it, b, n, at, k, lo[k], h, &hints[j])
                v_chain = _i32_at(b, _at(&pr_layout, prof, 1), 0, &bad)
                v_instruction = _i32_at(b, _at(&pr_layout, prof, 2), -1, &bad)
                v_ddi_int = _i32_at(b, _at(&pr_layout, prof, 3), -1, &bad)
                at = _offset_at(b, _at(&pr_layout, prof, 4), h)
                v_ddi_str = -2 if at == -2 else _intern(it, b, n, at, k, lo[k], h)
                member = _offset_at(b, _at(&pr_layout, prof, 5), h)
                if v_name == -2 or v_ddi_str == -2 or member == -2:
                    return -1
                if member >= 0:
                    count = 0
                    v_meta_off = _vector(b, member, 1, h, &count)
                    if v_meta_off < 0:
                        return -1
                    if count and e != again and _metadata_once(&once, member, count,
                                                               h - lo[k]) < 0:
                        return -1
                    v_meta_len = count
                v_start = _x64_at(b, _at(&pr_layout, prof, 6), &bad)
                v_end = _x64_at(b, _at(&pr_layout, prof, 7), &bad)
            elif alloc >= 0:
                if _table(b, alloc, lo[k], h, &m) < 0:
                    return -1
                v_kind = ALLOCATION
                v_allocator = _i32(b, &m, 0, 0, &bad)
                v_alloc_size = _x64(b, &m, 1, &bad)
            elif debug >= 0:
                if _table(b, debug, lo[k], h, &m) < 0:
                    return -1
                v_kind = DEBUG
                v_chain = <int64_t>_x64(b, &m, 0, &bad)
                v_instruction = _i32(b, &m, 1, -1, &bad)
                v_entry = _offset(b, &m, 2, h)
                v_ddi_int = _i32(b, &m, 3, -1, &bad)
                v_ddi_str = _string(it, b, n, &m, 4, k, lo[k], h)
                v_name = _string_hinted(it, b, n, &m, 5, k, lo[k], h, &hints[j])
                if v_entry == -2 or v_ddi_str == -2 or v_name == -2:
                    return -1
            if bad:
                return -1
            need = 0
            if v_ddi_int != -1:
                need |= DDI_INT
            if v_ddi_str != -1:
                need |= DDI_STR
            if v_meta_len != -1 or v_meta_off != 0:
                need |= META
            if v_allocator != 0:
                need |= ALLOCATOR
            if v_alloc_size != 0:
                need |= ALLOC_SIZE
            if v_entry != -1:
                need |= ENTRY
            if need & ~have:
                cur.r = r
                cur.j = j
                cur.e = e
                cur.need = need & ~have
                cur.set = seen
                cur.again = e
                _keep(named, &once, ev_last, ev_dir, pr_last, pr_dir)
                return 1
            # (only now: an event returned for above comes again, and must not count twice)
            if v_name >= 0:
                it.named[k] += it.lengths[v_name]
            if v_ddi_str >= 0:
                it.named[k] += it.lengths[v_ddi_str]
            kind[e] = v_kind
            name[e] = v_name
            chain[e] = v_chain
            instruction[e] = v_instruction
            start[e] = v_start
            end[e] = v_end
            seen |= ((v_kind != 0) | (v_name != -1) << 1 | (v_chain != 0) << 2
                     | (v_instruction != -1) << 3 | (v_start != 0) << 4 | (v_end != 0) << 5)
            if have & DDI_INT:
                ddi_int[e] = v_ddi_int
            if have & DDI_STR:
                ddi_str[e] = v_ddi_str
            if have & META:
                meta_off[e] = v_meta_off
                meta_len[e] = v_meta_len
            if have & ALLOCATOR:
                allocator[e] = v_allocator
            if have & ALLOC_SIZE:
                alloc_size[e] = v_alloc_size
            if have & ENTRY:
                entry[e] = v_entry
            e += 1
            j += 1
        j = 0
    cur.r = run_file.shape[0]
    cur.j = 0
    cur.e = e
    cur.set = seen
    _keep(named, &once, ev_last, ev_dir, pr_last, pr_dir)
    return 0


def walk(const uint8_t[::1] data, const int64_t[::1] roots, const int64_t[::1] lo,
         const int64_t[::1] hi, release=None, int64_t batch=1 << 18):
    """Walk the ETDumps whose root tables are at ``roots`` (file ``k`` spans
    ``lo[k] .. hi[k]`` of ``data``). Returns a dict of numpy arrays, or None when any
    file is malformed (decode with numpy to learn why), or names a table or non-empty
    vector twice (or in an order writers never use: numpy sorts out which). String fields
    are codes into ``strings`` (-1 absent; codes in order of first use), debug entries the
    positions of their ``Value`` tables (-1 absent); ``string_bytes`` is, per file, the
    bytes of the strings named, once per offset. Columns no event sets are left out.

    ``release``, when given, is called after every ``batch`` events (a mapped file's
    reader drops the pages read so far: the walk holds only a batch's pages at once)."""
    cdef int64_t files = roots.shape[0]
    cdef int status
    if _BIG_ENDIAN or data.shape[0] == 0 or files == 0 or lo.shape[0] != files or hi.shape[0] != files:
        return None
    cdef const uint8_t* b = &data[0]
    cdef int64_t nbuf = data.shape[0]
    cdef int64_t k
    for k in range(files):  # the caller's bounds must lie in the buffer
        if lo[k] < 0 or hi[k] > data.shape[0] or lo[k] > hi[k]:
            return None
    versions = np.empty(files, np.uint32)
    run_vec = np.empty(files, np.int64)
    run_count = np.empty(files, np.int64)
    cdef uint32_t[::1] versions_v = versions
    cdef int64_t[::1] run_vec_v = run_vec
    cdef int64_t[::1] run_count_v = run_count
    with nogil:
        status = _files(b, roots, lo, hi, versions_v, run_vec_v, run_count_v)
    if status < 0:
        return None
    cdef Interner it
    if _intern_init(&it, files) < 0:
        _intern_free(&it)
        raise MemoryError()
    try:
        found = _walk_runs(&it, b, nbuf, roots, lo, hi, run_vec, run_count, release, batch)
        if found is None:
            return None
        found.update(versions=versions)
        string_bytes = np.empty(files, np.int64)
        for k in range(files):
            string_bytes[k] = it.named[k]
        found["string_bytes"] = string_bytes
        strings = []
        for k in range(it.count):
            strings.append((<const char*>b)[it.starts[k] : it.starts[k] + it.lengths[k]].decode())
        found["strings"] = strings
        return found
    except UnicodeDecodeError:
        return None
    finally:
        _intern_free(&it)


cdef object _walk_runs(Interner* it, const uint8_t* b, int64_t nbuf, const int64_t[::1] roots,
                       const int64_t[::1] lo, const int64_t[::1] hi, run_vec, run_count,
                       release, int64_t batch):
    cdef int status
    cdef int64_t[::1] run_vec_v = run_vec
    cdef int64_t[::1] run_count_v = run_count
    runs = int(run_count.sum())
    run_file = np.empty(runs, np.int64)
    run_name = np.empty(runs, np.int32)
    bundled = np.empty(runs, np.int32)
    alloc_vec = np.empty(runs, np.int64)
    alloc_count = np.empty(runs, np.int64)
    ev_vec = np.empty(runs, np.int64)
    ev_count = np.empty(runs, np.int64)
    cdef int64_t[::1] run_file_v = run_file
    cdef int32_t[::1] run_name_v = run_name
    cdef int32_t[::1] bundled_v = bundled
    cdef int64_t[::1] alloc_vec_v = alloc_vec
    cdef int64_t[::1] alloc_count_v = alloc_count
    cdef int64_t[::1] ev_vec_v = ev_vec
    cdef int64_t[::1] ev_count_v = ev_count
    with nogil:
        status = _runs(it, b, nbuf, lo, hi, run_vec_v, run_count_v, run_file_v, run_name_v, bundled_v,
                       alloc_vec_v, alloc_count_v, ev_vec_v, ev_count_v)
    if status < 0:
        return None
    allocator_names = np.empty(int(alloc_count.sum()), np.int32)
    cdef int32_t[::1] allocator_names_v = allocator_names
    with nogil:
        status = _allocators(it, b, nbuf, lo, hi, run_file_v, alloc_vec_v, alloc_count_v,
                             allocator_names_v)
    if status < 0:
        return None
    n = int(ev_count.sum())
    # the columns every file uses, views of one allocation (one page-fault burst, huge
    # pages when large), widest first so that each view is aligned; the others (_LAZY)
    # when an event first needs them
    block = np.empty(max(n, 1) * 33, np.uint8)
    out = {}
    at = 0
    for column, dtype in _ALWAYS_WIDEST_FIRST:
        size = n * np.dtype(dtype).itemsize
        out[column] = block[at : at + size].view(dtype)
        at += size
    none64 = np.empty(0, np.int64)
    none32 = np.empty(0, np.int32)
    cdef uint8_t[::1] kind = out["kind"]
    cdef int32_t[::1] name = out["name"]
    cdef int64_t[::1] chain = out["chain_index"]
    cdef int32_t[::1] instruction = out["instruction_id"]
    cdef int32_t[::1] ddi_int = none32
    cdef int32_t[::1] ddi_str = none32
    cdef uint64_t[::1] start = out["start_time"]
    cdef uint64_t[::1] end = out["end_time"]
    cdef int64_t[::1] meta_off = none64
    cdef int64_t[::1] meta_len = none64
    cdef int32_t[::1] allocator = none32
    cdef uint64_t[::1] alloc_size = np.empty(0, np.uint64)
    cdef int64_t[::1] entry = none64
    # per position in a run, the name code the previous run had there (-1: none yet)
    cdef int32_t[::1] hints = np.full(max(int(ev_count.max()) if runs else 0, 1), -1, np.int32)
    cdef Seen named
    _seen_init(&named, -1)
    cdef Cursor cur
    cur.r = 0
    cur.j = 0
    cur.e = 0
    cur.have = 0
    cur.need = 0
    cur.set = 0
    cur.again = -1
    cur.stop = batch if release is not None and batch > 0 else n + 1
    while True:
        with nogil:
            status = _events(it, b, nbuf, lo, hi, run_file_v, ev_vec_v, ev_count_v, &cur, kind,
                             name, chain, instruction, ddi_int, ddi_str, start, end, meta_off,
                             meta_len, allocator, alloc_size, entry, hints, &named)
        if status == 0:
            break
        if status < 0:
            return None
        if status == 2:
            release()
            cur.stop += batch
            continue
        for bit, columns in _LAZY:  # status 1: make what the event at cur.e needs
            if cur.need & bit:
                for column, dtype, default in columns:
                    out[column] = np.full(n, default, dtype)
                cur.have |= bit
        if cur.have & DDI_INT:
            ddi_int = out["delegate_debug_id_int"]
        if cur.have & DDI_STR:
            ddi_str = out["delegate_debug_id_str"]
        if cur.have & META:
            meta_off = out["metadata_offset"]
            meta_len = out["metadata_length"]
        if cur.have & ALLOCATOR:
            allocator = out["allocator_id"]
        if cur.have & ALLOC_SIZE:
            alloc_size = out["allocation_size"]
        if cur.have & ENTRY:
            entry = out["debug_entry"]
    out.update(
        run_file=run_file,
        run_name=run_name,
        run_bundled=bundled,
        allocator_count=alloc_count,
        allocator_names=allocator_names,
        event_count=ev_count,
        # the columns always made that hold more than their default (the others are left
        # out of the dict too: no pass over them to find that out)
        set_columns=frozenset(c for k, c in enumerate(_ALWAYS) if cur.set >> k & 1),
    )
    return out
