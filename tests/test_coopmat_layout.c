/* The analysis of cooperative-matrix accumulator layouts (src/coopmat_layout.c)
 * on synthetic tables: NVIDIA's (the mma.sync accumulator fragments, which
 * this machine has no device for), the emulated build's on 8 and 32 lanes, a
 * row a lane, a shuffle that no clustered reduction fits, and tables that are
 * not a layout at all. The probe itself runs in test_attention
 * (test_coopmat_layout_probe), on the device. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "coopmat_layout.h"

static coopmat_layout *layout_new(uint32_t rows, uint32_t cols, uint32_t lanes)
{
    coopmat_layout *l = calloc(1, sizeof *l);
    assert_non_null(l);
    l->rows = rows;
    l->cols = cols;
    l->lanes = lanes;
    l->elements = rows * cols / lanes;
    return l;
}

static void set_cell(coopmat_layout *l, uint32_t lane, uint32_t k, uint32_t row, uint32_t col)
{
    l->cell[lane * l->elements + k] = row * l->cols + col;
}

/* 16x16 f32 on 32 lanes as two m16n8 accumulator fragments side by side:
 * lane l's elements 0,1 are row l/4, columns 2(l%4) and +1; 2,3 the same of
 * row l/4 + 8; 4..7 the same 8 columns on. */
static coopmat_layout *nvidia_like(void)
{
    coopmat_layout *l = layout_new(16, 16, 32);
    for (uint32_t lane = 0; lane < 32; lane++)
        for (uint32_t k = 0; k < 8; k++)
            set_cell(l, lane, k, lane / 4 + 8 * (k / 2 % 2), 2 * (lane % 4) + k % 2 + 8 * (k / 4));
    return l;
}

static void test_nvidia_like(void **state)
{
    (void)state;
    coopmat_layout *l = nvidia_like();
    coopmat_layout_traits t = coopmat_layout_analyze(l);
    assert_true(t.bijective);
    assert_int_equal(t.row_lanes, 4);
    assert_int_equal(t.lane_rows, 2);
    char line[900];
    coopmat_layout_describe(l, line, sizeof line);
    assert_non_null(strstr(line, "16x16 f32 accumulator on 32 invocations, 8 elements each; "
                                 "a row in 4 neighbouring invocations (aligned), at most 2 rows "
                                 "each; invocation 0: (0,0) (0,1) (8,0) (8,1) (0,8) (0,9) (8,8) "
                                 "(8,9); invocation 1: (0,2) (0,3) (8,2)"));
    assert_non_null(strstr(line, "; invocation 3: (0,6) (0,7) (8,6) (8,7) (0,14) (0,15) (8,14) "
                                 "(8,15)"));
    assert_null(strstr(line, "invocation 4"));
    /* Slots: elements 0, 1, 4, 5 in the lane's first row, 2, 3, 6, 7 in its
     * second, in every lane. */
    uint32_t table = 0;
    assert_true(coopmat_layout_slot_table(l, t.lane_rows, &table));
    assert_int_equal(table, 0x5050);
    assert_false(coopmat_layout_slot_table(l, 1, &table)); /* two rows do not fit in one */
    /* Lanes 4 to 7 with their first row in elements 0 to 3: still grouped,
     * but the slots differ between groups. */
    for (uint32_t lane = 4; lane < 8; lane++)
        for (uint32_t k = 0; k < 8; k++)
            set_cell(l, lane, k, 1 + 8 * (k / 4), 2 * (lane % 4) + k % 2 + 8 * (k / 2 % 2));
    assert_true(coopmat_layout_analyze(l).bijective);
    assert_int_equal(coopmat_layout_analyze(l).row_lanes, 4);
    assert_false(coopmat_layout_slot_table(l, 2, &table));
    free(l);
    l = nvidia_like();
    /* Swap two elements of one lane across rows: lanes 0..3 no longer hold
     * the same row at element index 0, and no grouping fits. */
    uint32_t a = l->cell[0];
    l->cell[0] = l->cell[2];
    l->cell[2] = a;
    t = coopmat_layout_analyze(l);
    assert_true(t.bijective);
    assert_int_equal(t.row_lanes, 0);
    free(l);
}

/* The emulated build: element k of lane l is element l + k * lanes, row-major. */
static void test_emulated(void **state)
{
    (void)state;
    static const struct { uint32_t lanes, row_lanes, lane_rows; } cases[] = {
        {8, 8, 16},  /* lavapipe: every lane holds two columns of every row */
        {32, 16, 8}, /* half the lanes hold the even rows, half the odd */
        {4, 4, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        coopmat_layout *l = layout_new(16, 16, cases[i].lanes);
        for (uint32_t lane = 0; lane < l->lanes; lane++)
            for (uint32_t k = 0; k < l->elements; k++)
                l->cell[lane * l->elements + k] = lane + k * l->lanes;
        coopmat_layout_traits t = coopmat_layout_analyze(l);
        assert_true(t.bijective);
        assert_int_equal(t.row_lanes, cases[i].row_lanes);
        assert_int_equal(t.lane_rows, cases[i].lane_rows);
        free(l);
    }
}

/* The emulated build laid out in clusters (coopmat.glsl's acc_cell with
 * ACC_CLUSTER = C): row lane / C + lanes / C * s, column lane % C + C * t for
 * element t * rows + s. */
static void test_emulated_clusters(void **state)
{
    (void)state;
    static const struct { uint32_t rows, lanes, cluster; } cases[] = {
        {16, 8, 2}, {4, 8, 2}, {16, 32, 2}, {16, 4, 4}, {8, 16, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t c = cases[i].cluster, lanes = cases[i].lanes;
        coopmat_layout *l = layout_new(cases[i].rows, 16, lanes);
        uint32_t rows = cases[i].rows * c / lanes;
        for (uint32_t lane = 0; lane < lanes; lane++)
            for (uint32_t k = 0; k < l->elements; k++)
                set_cell(l, lane, k, lane / c + lanes / c * (k % rows), lane % c + c * (k / rows));
        coopmat_layout_traits t = coopmat_layout_analyze(l);
        assert_true(t.bijective);
        assert_int_equal(t.row_lanes, c);
        assert_int_equal(t.lane_rows, rows);
        free(l);
    }
}

/* A row a lane (16 lanes, 16x8): groups of one, one row each. */
static void test_row_per_lane(void **state)
{
    (void)state;
    coopmat_layout *l = layout_new(16, 8, 16);
    for (uint32_t lane = 0; lane < 16; lane++)
        for (uint32_t k = 0; k < 8; k++)
            set_cell(l, lane, k, lane, k);
    coopmat_layout_traits t = coopmat_layout_analyze(l);
    assert_true(t.bijective);
    assert_int_equal(t.row_lanes, 1);
    assert_int_equal(t.lane_rows, 1);
    free(l);
}

/* A fixed shuffle of the cells: some row is held by lanes of two groups for
 * every grouping but the whole subgroup, where element indices disagree. */
static void test_shuffled(void **state)
{
    (void)state;
    coopmat_layout *l = layout_new(16, 16, 32);
    for (uint32_t i = 0; i < 256; i++)
        l->cell[i] = i;
    uint32_t x = 12345;
    for (uint32_t i = 255; i > 0; i--) {
        x = x * 1103515245u + 12345u;
        uint32_t j = (x >> 8) % (i + 1), c = l->cell[i];
        l->cell[i] = l->cell[j];
        l->cell[j] = c;
    }
    coopmat_layout_traits t = coopmat_layout_analyze(l);
    assert_true(t.bijective);
    assert_int_equal(t.row_lanes, 0);
    char line[900];
    coopmat_layout_describe(l, line, sizeof line);
    assert_non_null(strstr(line, "; rows not held by aligned groups of invocations; invocation 0:"));
    free(l);
}

/* Not a layout: a cell twice, a cell past the matrix, counts that disagree. */
static void test_not_a_layout(void **state)
{
    (void)state;
    coopmat_layout *l = nvidia_like();
    l->cell[5] = l->cell[6];
    assert_false(coopmat_layout_analyze(l).bijective);
    l->cell[5] = 256;
    assert_false(coopmat_layout_analyze(l).bijective);
    free(l);
    l = nvidia_like();
    l->elements = 7;
    assert_false(coopmat_layout_analyze(l).bijective);
    char line[200];
    coopmat_layout_describe(l, line, sizeof line);
    assert_non_null(strstr(line, ": not each element once"));
    l->rows = 0;
    assert_false(coopmat_layout_analyze(l).bijective);
    free(l);
}

/* A description longer than its buffer is cut, terminated. */
static void test_describe_cut(void **state)
{
    (void)state;
    coopmat_layout *l = nvidia_like();
    char line[40];
    memset(line, 'x', sizeof line);
    coopmat_layout_describe(l, line, sizeof line);
    assert_int_equal(strlen(line), sizeof line - 1);
    assert_int_equal(strncmp(line, "16x16 f32 accumulator on 32 invocation", 38), 0);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvidia_like),  cmocka_unit_test(test_emulated),
        cmocka_unit_test(test_emulated_clusters),
        cmocka_unit_test(test_row_per_lane), cmocka_unit_test(test_shuffled),
        cmocka_unit_test(test_not_a_layout), cmocka_unit_test(test_describe_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
