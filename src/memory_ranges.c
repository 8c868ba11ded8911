/* First-fit ranges of a memory block (no Vulkan calls: tests/test_memory_ranges.c
 * compiles this file on its own). */
#include "memory_ranges.h"

#include <stdlib.h>
#include <string.h>

bool memory_ranges_init(memory_ranges *r, uint64_t size)
{
    *r = (memory_ranges){.size = size};
    r->free = malloc(4 * sizeof *r->free);
    if (!r->free)
        return false;
    r->free_capacity = 4;
    r->free[0] = (memory_range){0, size};
    r->free_count = size > 0;
    return true;
}

void memory_ranges_release(memory_ranges *r)
{
    free(r->free);
    *r = (memory_ranges){0};
}

/* Free ranges are separated by taken ones, so there are at most taken + 1 of
 * them: room for that many, made while taking, means giving back never fails. */
static bool reserve(memory_ranges *r, uint32_t taken)
{
    if (taken + 1 <= r->free_capacity)
        return true;
    uint32_t capacity = r->free_capacity * 2;
    while (capacity < taken + 1)
        capacity *= 2;
    memory_range *grown = realloc(r->free, capacity * sizeof *grown);
    if (!grown)
        return false;
    r->free = grown;
    r->free_capacity = capacity;
    return true;
}

static void insert_at(memory_ranges *r, uint32_t at, memory_range range)
{
    memmove(&r->free[at + 1], &r->free[at], (r->free_count - at) * sizeof *r->free);
    r->free[at] = range;
    r->free_count++;
}

static void remove_at(memory_ranges *r, uint32_t at)
{
    memmove(&r->free[at], &r->free[at + 1], (r->free_count - at - 1) * sizeof *r->free);
    r->free_count--;
}

bool memory_ranges_take(memory_ranges *r, uint64_t size, uint64_t alignment, uint64_t *offset)
{
    if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0)
        return false;
    for (uint32_t i = 0; i < r->free_count; i++) {
        memory_range f = r->free[i];
        uint64_t start = (f.offset + alignment - 1) & ~(alignment - 1);
        if (start < f.offset || start - f.offset >= f.size || f.size - (start - f.offset) < size)
            continue;
        if (!reserve(r, r->taken + 1))
            return false;
        uint64_t end = start + size, f_end = f.offset + f.size;
        /* What the range leaves before (alignment padding) and after it stays free. */
        remove_at(r, i);
        if (end < f_end)
            insert_at(r, i, (memory_range){end, f_end - end});
        if (start > f.offset)
            insert_at(r, i, (memory_range){f.offset, start - f.offset});
        r->taken++;
        *offset = start;
        return true;
    }
    return false;
}

void memory_ranges_give(memory_ranges *r, uint64_t offset, uint64_t size)
{
    uint32_t at = 0;
    while (at < r->free_count && r->free[at].offset < offset)
        at++;
    bool joins_before = at > 0 && r->free[at - 1].offset + r->free[at - 1].size == offset;
    bool joins_after = at < r->free_count && offset + size == r->free[at].offset;
    if (joins_before && joins_after) {
        r->free[at - 1].size += size + r->free[at].size;
        remove_at(r, at);
    } else if (joins_before) {
        r->free[at - 1].size += size;
    } else if (joins_after) {
        r->free[at].offset = offset;
        r->free[at].size += size;
    } else {
        insert_at(r, at, (memory_range){offset, size}); /* room reserved when taken */
    }
    r->taken--;
}
