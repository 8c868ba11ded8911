/* The registry of embedded SPIR-V: the only file that includes the generated headers. */
#include "internal.h"

#include "attention_combine_spv.h"
#include "attention_coopmat_emulated_spv.h"
#include "attention_coopmat_khr_bf16_spv.h"
#include "attention_coopmat_khr_spv.h"
#include "attention_coopmat_spv.h"
#include "attention_coopmat_workgroup_emulated_spv.h"
#include "attention_coopmat_workgroup_emulated_spirv16_spv.h"
#include "attention_coopmat_workgroup_khr_spirv16_spv.h"
#include "attention_coopmat_workgroup_khr_spv.h"
#include "attention_decode_spv.h"
#include "attention_rows_spv.h"
#include "attention_scores_spv.h"
#include "attention_tiled_spv.h"
#include "coopmat_layout_emulated_spv.h"
#include "coopmat_layout_product_emulated_spv.h"
#include "coopmat_layout_product_spv.h"
#include "coopmat_layout_spv.h"
#include "coopmat_layout_workgroup_emulated_spv.h"
#include "coopmat_layout_workgroup_khr_spirv16_spv.h"
#include "coopmat_layout_workgroup_khr_spv.h"
#include "coopmat_peak_emulated_spv.h"
#include "coopmat_peak_khr_spv.h"
#include "coopmat_peak_spv.h"
#include "coopmat_peak_workgroup_emulated_spv.h"
#include "coopmat_peak_workgroup_khr_spirv16_spv.h"
#include "coopmat_peak_workgroup_khr_spv.h"
#include "fill_spv.h"
#include "head_transpose_spv.h"
#include "matmul_coopmat_emulated_spv.h"
#include "matmul_coopmat_khr_spv.h"
#include "matmul_coopmat_spv.h"
#include "matmul_naive_spv.h"
#include "matmul_spv.h"
#include "matmul_texel_spv.h"
#include "narrow_spv.h"
#include "softmax_shared_spv.h"
#include "softmax_spv.h"

#define ENTRY_(id, name, words) [id] = {name, words, sizeof(words), 0}
/* A SPIR-V 1.3 module and its SPIR-V 1.6 twin (shader_code.spirv16). */
#define TWINS_(id, base)                                                                     \
    [id] = {#base, base##_spv, sizeof(base##_spv), id##_SPIRV16},                            \
    [id##_SPIRV16] = {#base "_spirv16", base##_spirv16_spv, sizeof(base##_spirv16_spv), 0}

static const shader_code registry[SHADER_COUNT] = {
    ENTRY_(SHADER_MATMUL, "matmul", matmul_spv),
    ENTRY_(SHADER_MATMUL_NAIVE, "matmul_naive", matmul_naive_spv),
    ENTRY_(SHADER_MATMUL_TEXEL, "matmul_texel", matmul_texel_spv),
    ENTRY_(SHADER_MATMUL_COOPMAT, "matmul_coopmat", matmul_coopmat_spv),
    ENTRY_(SHADER_MATMUL_COOPMAT_EMULATED, "matmul_coopmat_emulated", matmul_coopmat_emulated_spv),
    ENTRY_(SHADER_SOFTMAX_SUBGROUP, "softmax", softmax_spv),
    ENTRY_(SHADER_SOFTMAX_SHARED, "softmax_shared", softmax_shared_spv),
    ENTRY_(SHADER_HEAD_TRANSPOSE, "head_transpose", head_transpose_spv),
    ENTRY_(SHADER_ATTENTION_ROWS, "attention_rows", attention_rows_spv),
    ENTRY_(SHADER_ATTENTION_TILED, "attention_tiled", attention_tiled_spv),
    ENTRY_(SHADER_ATTENTION_COOPMAT, "attention_coopmat", attention_coopmat_spv),
    ENTRY_(SHADER_ATTENTION_COOPMAT_EMULATED, "attention_coopmat_emulated",
           attention_coopmat_emulated_spv),
    ENTRY_(SHADER_ATTENTION_COMBINE, "attention_combine", attention_combine_spv),
    ENTRY_(SHADER_ATTENTION_SCORES, "attention_scores", attention_scores_spv),
    ENTRY_(SHADER_ATTENTION_DECODE, "attention_decode", attention_decode_spv),
    ENTRY_(SHADER_NARROW, "narrow", narrow_spv),
    ENTRY_(SHADER_FILL, "fill", fill_spv),
    ENTRY_(SHADER_COOPMAT_LAYOUT, "coopmat_layout", coopmat_layout_spv),
    ENTRY_(SHADER_COOPMAT_LAYOUT_EMULATED, "coopmat_layout_emulated", coopmat_layout_emulated_spv),
    ENTRY_(SHADER_COOPMAT_LAYOUT_PRODUCT, "coopmat_layout_product", coopmat_layout_product_spv),
    ENTRY_(SHADER_COOPMAT_LAYOUT_PRODUCT_EMULATED, "coopmat_layout_product_emulated",
           coopmat_layout_product_emulated_spv),
    ENTRY_(SHADER_COOPMAT_PEAK, "coopmat_peak", coopmat_peak_spv),
    ENTRY_(SHADER_COOPMAT_PEAK_EMULATED, "coopmat_peak_emulated", coopmat_peak_emulated_spv),
    ENTRY_(SHADER_ATTENTION_COOPMAT_KHR, "attention_coopmat_khr", attention_coopmat_khr_spv),
    ENTRY_(SHADER_ATTENTION_COOPMAT_KHR_BF16, "attention_coopmat_khr_bf16",
           attention_coopmat_khr_bf16_spv),
    ENTRY_(SHADER_MATMUL_COOPMAT_KHR, "matmul_coopmat_khr", matmul_coopmat_khr_spv),
    ENTRY_(SHADER_COOPMAT_PEAK_KHR, "coopmat_peak_khr", coopmat_peak_khr_spv),
    TWINS_(SHADER_COOPMAT_PEAK_WORKGROUP_KHR, coopmat_peak_workgroup_khr),
    ENTRY_(SHADER_COOPMAT_PEAK_WORKGROUP_EMULATED, "coopmat_peak_workgroup_emulated",
           coopmat_peak_workgroup_emulated_spv),
    TWINS_(SHADER_COOPMAT_LAYOUT_WORKGROUP_KHR, coopmat_layout_workgroup_khr),
    ENTRY_(SHADER_COOPMAT_LAYOUT_WORKGROUP_EMULATED, "coopmat_layout_workgroup_emulated",
           coopmat_layout_workgroup_emulated_spv),
    TWINS_(SHADER_ATTENTION_COOPMAT_WORKGROUP_KHR, attention_coopmat_workgroup_khr),
    TWINS_(SHADER_ATTENTION_COOPMAT_WORKGROUP_EMULATED, attention_coopmat_workgroup_emulated),
};

const shader_code *shader_get(shader_id id) { return &registry[id]; }
