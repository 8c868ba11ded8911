/* The free-range bookkeeping of a memory block (src/memory_ranges.c) against a
 * brute-force model, one flag per byte: random takes with random alignments and
 * random gives, checking after each step that a range is handed out exactly
 * when and where first fit over the model puts it, that no two taken ranges
 * overlap, and that the free list is the model's maximal free runs, merged.
 * Compiles src/memory_ranges.c directly: no GPU needed, always runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "memory_ranges.h"

#define BLOCK 4096
#define MAX_TAKEN 512

typedef struct model {
    unsigned char used[BLOCK];
    memory_range taken[MAX_TAKEN];
    uint32_t count;
} model;

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* First fit over the model: the lowest aligned offset with `size` free bytes. */
static int64_t model_first_fit(const model *m, uint64_t size, uint64_t alignment)
{
    for (uint64_t at = 0; at + size <= BLOCK; at += alignment) {
        uint64_t i = 0;
        while (i < size && !m->used[at + i])
            i++;
        if (i == size)
            return (int64_t)at;
    }
    return -1;
}

/* The free list is exactly the model's maximal runs of free bytes. */
static void expect_same_free_list(const model *m, const memory_ranges *r)
{
    uint32_t runs = 0;
    for (uint64_t at = 0; at < BLOCK;) {
        if (m->used[at]) {
            at++;
            continue;
        }
        uint64_t end = at;
        while (end < BLOCK && !m->used[end])
            end++;
        assert_true(runs < r->free_count);
        assert_int_equal(r->free[runs].offset, at);
        assert_int_equal(r->free[runs].size, end - at);
        runs++;
        at = end;
    }
    assert_int_equal(r->free_count, runs);
    assert_int_equal(r->taken, m->count);
    assert_true(r->free_count <= r->taken + 1);
}

static void take_one(model *m, memory_ranges *r, uint64_t *seed)
{
    /* Mostly small ranges, sometimes large ones; alignments 1 to 256. */
    uint64_t size = 1 + lcg(seed) % (lcg(seed) % 8 == 0 ? BLOCK / 2 : 64);
    uint64_t alignment = (uint64_t)1 << (lcg(seed) % 9);
    int64_t want = model_first_fit(m, size, alignment);
    uint64_t offset = 0;
    bool took = memory_ranges_take(r, size, alignment, &offset);
    assert_int_equal(took, want >= 0);
    if (!took)
        return;
    assert_int_equal(offset, (uint64_t)want);
    assert_int_equal(offset % alignment, 0);
    for (uint64_t i = 0; i < size; i++) {
        assert_false(m->used[offset + i]);
        m->used[offset + i] = 1;
    }
    m->taken[m->count++] = (memory_range){offset, size};
}

static void give_one(model *m, memory_ranges *r, uint64_t *seed)
{
    uint32_t pick = (uint32_t)(lcg(seed) % m->count);
    memory_range g = m->taken[pick];
    m->taken[pick] = m->taken[--m->count];
    memset(&m->used[g.offset], 0, g.size);
    memory_ranges_give(r, g.offset, g.size);
}

static void test_against_model(void **state)
{
    (void)state;
    for (uint64_t seed0 = 1; seed0 <= 40; seed0++) {
        uint64_t seed = seed0;
        static model m;
        memset(&m, 0, sizeof m);
        memory_ranges r;
        assert_true(memory_ranges_init(&r, BLOCK));
        for (int step = 0; step < 3000; step++) {
            /* Phases that fill the block, then drain it, then churn. */
            int phase = step / 500 % 3;
            bool take = m.count == 0 ||
                        (m.count < MAX_TAKEN && lcg(&seed) % 10 < (phase == 0 ? 8 : phase == 1 ? 2 : 5));
            if (take)
                take_one(&m, &r, &seed);
            else
                give_one(&m, &r, &seed);
            expect_same_free_list(&m, &r);
        }
        while (m.count)
            give_one(&m, &r, &seed);
        assert_true(memory_ranges_empty(&r));
        assert_int_equal(r.free_count, 1);
        assert_int_equal(r.free[0].size, BLOCK);
        memory_ranges_release(&r);
    }
}

static void test_edges(void **state)
{
    (void)state;
    memory_ranges r;
    uint64_t at;
    assert_true(memory_ranges_init(&r, 1000));
    /* Nothing of size zero, no alignment that is not a power of two. */
    assert_false(memory_ranges_take(&r, 0, 1, &at));
    assert_false(memory_ranges_take(&r, 8, 3, &at));
    assert_false(memory_ranges_take(&r, 8, 0, &at));
    /* The whole block, then nothing more; an alignment past the block's end. */
    assert_true(memory_ranges_take(&r, 1000, 1, &at));
    assert_int_equal(at, 0);
    assert_false(memory_ranges_take(&r, 1, 1, &at));
    memory_ranges_give(&r, 0, 1000);
    assert_true(memory_ranges_take(&r, 10, 1, &at));
    assert_false(memory_ranges_take(&r, 10, 1024, &at));
    assert_true(memory_ranges_take(&r, 10, 512, &at));
    assert_int_equal(at, 512);
    /* The padding before an aligned range stays free and is used first. */
    assert_true(memory_ranges_take(&r, 100, 1, &at));
    assert_int_equal(at, 10);
    memory_ranges_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
