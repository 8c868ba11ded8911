/* Analysis of a cooperative matrix's element layout (coopmat_layout.h). */
#include "coopmat_layout.h"

#include <stdio.h>
#include <string.h>

static uint32_t row_of(const coopmat_layout *l, uint32_t lane, uint32_t k)
{
    return l->cell[lane * l->elements + k] / l->cols;
}

static bool bijective(const coopmat_layout *l)
{
    uint64_t cells = (uint64_t)l->rows * l->cols;
    if (!l->rows || !l->cols || cells > COOPMAT_LAYOUT_MAX_CELLS ||
        (uint64_t)l->lanes * l->elements != cells)
        return false;
    uint8_t seen[COOPMAT_LAYOUT_MAX_CELLS];
    memset(seen, 0, sizeof seen);
    for (uint64_t i = 0; i < cells; i++) {
        uint32_t c = l->cell[i];
        if (c >= cells || seen[c]++)
            return false;
    }
    return true;
}

/* Whether the rows of lane's elements are those of the group's first lane,
 * element by element. */
static bool same_rows(const coopmat_layout *l, uint32_t lane, uint32_t first)
{
    for (uint32_t k = 0; k < l->elements; k++)
        if (row_of(l, lane, k) != row_of(l, first, k))
            return false;
    return true;
}

/* Whether groups of g aligned lanes hold the same rows per element index and
 * no row is held by two groups. */
static bool grouped_by(const coopmat_layout *l, uint32_t g)
{
    if (l->lanes % g)
        return false;
    for (uint32_t lane = 0; lane < l->lanes; lane++)
        if (!same_rows(l, lane, lane / g * g))
            return false;
    uint32_t owner[COOPMAT_LAYOUT_MAX_CELLS];
    for (uint32_t r = 0; r < l->rows; r++)
        owner[r] = UINT32_MAX;
    for (uint32_t lane = 0; lane < l->lanes; lane += g)
        for (uint32_t k = 0; k < l->elements; k++) {
            uint32_t r = row_of(l, lane, k);
            if (owner[r] != UINT32_MAX && owner[r] != lane)
                return false;
            owner[r] = lane;
        }
    return true;
}

static uint32_t distinct_rows(const coopmat_layout *l, uint32_t lane)
{
    uint32_t count = 0;
    for (uint32_t k = 0; k < l->elements; k++) {
        uint32_t r = row_of(l, lane, k), j = 0;
        while (j < k && row_of(l, lane, j) != r)
            j++;
        count += j == k;
    }
    return count;
}

coopmat_layout_traits coopmat_layout_analyze(const coopmat_layout *layout)
{
    coopmat_layout_traits t = {.bijective = bijective(layout)};
    if (!t.bijective)
        return t;
    /* The smallest grouping that works: a power of 2 up to the subgroup. */
    for (uint32_t g = 1; g <= layout->lanes && !t.row_lanes; g *= 2)
        if (grouped_by(layout, g))
            t.row_lanes = g;
    for (uint32_t lane = 0; t.row_lanes && lane < layout->lanes; lane++) {
        uint32_t rows = distinct_rows(layout, lane);
        t.lane_rows = rows > t.lane_rows ? rows : t.lane_rows;
    }
    return t;
}

bool coopmat_layout_slot_table(const coopmat_layout *l, uint32_t lane_rows, uint32_t *out)
{
    if (l->elements > 16 || lane_rows > 4)
        return false;
    uint32_t table = 0;
    for (uint32_t lane = 0; lane < l->lanes; lane++) {
        uint32_t rows[4], count = 0, lane_table = 0;
        for (uint32_t k = 0; k < l->elements; k++) {
            uint32_t r = l->cell[lane * l->elements + k] / l->cols, s = 0;
            while (s < count && rows[s] != r)
                s++;
            if (s == count) {
                if (count == lane_rows)
                    return false;
                rows[count++] = r;
            }
            lane_table |= s << (2 * k);
        }
        if (lane > 0 && lane_table != table)
            return false;
        table = lane_table;
    }
    *out = table;
    return true;
}

void coopmat_layout_describe(const coopmat_layout *layout, char *out, size_t size)
{
    coopmat_layout_traits t = coopmat_layout_analyze(layout);
    int n = snprintf(out, size, "%ux%u f32 accumulator on %u invocations, %u elements each",
                     layout->rows, layout->cols, layout->lanes, layout->elements);
    size_t at = n > 0 ? (size_t)n : 0;
#define APPEND(...)                                                                             \
    do {                                                                                        \
        if (at < size) {                                                                        \
            int m_ = snprintf(out + at, size - at, __VA_ARGS__);                                \
            at += m_ > 0 ? (size_t)m_ : 0;                                                      \
        }                                                                                       \
    } while (0)
    if (!t.bijective) {
        APPEND(": not each element once (the probe read something else)");
        return;
    }
    if (t.row_lanes)
        APPEND("; a row in %u neighbouring invocation%s (aligned), at most %u row%s each",
               t.row_lanes, t.row_lanes > 1 ? "s" : "", t.lane_rows, t.lane_rows > 1 ? "s" : "");
    else
        APPEND("; rows not held by aligned groups of invocations");
    /* The first row group's invocations show the pattern; four at most. */
    uint32_t shown = t.row_lanes ? t.row_lanes : 1;
    if (shown > 4) {
        shown = 4;
        APPEND("; the first four invocations of the first row group");
    }
    for (uint32_t lane = 0; lane < shown && lane < layout->lanes; lane++) {
        APPEND("; invocation %u:", lane);
        for (uint32_t k = 0; k < layout->elements; k++) {
            uint32_t c = layout->cell[lane * layout->elements + k];
            APPEND(" (%u,%u)", c / layout->cols, c % layout->cols);
        }
    }
#undef APPEND
}
