# Included by _walk.pyx: checked little-endian reads of tables, fields, vectors and offsets.

cdef struct Tab:
    int64_t pos
    int64_t vt
    int64_t vt_size
    int64_t table_size


# Little-endian loads (one unaligned load each: memcpy); big-endian hosts never walk (see
# walk()), so no byte swapping is needed here.
cdef inline uint16_t _u16(const uint8_t* b, int64_t p) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, b + p, 2)
    return v


cdef inline uint32_t _u32(const uint8_t* b, int64_t p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, b + p, 4)
    return v


cdef inline uint64_t _u64(const uint8_t* b, int64_t p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, b + p, 8)
    return v


cdef inline int _table(const uint8_t* b, int64_t pos, int64_t lo, int64_t hi,
                       Tab* t) noexcept nogil:
    """Open the table at ``pos`` of the file ``lo .. hi``: 0, or -1 when malformed."""
    cdef int64_t vt, vt_size, table_size
    if pos < lo or pos + 4 > hi:
        return -1
    vt = pos - <int64_t>(<int32_t>_u32(b, pos))
    if vt < lo or vt + 4 > hi:
        return -1
    vt_size = _u16(b, vt)
    table_size = _u16(b, vt + 2)
    if vt_size < 4 or (vt_size & 1) or vt + vt_size > hi:
        return -1
    if pos + (table_size if table_size > 4 else 4) > hi:
        return -1
    t.pos = pos
    t.vt = vt
    t.vt_size = vt_size
    t.table_size = table_size
    return 0


cdef inline int64_t _field(const uint8_t* b, Tab* t, int slot, int size) noexcept nogil:
    """Position of field ``slot`` (``size`` bytes): -1 absent, -2 outside its table."""
    cdef int64_t entry = 4 + 2 * slot
    cdef int64_t voff
    if t.vt_size < entry + 2:
        return -1
    voff = _u16(b, t.vt + entry)
    if voff == 0:
        return -1
    if voff < 4 or voff + size > t.table_size:
        return -2
    return t.pos + voff


cdef inline int64_t _offset(const uint8_t* b, Tab* t, int slot, int64_t hi) noexcept nogil:
    """Target of the uoffset field ``slot``: -1 absent, -2 malformed."""
    cdef int64_t at = _field(b, t, slot, 4)
    cdef int64_t target
    if at < 0:
        return at
    target = at + <int64_t>_u32(b, at)
    if target >= hi:
        return -2
    return target


cdef inline int64_t _vector(const uint8_t* b, int64_t pos, int elem, int64_t hi,
                            int64_t* count) noexcept nogil:
    """First element of the vector at ``pos`` (its length in ``count``); -2 malformed."""
    cdef int64_t n
    if pos + 4 > hi:
        return -2
    n = _u32(b, pos)
    if pos + 4 + n * elem > hi:
        return -2
    count[0] = n
    return pos + 4


cdef inline int64_t _entry(const uint8_t* b, int64_t at, int64_t hi) noexcept nogil:
    """Target of the uoffset stored at ``at`` (a vector element): -2 malformed."""
    cdef int64_t target
    if at + 4 > hi:
        return -2
    target = at + <int64_t>_u32(b, at)
    if target >= hi:
        return -2
    return target


cdef inline int32_t _i32(const uint8_t* b, Tab* t, int slot, int32_t default,
                         int* bad) noexcept nogil:
    cdef int64_t at = _field(b, t, slot, 4)
    if at == -2:
        bad[0] = 1
        return default
    return default if at < 0 else <int32_t>_u32(b, at)


cdef inline uint64_t _x64(const uint8_t* b, Tab* t, int slot, int* bad) noexcept nogil:
    cdef int64_t at = _field(b, t, slot, 8)
    if at == -2:
        bad[0] = 1
        return 0
    return 0 if at < 0 else _u64(b, at)


# --- tables of a repeated shape -----------------------------------------------------------
# Writers share one vtable among the tables of a type that set the same fields, so the
# event loop keeps the last vtable it checked per table type, with each field's offset in
# the table (checked as _field checks it): a table with that vtable is checked for its own
# bounds only, and its fields are read at pos + offset.

cdef struct Layout:
    int64_t vt            # the vtable cached (-1: none)
    int64_t file          # in which file (bounds differ per file)
    int64_t table_size
    int64_t voff[8]       # per slot: the field's offset, -1 absent, -2 outside the table


cdef inline int _layout(const uint8_t* b, int64_t pos, int64_t file, int64_t lo, int64_t hi,
                        Layout* L, int slots, const int* sizes) noexcept nogil:
    """Open the table at ``pos`` as :func:`_table` does, its fields' offsets in ``L``
    (read again only when its vtable is not the one cached): 0, or -1 when malformed."""
    cdef int64_t vt, vt_size, table_size, entry, voff
    cdef int s
    if pos < lo or pos + 4 > hi:
        return -1
    vt = pos - <int64_t>(<int32_t>_u32(b, pos))
    if vt != L.vt or file != L.file:
        if vt < lo or vt + 4 > hi:
            return -1
        vt_size = _u16(b, vt)
        table_size = _u16(b, vt + 2)
        if vt_size < 4 or (vt_size & 1) or vt + vt_size > hi:
            return -1
        for s in range(slots):
            entry = 4 + 2 * s
            voff = -1 if vt_size < entry + 2 else _u16(b, vt + entry)
            if voff == 0:
                voff = -1
            elif voff > 0 and (voff < 4 or voff + sizes[s] > table_size):
                voff = -2
            L.voff[s] = voff
        L.vt = vt
        L.file = file
        L.table_size = table_size
    if pos + (L.table_size if L.table_size > 4 else 4) > hi:
        return -1
    return 0


cdef inline int64_t _at(Layout* L, int64_t pos, int slot) noexcept nogil:
    """Position of field ``slot`` of the table at ``pos``: -1 absent, -2 outside it."""
    cdef int64_t voff = L.voff[slot]
    return voff if voff < 0 else pos + voff


cdef inline int64_t _offset_at(const uint8_t* b, int64_t at, int64_t hi) noexcept nogil:
    """:func:`_offset` of a field at ``at`` (-1 absent, -2 malformed)."""
    cdef int64_t target
    if at < 0:
        return at
    target = at + <int64_t>_u32(b, at)
    if target >= hi:
        return -2
    return target


cdef inline int32_t _i32_at(const uint8_t* b, int64_t at, int32_t default, int* bad) noexcept nogil:
    if at == -2:
        bad[0] = 1
        return default
    return default if at < 0 else <int32_t>_u32(b, at)


cdef inline uint64_t _x64_at(const uint8_t* b, int64_t at, int* bad) noexcept nogil:
    if at == -2:
        bad[0] = 1
        return 0
    return 0 if at < 0 else _u64(b, at)


cdef int[3] _EVENT_SIZES = [4, 4, 4]
cdef int[8] _PROFILE_SIZES = [4, 4, 4, 4, 4, 4, 8, 8]
