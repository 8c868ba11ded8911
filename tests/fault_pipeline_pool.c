/* The fault wrapper's pool of driver pipelines (fault_pipeline_pool.h). Keys
 * are 64-bit FNV-1a hashes of the create infos, the objects they name replaced
 * by the hashes of their own definitions. */
#include "fault_pipeline_pool.h"

#include <string.h>

enum { MAX_DEFINITIONS = 256, MAX_POOLED = 256 };

typedef struct definition {
    uint64_t handle, hash;
} definition;

typedef struct pooled {
    uint64_t key;
    VkPipeline pipeline;
    VkPipelineLayout layout; /* it was created with */
    bool in_use;
} pooled;

static definition definitions[MAX_DEFINITIONS];
static int definition_count;
static pooled pool[MAX_POOLED];
static int pool_count;
static VkPipelineLayout kept_layouts[MAX_POOLED]; /* destroyed by vkattn, kept for the pool */
static int kept_layout_count;

static const uint64_t fnv_basis = 14695981039346656037ull;

static uint64_t fnv(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ p[i]) * 1099511628211ull;
    return hash;
}

#define HASH_VALUE(hash, value) ((hash) = fnv((hash), &(value), sizeof(value)))

static void define(uint64_t handle, uint64_t hash)
{
    pool_forget(handle);
    if (definition_count < MAX_DEFINITIONS)
        definitions[definition_count++] = (definition){handle, hash};
}

static bool defined(uint64_t handle, uint64_t *hash)
{
    for (int i = 0; i < definition_count; i++)
        if (definitions[i].handle == handle) {
            *hash = definitions[i].hash;
            return true;
        }
    return false;
}

void pool_forget(uint64_t handle)
{
    for (int i = 0; i < definition_count; i++)
        if (definitions[i].handle == handle) {
            definitions[i] = definitions[--definition_count];
            return;
        }
}

void pool_define_module(uint64_t handle, const VkShaderModuleCreateInfo *info)
{
    pool_forget(handle);
    if (info->pNext || info->flags)
        return;
    define(handle, fnv(fnv_basis, info->pCode, info->codeSize));
}

void pool_define_set_layout(uint64_t handle, const VkDescriptorSetLayoutCreateInfo *info)
{
    pool_forget(handle);
    if (info->pNext)
        return;
    uint64_t h = fnv_basis;
    HASH_VALUE(h, info->flags);
    HASH_VALUE(h, info->bindingCount);
    for (uint32_t i = 0; i < info->bindingCount; i++) {
        const VkDescriptorSetLayoutBinding *b = &info->pBindings[i];
        if (b->pImmutableSamplers)
            return;
        HASH_VALUE(h, b->binding);
        HASH_VALUE(h, b->descriptorType);
        HASH_VALUE(h, b->descriptorCount);
        HASH_VALUE(h, b->stageFlags);
    }
    define(handle, h);
}

void pool_define_pipeline_layout(uint64_t handle, const VkPipelineLayoutCreateInfo *info)
{
    pool_forget(handle);
    if (info->pNext)
        return;
    uint64_t h = fnv_basis;
    HASH_VALUE(h, info->flags);
    HASH_VALUE(h, info->setLayoutCount);
    for (uint32_t i = 0; i < info->setLayoutCount; i++) {
        uint64_t set_hash;
        if (!defined(POOL_HANDLE(info->pSetLayouts[i]), &set_hash))
            return;
        HASH_VALUE(h, set_hash);
    }
    HASH_VALUE(h, info->pushConstantRangeCount);
    h = fnv(h, info->pPushConstantRanges,
            info->pushConstantRangeCount * sizeof *info->pPushConstantRanges);
    define(handle, h);
}

bool pool_key(const VkComputePipelineCreateInfo *info, uint64_t *key)
{
    const VkPipelineShaderStageCreateInfo *stage = &info->stage;
    uint32_t required_size = 0;
    if (stage->pNext) {
        const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo *size = stage->pNext;
        if (size->sType !=
                VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO ||
            size->pNext)
            return false;
        required_size = size->requiredSubgroupSize;
    }
    uint64_t module_hash, layout_hash;
    if (info->pNext || info->basePipelineHandle != VK_NULL_HANDLE ||
        !defined(POOL_HANDLE(stage->module), &module_hash) ||
        !defined(POOL_HANDLE(info->layout), &layout_hash))
        return false;
    uint64_t h = fnv_basis;
    HASH_VALUE(h, info->flags);
    HASH_VALUE(h, stage->flags);
    HASH_VALUE(h, stage->stage);
    HASH_VALUE(h, required_size);
    HASH_VALUE(h, module_hash);
    HASH_VALUE(h, layout_hash);
    h = fnv(h, stage->pName, strlen(stage->pName) + 1);
    const VkSpecializationInfo *spec = stage->pSpecializationInfo;
    if (spec) {
        HASH_VALUE(h, spec->mapEntryCount);
        HASH_VALUE(h, spec->dataSize);
        h = fnv(h, spec->pMapEntries, spec->mapEntryCount * sizeof *spec->pMapEntries);
        h = fnv(h, spec->pData, spec->dataSize);
    }
    *key = h;
    return true;
}

bool pool_take(uint64_t key, VkPipeline *out)
{
    for (int i = 0; i < pool_count; i++)
        if (pool[i].key == key && !pool[i].in_use) {
            pool[i].in_use = true;
            *out = pool[i].pipeline;
            return true;
        }
    return false;
}

void pool_add(uint64_t key, VkPipeline pipeline, VkPipelineLayout layout)
{
    if (pool_count < MAX_POOLED)
        pool[pool_count++] = (pooled){key, pipeline, layout, true};
}

bool pool_give_back(VkPipeline pipeline)
{
    for (int i = 0; i < pool_count; i++)
        if (pool[i].pipeline == pipeline && pool[i].in_use) {
            pool[i].in_use = false;
            return true;
        }
    return false;
}

bool pool_keeps_layout(VkPipelineLayout layout)
{
    for (int i = 0; i < pool_count; i++)
        if (pool[i].layout == layout && kept_layout_count < MAX_POOLED) {
            kept_layouts[kept_layout_count++] = layout;
            return true;
        }
    return false;
}

void pool_drain(void (*destroy_pipeline)(VkPipeline pipeline),
                void (*destroy_layout)(VkPipelineLayout layout))
{
    int kept = 0;
    for (int i = 0; i < pool_count; i++) {
        if (pool[i].in_use)
            pool[kept++] = pool[i];
        else
            destroy_pipeline(pool[i].pipeline);
    }
    pool_count = kept;
    /* A pipeline still in use (a leak, already reported) keeps its layout. */
    int layouts_kept = 0;
    for (int i = 0; i < kept_layout_count; i++) {
        bool used = false;
        for (int j = 0; j < pool_count; j++)
            used = used || pool[j].layout == kept_layouts[i];
        if (used)
            kept_layouts[layouts_kept++] = kept_layouts[i];
        else
            destroy_layout(kept_layouts[i]);
    }
    kept_layout_count = layouts_kept;
    definition_count = 0;
}
