/* Descriptor-set and pipeline layouts shared by every kernel, shader modules, and
 * compute pipelines cached by (shader, specialization constants). */
#include "internal.h"
#include "pipeline_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vkattn_status vk_pipelines_init(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    vk_state *vk = &ctx->vk;
    /* One layout for all kernels: set 0 with VKATTN_MAX_BINDINGS storage buffers and
     * their texel views (see VKATTN_TEXEL_BINDING_BASE) and one push-constant
     * block. Kernels differ only in which bindings they use. */
    VkDescriptorSetLayoutBinding bindings[2 * VKATTN_MAX_BINDINGS];
    for (uint32_t i = 0; i < 2 * VKATTN_MAX_BINDINGS; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = i < VKATTN_TEXEL_BINDING_BASE ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                            : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo sli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 2 * VKATTN_MAX_BINDINGS,
        .pBindings = bindings,
    };
    VkResult r = vk->vkd.CreateDescriptorSetLayout(vk->device, &sli, NULL, &vk->set_layout);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, VKATTN_PUSH_CONSTANT_BYTES};
    VkPipelineLayoutCreateInfo pli = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &vk->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range,
    };
    r = vk->vkd.CreatePipelineLayout(vk->device, &pli, NULL, &vk->pipeline_layout);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreatePipelineLayout");
    vk->pipeline_cache_path = pipeline_cache_file(ctx, desc);
    size_t size = 0;
    void *data = vk->pipeline_cache_path ? pipeline_cache_load(ctx, vk->pipeline_cache_path, &size)
                                         : NULL;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = size,
                                    .pInitialData = data};
    r = vk->vkd.CreatePipelineCache(vk->device, &ci, NULL, &vk->pipeline_cache);
    if (r != VK_SUCCESS && data) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "pipeline cache %s refused by the driver (%s); "
                "starting empty", vk->pipeline_cache_path, vk_result_string(r));
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        size = 0;
        r = vk->vkd.CreatePipelineCache(vk->device, &ci, NULL, &vk->pipeline_cache);
    }
    free(data);
    if (r != VK_SUCCESS)
        return ctx_fail_vk(ctx, r, "vkCreatePipelineCache");
    vk->pipeline_cache_loaded = size;
    return VKATTN_OK;
}

void vk_pipelines_destroy(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!vk->device || !vk->vkd.DestroyPipeline)
        return;
    if (vk->pipeline_cache)
        pipeline_cache_save(ctx);
    for (uint32_t i = 0; i < vk->pipeline_count; i++)
        vk->vkd.DestroyPipeline(vk->device, vk->pipelines[i].pipeline, NULL);
    free(vk->pipelines);
    vk->pipelines = NULL;
    vk->pipeline_count = vk->pipeline_capacity = 0;
    for (uint32_t i = 0; i < SHADER_COUNT; i++)
        if (vk->modules[i])
            vk->vkd.DestroyShaderModule(vk->device, vk->modules[i], NULL);
    if (vk->pipeline_cache)
        vk->vkd.DestroyPipelineCache(vk->device, vk->pipeline_cache, NULL);
    free(vk->pipeline_cache_path);
    vk->pipeline_cache_path = NULL;
    if (vk->pipeline_layout)
        vk->vkd.DestroyPipelineLayout(vk->device, vk->pipeline_layout, NULL);
    if (vk->set_layout)
        vk->vkd.DestroyDescriptorSetLayout(vk->device, vk->set_layout, NULL);
}

static bool key_equal(const pipeline_key *a, const pipeline_key *b)
{
    return a->shader == b->shader && a->subgroup_size == b->subgroup_size &&
           a->spec_count == b->spec_count &&
           memcmp(a->spec, b->spec, a->spec_count * sizeof a->spec[0]) == 0;
}

/* The module of `id`, made once a context. */
static VkResult module_of(vk_state *vk, shader_id id, VkShaderModule *out)
{
    if (!vk->modules[id]) {
        const shader_code *code = shader_get(id);
        VkShaderModuleCreateInfo mi = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
            .codeSize = code->size_bytes,
            .pCode = code->words,
        };
        VkResult r = vk->vkd.CreateShaderModule(vk->device, &mi, NULL, &vk->modules[id]);
        if (r != VK_SUCCESS)
            return r;
    }
    *out = vk->modules[id];
    return VK_SUCCESS;
}

/* Logs (INFO) each executable of a new pipeline with the statistics its driver
 * reports, e.g. "pipeline statistics: attention_tiled [spec 128,2,16,...;
 * subgroup 32] Compute: Register Count=96, ...". A diagnostic: a query that
 * fails is logged and the pipeline used as it is. */
static void log_pipeline_statistics(vkattn_context *ctx, const pipeline_key *key,
                                    VkPipeline pipeline)
{
    vk_state *vk = &ctx->vk;
    if (!vk->vkd.GetPipelineExecutablePropertiesKHR || !vk->vkd.GetPipelineExecutableStatisticsKHR)
        return;
    char spec[160] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < key->spec_count && len < sizeof spec; i++) {
        int n = snprintf(spec + len, sizeof spec - len, "%s%u", i ? "," : "", key->spec[i]);
        len += n > 0 ? (size_t)n : 0;
    }
    const char *name = shader_get(key->shader)->name;
    VkPipelineInfoKHR pipeline_info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
                                       .pipeline = pipeline};
    VkPipelineExecutablePropertiesKHR executables[4];
    uint32_t count = 4;
    for (uint32_t i = 0; i < count; i++)
        executables[i] = (VkPipelineExecutablePropertiesKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    VkResult r = vk->vkd.GetPipelineExecutablePropertiesKHR(vk->device, &pipeline_info, &count,
                                                            executables);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "pipeline statistics: %s: "
                "vkGetPipelineExecutablePropertiesKHR: %s", name, vk_result_string(r));
        return;
    }
    for (uint32_t e = 0; e < count; e++) {
        VkPipelineExecutableStatisticKHR stats[32];
        uint32_t n = 32;
        for (uint32_t i = 0; i < n; i++)
            stats[i] = (VkPipelineExecutableStatisticKHR){
                .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkPipelineExecutableInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                            .pipeline = pipeline, .executableIndex = e};
        r = vk->vkd.GetPipelineExecutableStatisticsKHR(vk->device, &info, &n, stats);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
            ctx_log(ctx, VKATTN_LOG_WARNING, "pipeline statistics: %s: "
                    "vkGetPipelineExecutableStatisticsKHR: %s", name, vk_result_string(r));
            return;
        }
        char line[512];
        pipeline_stats_format(stats, n, line, sizeof line);
        char subgroup[32] = "any subgroup size";
        if (key->subgroup_size)
            snprintf(subgroup, sizeof subgroup, "subgroup %u", key->subgroup_size);
        /* Within the log's 1024 characters: the executable's name (a stage,
         * "Compute" for NVIDIA) cut at 64. */
        int executable_len = (int)pipeline_stats_name_length(executables[e].name);
        ctx_log(ctx, VKATTN_LOG_INFO, "pipeline statistics: %s [spec %s; %s] %.*s: %s", name,
                spec, subgroup, executable_len < 64 ? executable_len : 64, executables[e].name,
                line);
    }
}

/* The order of the subgroups of the pipeline of `key`
 * (vkattn_context.subgroup_order). Mixed: the odd or the even workgroups
 * reversed, by a hash of the key, so that a dispatch of one workgroup meets
 * either order too; the same key gets the same order in every run. */
static subgroup_order pipeline_subgroup_order(const vkattn_context *ctx, const pipeline_key *key)
{
    if (ctx->subgroup_order != SUBGROUP_ORDER_MIXED)
        return ctx->subgroup_order;
    uint32_t h = 2166136261u; /* FNV-1a over the key's words, then a final mix */
    uint32_t words[2 + VKATTN_MAX_SPEC_CONSTANTS] = {(uint32_t)key->shader, key->subgroup_size};
    memcpy(words + 2, key->spec, key->spec_count * sizeof(uint32_t));
    for (uint32_t i = 0; i < 2 + key->spec_count; i++)
        h = (h ^ words[i]) * 16777619u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    return h & 1u ? SUBGROUP_ORDER_ODD_REVERSED : SUBGROUP_ORDER_EVEN_REVERSED;
}

/* The pipeline `pi` describes, from the module of `shader`. A module built
 * twice is taken in its SPIR-V 1.6 form where the context takes those
 * (vk_state.spirv16), and in its 1.3 form where the driver refuses the 1.6
 * one (the two forms of the workgroup-scope kernels have not met the same
 * driver yet: one may be taken where the other is not). VKATTN_SPIRV16=refused
 * has every 1.6 form refused, so that the fallback runs where drivers take
 * both. */
static vkattn_status create_pipeline(vkattn_context *ctx, shader_id shader,
                                     VkComputePipelineCreateInfo *pi, VkPipeline *out)
{
    vk_state *vk = &ctx->vk;
    shader_id twin = shader_get(shader)->spirv16;
    if (vk->spirv16 && twin && !vk->spirv16_declined[twin]) {
        VkResult r = vk->spirv16_refused ? VK_ERROR_UNKNOWN
                                         : module_of(vk, twin, &pi->stage.module);
        if (r == VK_SUCCESS)
            r = vk->vkd.CreateComputePipelines(vk->device, vk->pipeline_cache, 1, pi, NULL, out);
        if (r == VK_SUCCESS)
            return VKATTN_OK;
        /* Once: the context's later pipelines of this module take the 1.3
         * form straight away. */
        vk->spirv16_declined[twin] = true;
        ctx_log(ctx, VKATTN_LOG_WARNING, "%s: its SPIR-V 1.6 form refused %s (%s); taking its "
                "SPIR-V 1.3 form", shader_get(shader)->name,
                vk->spirv16_refused ? "on purpose" : "by the driver",
                vk->spirv16_refused ? "VKATTN_SPIRV16=refused" : vk_result_string(r));
    }
    VkResult r = module_of(vk, shader, &pi->stage.module);
    if (r == VK_SUCCESS)
        r = vk->vkd.CreateComputePipelines(vk->device, vk->pipeline_cache, 1, pi, NULL, out);
    return r == VK_SUCCESS ? VKATTN_OK : ctx_fail_vk(ctx, r, shader_get(shader)->name);
}

vkattn_status vk_pipeline_get(vkattn_context *ctx, const pipeline_key *key, VkPipeline *out)
{
    vk_state *vk = &ctx->vk;
    for (uint32_t i = 0; i < vk->pipeline_count; i++)
        if (key_equal(&vk->pipelines[i].key, key)) {
            *out = vk->pipelines[i].pipeline;
            return VKATTN_OK;
        }

    if (vk->pipeline_count == vk->pipeline_capacity) {
        uint32_t cap = vk->pipeline_capacity ? vk->pipeline_capacity * 2 : 16;
        pipeline_entry *grown = realloc(vk->pipelines, cap * sizeof *grown);
        if (!grown)
            return ctx_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "pipeline cache: out of memory");
        vk->pipelines = grown;
        vk->pipeline_capacity = cap;
    }

    /* The kernel's constants, then whether the context poisons shared memory
     * (a bool) and the order of the pipeline's subgroups (a uint), which every
     * kernel with shared memory declares and the others ignore. */
    VkSpecializationMapEntry entries[VKATTN_MAX_SPEC_CONSTANTS + 2];
    uint32_t values[VKATTN_MAX_SPEC_CONSTANTS + 2];
    uint32_t count = key->spec_count;
    for (uint32_t i = 0; i < count; i++) {
        entries[i] = (VkSpecializationMapEntry){i, i * sizeof(uint32_t), sizeof(uint32_t)};
        values[i] = key->spec[i];
    }
    if (ctx->poison) {
        entries[count] = (VkSpecializationMapEntry){VKATTN_SPEC_POISON_SHARED,
                                                    count * sizeof(uint32_t), sizeof(VkBool32)};
        values[count++] = VK_TRUE;
    }
    subgroup_order order = pipeline_subgroup_order(ctx, key);
    if (order != SUBGROUP_ORDER_NATURAL) {
        entries[count] = (VkSpecializationMapEntry){VKATTN_SPEC_SUBGROUP_ORDER,
                                                    count * sizeof(uint32_t), sizeof(uint32_t)};
        values[count++] = order;
    }
    VkSpecializationInfo spec = {
        .mapEntryCount = count,
        .pMapEntries = entries,
        .dataSize = count * sizeof(uint32_t),
        .pData = values,
    };
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required_size = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = key->subgroup_size,
    };
    VkComputePipelineCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        /* .stage.module: create_pipeline, which picks the module */
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .pNext = key->subgroup_size ? &required_size : NULL,
            .flags = key->subgroup_size ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
                                        : 0,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .pName = "main",
            .pSpecializationInfo = count ? &spec : NULL,
        },
        .layout = vk->pipeline_layout,
        .flags = vk->enabled.pipeline_statistics ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
                                                 : 0,
    };
    VkPipeline pipeline;
    vkattn_status s = create_pipeline(ctx, key->shader, &pi, &pipeline);
    if (s != VKATTN_OK)
        return s;
    vk->pipelines[vk->pipeline_count++] = (pipeline_entry){*key, pipeline};
    if (vk->enabled.pipeline_statistics)
        log_pipeline_statistics(ctx, key, pipeline);
    *out = pipeline;
    return VKATTN_OK;
}
