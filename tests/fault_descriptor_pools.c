#include "fault_descriptor_pools.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_POOLS = 1024 };

static struct {
    VkDescriptorPool pool;
    uint32_t max_sets, used;
} pools[MAX_POOLS];
static uint32_t alive, most_alive;
static long full_answers;

static int find(VkDescriptorPool pool)
{
    for (int i = 0; i < MAX_POOLS; i++)
        if (pools[i].pool == pool)
            return i;
    return -1;
}

void set_pools_created(VkDescriptorPool pool, uint32_t max_sets)
{
    int i = find(VK_NULL_HANDLE);
    if (i < 0) { /* a test's own limit, not vkattn's: say so loudly */
        fprintf(stderr, "fault_descriptor_pools: more than %d pools alive\n", MAX_POOLS);
        abort();
    }
    pools[i].pool = pool;
    pools[i].max_sets = max_sets;
    pools[i].used = 0;
    if (++alive > most_alive)
        most_alive = alive;
}

bool set_pools_take(VkDescriptorPool pool, uint32_t count)
{
    int i = find(pool);
    if (i < 0) /* not created through the wrapper: the driver's business */
        return true;
    if (count > pools[i].max_sets - pools[i].used) {
        full_answers++;
        return false;
    }
    pools[i].used += count;
    return true;
}

void set_pools_reset(VkDescriptorPool pool)
{
    int i = find(pool);
    if (i >= 0)
        pools[i].used = 0;
}

void set_pools_destroyed(VkDescriptorPool pool)
{
    int i = find(pool);
    if (i >= 0) {
        pools[i].pool = VK_NULL_HANDLE;
        alive--;
    }
}

void set_pools_stats(uint32_t *most, long *full)
{
    *most = most_alive;
    *full = full_answers;
    most_alive = alive;
    full_answers = 0;
}
