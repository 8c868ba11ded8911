/* Byte ranges of one device-memory block: which are free, first fit, with
 * neighbours merged on release. Pure bookkeeping, no Vulkan calls, so
 * tests/test_memory_ranges.c checks it against a brute-force model. */
#ifndef VKATTN_MEMORY_RANGES_H
#define VKATTN_MEMORY_RANGES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct memory_range {
    uint64_t offset, size;
} memory_range;

typedef struct memory_ranges {
    uint64_t size;     /* of the block */
    memory_range *free; /* sorted by offset, never adjacent (merged) */
    uint32_t free_count, free_capacity;
    uint32_t taken; /* ranges handed out and not given back */
} memory_ranges;

/* One free range over [0, size). False when out of host memory. */
bool memory_ranges_init(memory_ranges *r, uint64_t size);
void memory_ranges_release(memory_ranges *r);

/* The lowest offset, a multiple of `alignment` (a power of two), where `size`
 * bytes are free; false when none is, or when out of host memory (the free
 * list only ever grows here, so that giving back never needs memory). */
bool memory_ranges_take(memory_ranges *r, uint64_t size, uint64_t alignment, uint64_t *offset);

/* Gives back a range memory_ranges_take returned (the same offset and size). */
void memory_ranges_give(memory_ranges *r, uint64_t offset, uint64_t size);

static inline bool memory_ranges_empty(const memory_ranges *r)
{
    return r->taken == 0;
}

#endif /* VKATTN_MEMORY_RANGES_H */
