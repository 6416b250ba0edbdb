# Included by _walk.pyx: interning string fields by content.

# --- strings -------------------------------------------------------------------------------
# Every string field is interned here, by content: a code per reference (first use gives
# the next code), the distinct strings' (start, length) for Python to decode once each.
# Work is bounded as in the numpy string table: a string of at most _SHORT bytes is hashed
# at every reference; a longer one (or one near the buffer's end) is hashed once per
# distinct position, and per file the distinct positions' lengths may not add up to more
# than the file (in a valid file distinct strings do not overlap). The bytes of every string
# named (once per offset) are counted per file: the caller holds them to the string limit.

DEF _SHORT = 64

cdef struct Interner:
    int32_t* slots        # content hash table: content id or -1
    int64_t slot_mask
    int64_t* starts       # per content id
    int64_t* lengths
    uint64_t* hashes
    int64_t count
    int64_t capacity
    int64_t* long_pos     # position table of long strings: position or -1
    int32_t* long_code
    int64_t long_mask
    int64_t long_count
    int64_t* budget       # per file: bytes of distinct long strings so far
    int64_t* named        # per file: bytes of the strings named, once per offset (the
                          # callers count them, from the codes' lengths)


cdef inline uint64_t _hash(const uint8_t* p, int64_t n) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef uint64_t w
    cdef int64_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 29
        i += 8
    while i < n:
        h = (h ^ p[i]) * 0x100000001B3ULL
        i += 1
    h ^= h >> 32
    return h


cdef int _intern_init(Interner* it, int64_t files) noexcept nogil:
    cdef int64_t i
    it.slot_mask = 1023
    it.slots = <int32_t*>malloc(1024 * sizeof(int32_t))
    it.capacity = 512
    it.count = 0
    it.starts = <int64_t*>malloc(512 * sizeof(int64_t))
    it.lengths = <int64_t*>malloc(512 * sizeof(int64_t))
    it.hashes = <uint64_t*>malloc(512 * sizeof(uint64_t))
    it.long_mask = 63
    it.long_count = 0
    it.long_pos = <int64_t*>malloc(64 * sizeof(int64_t))
    it.long_code = <int32_t*>malloc(64 * sizeof(int32_t))
    it.budget = <int64_t*>calloc(files if files > 0 else 1, sizeof(int64_t))
    it.named = <int64_t*>calloc(files if files > 0 else 1, sizeof(int64_t))
    if (it.slots == NULL or it.starts == NULL or it.lengths == NULL or it.hashes == NULL
            or it.long_pos == NULL or it.long_code == NULL or it.budget == NULL
            or it.named == NULL):
        return -1
    for i in range(1024):
        it.slots[i] = -1
    for i in range(64):
        it.long_pos[i] = -1
    return 0


cdef void _intern_free(Interner* it) noexcept nogil:
    free(it.slots)
    free(it.starts)
    free(it.lengths)
    free(it.hashes)
    free(it.long_pos)
    free(it.long_code)
    free(it.budget)
    free(it.named)


cdef int _grow_slots(Interner* it) noexcept nogil:
    cdef int64_t size = (it.slot_mask + 1) * 2, i, at
    cdef int32_t* slots = <int32_t*>malloc(size * sizeof(int32_t))
    if slots == NULL:
        return -1
    for i in range(size):
        slots[i] = -1
    for i in range(it.count):
        at = <int64_t>(it.hashes[i] & <uint64_t>(size - 1))
        while slots[at] >= 0:
            at = (at + 1) & (size - 1)
        slots[at] = <int32_t>i
    free(it.slots)
    it.slots = slots
    it.slot_mask = size - 1
    return 0


cdef int32_t _content(Interner* it, const uint8_t* b, int64_t start,
                      int64_t length) noexcept nogil:
    """The code of the bytes ``start .. start + length``: -2 when out of memory."""
    cdef uint64_t h = _hash(b + start, length)
    cdef int64_t at = <int64_t>(h & <uint64_t>it.slot_mask)
    cdef int32_t code
    cdef void* grown
    while True:
        code = it.slots[at]
        if code < 0:
            break
        if (it.hashes[code] == h and it.lengths[code] == length
                and memcmp(b + it.starts[code], b + start, length) == 0):
            return code
        at = (at + 1) & it.slot_mask
    if it.count >= 0x7FFFFFF0:
        return -2
    if it.count == it.capacity:
        it.capacity *= 2
        grown = realloc(it.starts, it.capacity * sizeof(int64_t))
        if grown == NULL:
            return -2
        it.starts = <int64_t*>grown
        grown = realloc(it.lengths, it.capacity * sizeof(int64_t))
        if grown == NULL:
            return -2
        it.lengths = <int64_t*>grown
        grown = realloc(it.hashes, it.capacity * sizeof(uint64_t))
        if grown == NULL:
            return -2
        it.hashes = <uint64_t*>grown
    code = <int32_t>it.count
    it.starts[code] = start
    it.lengths[code] = length
    it.hashes[code] = h
    it.count += 1
    it.slots[at] = code
    if it.count * 2 > it.slot_mask + 1:
        if _grow_slots(it) < 0:
            return -2
    return code


cdef int _grow_long(Interner* it) noexcept nogil:
    cdef int64_t size = (it.long_mask + 1) * 2, i, at
    cdef int64_t* pos = <int64_t*>malloc(size * sizeof(int64_t))
    cdef int32_t* code = <int32_t*>malloc(size * sizeof(int32_t))
    if pos == NULL or code == NULL:
        free(pos)
        free(code)
        return -1
    for i in range(size):
        pos[i] = -1
    for i in range(it.long_mask + 1):
        if it.long_pos[i] >= 0:
            at = (it.long_pos[i] * 0x9E3779B1LL) & (size - 1)
            while pos[at] >= 0:
                at = (at + 1) & (size - 1)
            pos[at] = it.long_pos[i]
            code[at] = it.long_code[i]
    free(it.long_pos)
    free(it.long_code)
    it.long_pos = pos
    it.long_code = code
    it.long_mask = size - 1
    return 0


cdef int32_t _intern(Interner* it, const uint8_t* b, int64_t n, int64_t pos, int64_t file,
                     int64_t lo, int64_t hi) noexcept nogil:
    """Code of the string at ``pos`` (a string offset's target) of file ``file``:
    -1 when ``pos`` is -1 (absent), -2 when malformed or over the file's budget."""
    cdef int64_t length, at
    cdef int32_t code
    if pos < 0:
        return -1
    if pos + 4 > hi:
        return -2
    length = _u32(b, pos)
    if pos + 4 + length > hi:
        return -2
    if length <= _SHORT and pos + 4 + length + 8 <= n:
        return _content(it, b, pos + 4, length)
    at = (pos * 0x9E3779B1LL) & it.long_mask
    while it.long_pos[at] >= 0:
        if it.long_pos[at] == pos:
            return it.long_code[at]
        at = (at + 1) & it.long_mask
    it.budget[file] += length
    if it.budget[file] > hi - lo:
        return -2
    code = _content(it, b, pos + 4, length)
    if code < 0:
        return code
    it.long_pos[at] = pos
    it.long_code[at] = code
    it.long_count += 1
    if it.long_count * 2 > it.long_mask + 1:
        if _grow_long(it) < 0:
            return -2
    return code


cdef inline int32_t _intern_hinted(Interner* it, const uint8_t* b, int64_t n, int64_t pos,
                                   int64_t file, int64_t lo, int64_t hi,
                                   int32_t* hint) noexcept nogil:
    """:func:`_intern`, first trying ``hint`` (the code this field had at the same event
    of the previous run: runs repeat their names), which spares the hash of a short
    string; the same checks are made either way."""
    cdef int64_t length
    cdef int32_t code = hint[0]
    if code >= 0 and pos >= 0 and pos + 4 <= hi:
        length = _u32(b, pos)
        if (length <= _SHORT and pos + 4 + length <= hi and pos + 4 + length + 8 <= n
                and it.lengths[code] == length
                and memcmp(b + it.starts[code], b + pos + 4, length) == 0):
            return code
    code = _intern(it, b, n, pos, file, lo, hi)
    if code >= 0:
        hint[0] = code
    return code
