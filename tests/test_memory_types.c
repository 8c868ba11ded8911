/* Memory-type choice on synthetic memory layouts of devices this machine does
 * not have: a discrete GPU with a 256 MiB BAR, one with resizable BAR, an
 * integrated GPU (with and without a carve-out), lavapipe, a device whose only
 * host-visible memory is not coherent; and the flush ranges for non-coherent
 * memory; the sizes of the blocks buffers share. Compiles src/memory_types.c
 * directly: no GPU needed, always runs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "memory_types.h"

#define DL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define HV VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HC VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#define CACHED VK_MEMORY_PROPERTY_HOST_CACHED_BIT
#define AMD_COHERENT (VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD | \
                      VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD)

#define MIB ((VkDeviceSize)1 << 20)
#define GIB ((VkDeviceSize)1 << 30)
#define ALL 0xffffffffu

typedef struct layout_type {
    VkMemoryPropertyFlags flags;
    uint32_t heap;
} layout_type;

static VkPhysicalDeviceMemoryProperties layout(const VkDeviceSize *heaps, uint32_t heap_count,
                                               const layout_type *types, uint32_t type_count)
{
    VkPhysicalDeviceMemoryProperties mp = {.memoryTypeCount = type_count,
                                           .memoryHeapCount = heap_count};
    for (uint32_t i = 0; i < heap_count; i++)
        mp.memoryHeaps[i].size = heaps[i];
    for (uint32_t i = 0; i < type_count; i++) {
        mp.memoryTypes[i].propertyFlags = types[i].flags;
        mp.memoryTypes[i].heapIndex = types[i].heap;
        if (types[i].flags & DL)
            mp.memoryHeaps[types[i].heap].flags |= VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    }
    return mp;
}

/* The first choice, or -1 when no type is usable. */
static int first(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed, memory_use use,
                 VkDeviceSize size)
{
    uint32_t order[VK_MAX_MEMORY_TYPES];
    return memory_types_ranked(mp, allowed, use, size, order) ? (int)order[0] : -1;
}

static int listed(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed, memory_use use,
                  VkDeviceSize size, uint32_t type)
{
    uint32_t order[VK_MAX_MEMORY_TYPES];
    uint32_t n = memory_types_ranked(mp, allowed, use, size, order);
    for (uint32_t i = 0; i < n; i++)
        if (order[i] == type)
            return 1;
    return 0;
}

/* NVIDIA on Linux without resizable BAR: VRAM, system memory, and a 256 MiB
 * BAR heap whose one type is device-local, host-visible and coherent. */
static void test_nvidia_256mib_bar(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {24 * GIB, 64 * GIB, 256 * MIB};
    const layout_type types[] = {
        {0, 1}, {DL, 0}, {HV | HC, 1}, {HV | HC | CACHED, 1}, {DL | HV | HC, 2},
    };
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 3, types, 5);
    const memory_use uses[] = {MEMORY_DEVICE, MEMORY_DEVICE_MAPPED, MEMORY_UPLOAD,
                               MEMORY_DOWNLOAD};
    /* A large buffer never goes in the BAR, whatever it is for. */
    for (int u = 0; u < 4; u++) {
        assert_false(listed(&mp, ALL, uses[u], 1 * GIB, 4));
        assert_false(listed(&mp, ALL, uses[u], 17 * MIB, 4));
    }
    /* Tensors in VRAM the host does not see, large or small. */
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 1 * GIB), 1);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 4096), 1);
    /* Where VRAM runs out: system memory next, still never the BAR. */
    uint32_t order[VK_MAX_MEMORY_TYPES];
    uint32_t n = memory_types_ranked(&mp, ALL, MEMORY_DEVICE, 1 * GIB, order);
    assert_int_equal(n, 4);
    assert_int_equal(order[0], 1);
    assert_true(order[1] == 0 || order[1] == 2 || order[1] == 3);
    /* A buffer whose requirements exclude VRAM: system memory, not the BAR. */
    assert_int_equal(first(&mp, ALL & ~(1u << 1), MEMORY_DEVICE, 64 * MIB), 0);
    /* Staging in system memory: uploads any, downloads host-cached. */
    assert_int_equal(first(&mp, ALL, MEMORY_UPLOAD, 4096), 2);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 4096), 3);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 1 * GIB), 3);
    /* A small buffer may use the BAR, as the last choice. */
    n = memory_types_ranked(&mp, ALL, MEMORY_UPLOAD, 4096, order);
    assert_int_equal(order[n - 1], 4);
    assert_int_equal(first(&mp, 1u << 4, MEMORY_UPLOAD, 16 * MIB), 4);
    assert_int_equal(first(&mp, 1u << 4, MEMORY_UPLOAD, 16 * MIB + 1), 4); /* nothing else */
}

/* AMD with resizable BAR: all of VRAM is host-visible; also the AMD
 * device-coherent types, which need a feature vkattn never enables. */
static void test_amd_resizable_bar(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {16 * GIB, 32 * GIB};
    const layout_type types[] = {
        {DL, 0},           {HV | HC, 1},      {DL | HV | HC, 0}, {HV | HC | CACHED, 1},
        {DL | AMD_COHERENT, 0}, {HV | HC | AMD_COHERENT, 1}, {DL | HV | HC | AMD_COHERENT, 0},
    };
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 2, types, 7);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 4 * GIB), 0);
    /* The whole VRAM is host-visible: not small, so it is the next choice. */
    uint32_t order[VK_MAX_MEMORY_TYPES];
    assert_true(memory_types_ranked(&mp, ALL, MEMORY_DEVICE, 4 * GIB, order) >= 2);
    assert_int_equal(order[1], 2);
    assert_int_equal(first(&mp, ALL, MEMORY_UPLOAD, 64 * MIB), 1);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 64 * MIB), 3);
    for (uint32_t t = 4; t < 7; t++)
        for (int u = MEMORY_DEVICE; u <= MEMORY_DOWNLOAD; u++)
            assert_false(listed(&mp, ALL, (memory_use)u, 4096, t));
    assert_int_equal(first(&mp, 1u << 4, MEMORY_DEVICE, 4096), -1);
    /* Without resizable BAR the same card has a 256 MiB window. */
    const VkDeviceSize bar_heaps[] = {16 * GIB, 32 * GIB, 256 * MIB};
    const layout_type bar_types[] = {
        {DL, 0}, {HV | HC, 1}, {DL | HV | HC, 2}, {HV | HC | CACHED, 1},
    };
    mp = layout(bar_heaps, 3, bar_types, 4);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 4 * GIB), 0);
    assert_false(listed(&mp, ALL, MEMORY_DEVICE, 4 * GIB, 2));
    assert_true(listed(&mp, ALL, MEMORY_DEVICE, 1 * MIB, 2));
}

/* Intel integrated: one heap of system memory, every type device-local. */
static void test_integrated(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {12 * GIB};
    const layout_type types[] = {{DL, 0}, {DL | HV | HC, 0}, {DL | HV | HC | CACHED, 0}};
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 1, types, 3);
    assert_true(memory_has_mappable_device_memory(&mp));
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE_MAPPED, 2 * GIB), 1);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 2 * GIB), 0);
    assert_int_equal(first(&mp, ALL, MEMORY_UPLOAD, 2 * GIB), 1);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 2 * GIB), 2);
}

/* An APU with a 512 MiB carve-out: large mapped tensors go to system memory. */
static void test_integrated_carve_out(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {512 * MIB, 16 * GIB};
    const layout_type types[] = {{DL, 0}, {HV | HC, 1}, {DL | HV | HC, 0}, {HV | HC | CACHED, 1}};
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 2, types, 4);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE_MAPPED, 1 * MIB), 2);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE_MAPPED, 100 * MIB), 1);
    assert_false(listed(&mp, ALL, MEMORY_DEVICE_MAPPED, 100 * MIB, 2));
}

/* lavapipe: one type that is everything. Also a device whose whole memory is
 * one small host-visible heap: a big buffer still has a place. */
static void test_lavapipe_and_single_small_heap(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {2 * GIB};
    const layout_type types[] = {{DL | HV | HC | CACHED, 0}};
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 1, types, 1);
    assert_true(memory_has_mappable_device_memory(&mp));
    for (int u = MEMORY_DEVICE; u <= MEMORY_DOWNLOAD; u++)
        assert_int_equal(first(&mp, ALL, (memory_use)u, 1 * GIB), 0);
    const VkDeviceSize small[] = {256 * MIB};
    const layout_type only[] = {{DL | HV | HC, 0}};
    mp = layout(small, 1, only, 1);
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 200 * MIB), 0);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 200 * MIB), 0);
    assert_int_equal(first(&mp, 0, MEMORY_DEVICE, 4096), -1);
}

/* The only host-visible memory is not coherent: staging uses it (vkattn then
 * flushes and invalidates), and tensors cannot be mapped. */
static void test_noncoherent_only(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {8 * GIB, 16 * GIB};
    const layout_type types[] = {{DL, 0}, {HV | CACHED, 1}, {HV, 1}};
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 2, types, 3);
    assert_false(memory_has_mappable_device_memory(&mp));
    assert_int_equal(first(&mp, ALL, MEMORY_DEVICE, 64 * MIB), 0);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 64 * MIB), 1);
    assert_true(listed(&mp, ALL, MEMORY_UPLOAD, 64 * MIB, 1));
    assert_true(listed(&mp, ALL, MEMORY_UPLOAD, 64 * MIB, 2));
    assert_false(listed(&mp, ALL, MEMORY_UPLOAD, 64 * MIB, 0));
    /* Downloads take cached non-coherent memory over coherent uncached memory. */
    const layout_type mixed[] = {{DL, 0}, {HV | HC, 1}, {HV | CACHED, 1}};
    mp = layout(heaps, 2, mixed, 3);
    assert_int_equal(first(&mp, ALL, MEMORY_DOWNLOAD, 4096), 2);
    assert_int_equal(first(&mp, ALL, MEMORY_UPLOAD, 4096), 1);
}

static void test_atom_ranges(void **state)
{
    (void)state;
    VkDeviceMemory m = VK_NULL_HANDLE;
    /* 13 floats (52 bytes) of a 64-byte allocation, atom 64: the whole. */
    VkMappedMemoryRange r = memory_atom_range(m, 0, 52, 64, 64);
    assert_int_equal(r.offset, 0);
    assert_int_equal(r.size, VK_WHOLE_SIZE);
    /* ...of a larger allocation: rounded up to the atom. */
    r = memory_atom_range(m, 0, 52, 64, 4096);
    assert_int_equal(r.size, 64);
    assert_int_equal(r.sType, VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE);
    /* An allocation whose size is not a multiple of the atom: clamped to its end. */
    r = memory_atom_range(m, 0, 90, 64, 100);
    assert_int_equal(r.size, VK_WHOLE_SIZE);
    /* An offset inside an atom: rounded down, the end rounded up. */
    r = memory_atom_range(m, 70, 10, 64, 4096);
    assert_int_equal(r.offset, 64);
    assert_int_equal(r.size, 64);
    r = memory_atom_range(m, 100, 100, 256, 4096);
    assert_int_equal(r.offset, 0);
    assert_int_equal(r.size, 256);
    /* Already aligned stays as it is; atom 0 or 1 changes nothing. */
    r = memory_atom_range(m, 128, 128, 64, 4096);
    assert_int_equal(r.offset, 128);
    assert_int_equal(r.size, 128);
    r = memory_atom_range(m, 3, 5, 1, 4096);
    assert_int_equal(r.offset, 3);
    assert_int_equal(r.size, 5);
    r = memory_atom_range(m, 3, 5, 0, 4096);
    assert_int_equal(r.size, 5);
}

/* Shared blocks: 1/8 of the full size first, doubling per block made up to it;
 * 64 MiB on a large heap, 1/16 of a small one (a BAR), capped by
 * maxMemoryAllocationSize; a buffer over half the full size gets its own. */
static void test_block_sizes(void **state)
{
    (void)state;
    const VkDeviceSize heaps[] = {24 * GIB, 64 * GIB, 256 * MIB, 1 * MIB};
    const layout_type types[] = {{DL, 0}, {HV | HC, 1}, {DL | HV | HC, 2}, {DL | HV | HC, 3}};
    VkPhysicalDeviceMemoryProperties mp = layout(heaps, 4, types, 4);
    /* VRAM: 8, 16, 32, 64, 64 MiB. */
    const VkDeviceSize vram[] = {8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB, 64 * MIB};
    for (uint32_t made = 0; made < 5; made++)
        assert_int_equal(memory_block_size(&mp, 0, 4096, made, 0), vram[made]);
    assert_int_equal(memory_dedicated_above(&mp, 0, 0), 32 * MIB);
    /* A block is never smaller than the request it is made for. */
    assert_int_equal(memory_block_size(&mp, 0, 20 * MIB, 0, 0), 32 * MIB);
    assert_int_equal(memory_block_size(&mp, 0, 32 * MIB, 0, 0), 32 * MIB);
    assert_int_equal(memory_block_size(&mp, 0, 16 * MIB + 1, 3, 0), 64 * MIB);
    assert_int_equal(memory_block_size(&mp, 0, 32 * MIB + 1, 0, 0), 0);
    /* The BAR: 16 MiB blocks at most, from 2 MiB; its own above 8 MiB. */
    assert_int_equal(memory_block_size(&mp, 2, 4096, 0, 0), 2 * MIB);
    assert_int_equal(memory_block_size(&mp, 2, 4096, 9, 0), 16 * MIB);
    assert_int_equal(memory_dedicated_above(&mp, 2, 0), 8 * MIB);
    assert_int_equal(memory_block_size(&mp, 2, 8 * MIB + 1, 0, 0), 0);
    /* maxMemoryAllocationSize caps the full size. */
    assert_int_equal(memory_block_size(&mp, 1, 4096, 9, 20 * MIB), 20 * MIB);
    assert_int_equal(memory_dedicated_above(&mp, 1, 20 * MIB), 10 * MIB);
    /* A tiny heap: 64 KiB blocks from 8 KiB. */
    assert_int_equal(memory_block_size(&mp, 3, 100, 0, 0), 8 * 1024);
    assert_int_equal(memory_block_size(&mp, 3, 100, 5, 0), 64 * 1024);
    assert_int_equal(memory_block_size(&mp, 3, 40 * 1024, 0, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvidia_256mib_bar),
        cmocka_unit_test(test_amd_resizable_bar),
        cmocka_unit_test(test_integrated),
        cmocka_unit_test(test_integrated_carve_out),
        cmocka_unit_test(test_lavapipe_and_single_small_heap),
        cmocka_unit_test(test_noncoherent_only),
        cmocka_unit_test(test_atom_ranges),
        cmocka_unit_test(test_block_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
