/* The fault wrapper's pool of driver pipelines: a compute pipeline that vkattn
 * destroys is kept, and the next context that asks for the same one (the same
 * SPIR-V, specialization, subgroup size, flags and layout definition) gets it
 * back instead of a new compile. vkattn still makes and counts every call; to
 * it the wrapper is a driver with a pipeline cache in memory. It makes each run
 * of the failure scenario cheap on lavapipe, whose own pipeline cache is a stub
 * (Mesa 22.3: every context's pipelines went through SPIR-V to NIR again, about
 * 90 % of a run). What it gives up: a pooled pipeline stays alive in the
 * driver, so the validation layer would not see vkattn use one after destroying
 * it; every other test destroys its pipelines for real. One thread. */
#ifndef VKATTN_FAULT_PIPELINE_POOL_H
#define VKATTN_FAULT_PIPELINE_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

/* A handle as the 64 bits the pool keys on: a pointer on 64-bit builds, a
 * uint64_t on 32-bit ones. */
#define POOL_HANDLE(h) ((uint64_t)(h))

/* What a pipeline depends on, noted as the wrapper creates it; forgotten when
 * destroyed (the driver may hand the handle out again). An object whose create
 * info has anything the pool does not understand is left undefined, and a
 * pipeline that uses it is never pooled. */
void pool_define_module(uint64_t handle, const VkShaderModuleCreateInfo *info);
void pool_define_set_layout(uint64_t handle, const VkDescriptorSetLayoutCreateInfo *info);
void pool_define_pipeline_layout(uint64_t handle, const VkPipelineLayoutCreateInfo *info);
void pool_forget(uint64_t handle);

/* The key of a pipeline to create, or false where it is not to be pooled. */
bool pool_key(const VkComputePipelineCreateInfo *info, uint64_t *key);
/* A pooled pipeline of that key that nobody uses now, marked in use. */
bool pool_take(uint64_t key, VkPipeline *out);
/* A pipeline the driver has just created for the key with the layout, in use. */
void pool_add(uint64_t key, VkPipeline pipeline, VkPipelineLayout layout);
/* The pipeline is being destroyed: true where the pool keeps it instead. */
bool pool_give_back(VkPipeline pipeline);
/* The pipeline layout is being destroyed: true where the pool keeps it instead,
 * because a pooled pipeline was created with it (without maintenance4 a
 * pipeline must not outlive its layout; a later context binds it with its own,
 * identically defined layout, which is compatible). */
bool pool_keeps_layout(VkPipelineLayout layout);
/* Every pooled pipeline nobody uses, then every layout kept for them, handed
 * to destroy_pipeline and destroy_layout and dropped; the definitions too. */
void pool_drain(void (*destroy_pipeline)(VkPipeline pipeline),
                void (*destroy_layout)(VkPipelineLayout layout));

#endif
