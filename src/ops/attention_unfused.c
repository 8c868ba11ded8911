/* The unfused attention path, the seeds' pipeline as separate kernels:
 *   (BSHD only) head transpose Q, K, V to BHSD scratch copies;
 *   S = Q K^T (matmul, B*H batches, kv batch z / group for grouped-query);
 *   (with score variants) S = adjusted scale * S, -inf outside a window, in place;
 *   P = masked softmax(scale * S) in place (sinks in its denominator);
 *   O = P V (matmul); (BSHD only) head transpose O back.
 * The scores are Tq x Tk per head. They go through one scratch buffer no larger
 * than the device's buffer range (and SCORES_BUDGET_BYTES): a chunk of whole
 * heads at a time, or of query rows of one head when a single head does not fit. */
#include "attention_fused.h"

/* Memory the scores may take at once, whatever the device allows: beyond this
 * the unfused path gains nothing from fewer, larger chunks. */
#define SCORES_BUDGET_BYTES ((uint64_t)256 << 20)

typedef struct chunking {
    uint64_t heads;  /* heads per chunk */
    uint64_t rows;   /* query rows per chunk (Tq unless heads == 1) */
} chunking;

static vkattn_status plan_chunks(vkattn_context *ctx, const attention_dims *d, chunking *out)
{
    uint64_t limit = ctx->info.max_storage_buffer_range;
    if (ctx->vk.max_allocation_size && ctx->vk.max_allocation_size < limit)
        limit = ctx->vk.max_allocation_size;
    if (limit > SCORES_BUDGET_BYTES)
        limit = SCORES_BUDGET_BYTES;
    uint64_t max_elements = limit / sizeof(float);
    uint64_t per_head = (uint64_t)d->Tq * (uint64_t)d->Tk;
    uint64_t heads = (uint64_t)(d->B * d->H), group = (uint64_t)(d->H / d->Hkv);
    if (per_head <= max_elements) {
        out->rows = (uint64_t)d->Tq;
        out->heads = max_elements / per_head < heads ? max_elements / per_head : heads;
        /* A chunk of several heads starts on a kv-head boundary, so one B batch
         * stride serves it; fewer heads than a group go one at a time. */
        out->heads = out->heads >= group ? out->heads / group * group : 1;
        return VKATTN_OK;
    }
    out->heads = 1;
    out->rows = max_elements / (uint64_t)d->Tk;
    if (out->rows == 0)
        return ctx_fail(ctx, VKATTN_ERROR_EXCEEDS_DEVICE_LIMIT,
                        "attention: one row of %lld scores exceeds the %llu bytes the unfused "
                        "path may use; use the fused path",
                        (long long)d->Tk, (unsigned long long)limit);
    return VKATTN_OK;
}

/* The BHSD operands: the tensors themselves, or scratch copies for BSHD. */
typedef struct operands {
    const vkattn_tensor *q, *k, *v;
    vkattn_tensor *o, *scores;
} operands;

static vkattn_status get_operands(vkattn_context *ctx, const attention_call *c,
                                  const chunking *ch, operands *out)
{
    const attention_dims *d = &c->dims;
    vkattn_tensor *scratch[4];
    vkattn_status s = scratch_get(ctx, SCRATCH_ATTN_SCORES, VKATTN_DTYPE_F32,
                                  ch->heads * ch->rows * (uint64_t)d->Tk, &out->scores);
    if (s != VKATTN_OK || d->layout == VKATTN_LAYOUT_BHSD) {
        out->q = c->q, out->k = c->k, out->v = c->v, out->o = c->o;
        return s;
    }
    uint64_t q_heads = (uint64_t)(d->B * d->H), kv_heads = (uint64_t)(d->B * d->Hkv);
    uint64_t sizes[4] = {q_heads * (uint64_t)(d->Tq * d->D), kv_heads * (uint64_t)(d->Tk * d->D),
                         kv_heads * (uint64_t)(d->Tk * d->Dv), q_heads * (uint64_t)(d->Tq * d->Dv)};
    for (int i = 0; i < 4; i++)
        if ((s = scratch_get(ctx, (scratch_slot)(SCRATCH_ATTN_Q + i), VKATTN_DTYPE_F32, sizes[i],
                             &scratch[i])))
            return s;
    out->q = scratch[0], out->k = scratch[1], out->v = scratch[2], out->o = scratch[3];
    return VKATTN_OK;
}

/* Keep in sync with shaders/attention_scores.comp. */
typedef struct scores_push {
    uint32_t count;
    uint32_t Tk, rows, heads;
    uint32_t z0, r0;
    uint32_t H;
    int32_t q_offset;
    float scale_log2e, softcap_log2e;
    int32_t window_left, window_right;
    uint32_t mask_sb, mask_sh, mask_si;
} scores_push;
_Static_assert(sizeof(scores_push) <= VKATTN_PUSH_CONSTANT_BYTES, "push constants too large");

#define SCORES_WORKGROUP 64

/* The score variants over a chunk of raw scores, in place (attention_scores.comp):
 * scaled, adjusted, -inf outside the window, in the exp2 domain. */
static vkattn_status record_score_variants(vkattn_context *ctx, const attention_call *c,
                                           const operands *op, uint64_t z0, uint64_t nz,
                                           uint64_t r0, uint64_t nr)
{
    const attention_dims *d = &c->dims;
    const attention_variants *v = &d->var;
    scores_push push = {
        .count = (uint32_t)(nz * nr * (uint64_t)d->Tk),
        .Tk = (uint32_t)d->Tk, .rows = (uint32_t)nr, .heads = (uint32_t)nz,
        .z0 = (uint32_t)z0, .r0 = (uint32_t)r0, .H = (uint32_t)d->H,
        .q_offset = (int32_t)d->q_offset,
        .scale_log2e = (float)((double)d->scale * LOG2_E),
        .softcap_log2e = softcap_log2e(v->softcap),
        .window_left = attention_window_side(v->window_left, d),
        .window_right = attention_window_side(v->window_right, d),
        .mask_sb = (uint32_t)v->mask_sb, .mask_sh = (uint32_t)v->mask_sh,
        .mask_si = (uint32_t)v->mask_si,
    };
    vk_dispatch dispatch = {
        .key = {.shader = SHADER_ATTENTION_SCORES,
                .spec_count = ATTENTION_SPEC_COUNT,
                .spec = {[0] = SCORES_WORKGROUP,
                         [ATTENTION_VARIANTS_SPEC_ID] = attention_variant_bits(c)}},
        .bindings = {vk_bind(op->scores, true), [8] = vk_bind(v->mask, false),
                     [10] = vk_bind(v->alibi, false)},
        .binding_count = 11,
        .push = &push,
        .push_bytes = sizeof push,
    };
    vkattn_status s = grid_for(ctx, div_up(push.count, SCORES_WORKGROUP), "attention",
                               dispatch.groups);
    return s ? s : vk_cmd_dispatch(ctx, &dispatch);
}

/* Scores, softmax and P @ V for heads [z0, z0 + nz) and query rows [r0, r0 + nr). */
static vkattn_status record_chunk(vkattn_context *ctx, const attention_call *c, const operands *op,
                                  uint64_t z0, uint64_t nz, uint64_t r0, uint64_t nr)
{
    const attention_dims *d = &c->dims;
    uint64_t group = (uint64_t)(d->H / d->Hkv);
    uint64_t Tq = (uint64_t)d->Tq, Tk = (uint64_t)d->Tk, D = (uint64_t)d->D, Dv = (uint64_t)d->Dv;
    matmul_call scores = {
        .a = op->q, .b = op->k, .c = op->scores,
        .M = (uint32_t)nr, .N = (uint32_t)Tk, .K = (uint32_t)D,
        .batch = nz,
        .b_group = (uint32_t)group,
        .b_batched = true,
        .transpose_b = true,
        .a_offset = (uint32_t)((z0 * Tq + r0) * D),
        .b_offset = (uint32_t)(z0 / group * Tk * D),
        .alpha = 1.0f,
    };
    vkattn_status s = vk_matmul_record(ctx, &scores);
    bool adjusted = attention_has_score_variants(d);
    if (s == VKATTN_OK && adjusted)
        s = record_score_variants(ctx, c, op, z0, nz, r0, nr);
    if (s != VKATTN_OK)
        return s;
    softmax_call softmax = {
        .x = op->scores, .y = op->scores, .kv_len = c->kv_len,
        .rows = nz * nr,
        .Tq = (uint32_t)nr, .Tk = (uint32_t)Tk,
        /* Chunk row x is row z0 * Tq + r0 + x of all B * H * Tq: batch entry
         * (that) / (H * Tq) whether the chunk holds whole heads or rows of one. */
        .rows_per_batch = (uint32_t)((uint64_t)d->H * Tq),
        .kv_row_base = (uint32_t)(z0 * Tq + r0),
        /* Adjusted scores are already scaled, in the exp2 domain: ln 2 makes
         * the softmax's exponent exactly 2^s. */
        .scale = adjusted ? (float)LN_2 : d->scale,
        .causal = d->causal,
        .q_offset = (int32_t)(d->q_offset + (int64_t)r0),
        .sinks = d->var.sinks,
        .alibi = d->var.alibi,
        .rows_per_head = (uint32_t)Tq,
        .heads = (uint32_t)d->H,
        /* The window by position (its keys outside are also -inf here, from
         * record_score_variants, but so is a score the data made -inf). */
        .has_window = d->var.has_window,
        .window_left = attention_window_side(d->var.window_left, d),
        .window_right = attention_window_side(d->var.window_right, d),
        .mark_masked = true,
        /* A mask's -inf counts as not allowed (DESIGN.md), and no position
         * tells it from the data's: the fused kernels skip both too. */
        .neg_inf_masked = d->var.mask != NULL,
    };
    if ((s = vk_softmax_record(ctx, &softmax)) != VKATTN_OK)
        return s;
    matmul_call values = {
        .a = op->scores, .b = op->v, .c = op->o,
        .M = (uint32_t)nr, .N = (uint32_t)Dv, .K = (uint32_t)Tk,
        .batch = nz,
        .b_group = (uint32_t)group,
        .b_batched = true,
        .b_offset = (uint32_t)(z0 / group * Tk * Dv),
        .c_offset = (uint32_t)((z0 * Tq + r0) * Dv),
        .alpha = 1.0f,
        /* Masked keys have P = MASKED_WEIGHT; a NaN or Inf in their V rows must
         * not reach the row (DESIGN.md section 2). */
        .masked_a_skips = true,
    };
    return vk_matmul_record(ctx, &values);
}

vkattn_status vk_attention_unfused(vkattn_context *ctx, const attention_call *c)
{
    const attention_dims *d = &c->dims;
    /* Packed and paged sequences never come here: attention_check_args refuses
     * them with UNFUSED, and AUTO routes them to the fused path. */
    chunking ch;
    operands op;
    vkattn_status s = plan_chunks(ctx, d, &ch);
    if (s == VKATTN_OK)
        s = get_operands(ctx, c, &ch, &op);
    if (s != VKATTN_OK)
        return s;
    bool bshd = d->layout == VKATTN_LAYOUT_BSHD;
    if (bshd) {
        const int64_t q_dims[4] = {d->B, d->Tq, d->H, d->D};
        const int64_t k_dims[4] = {d->B, d->Tk, d->Hkv, d->D};
        const int64_t v_dims[4] = {d->B, d->Tk, d->Hkv, d->Dv};
        if ((s = vk_head_transpose_record(ctx, c->q, (vkattn_tensor *)op.q, q_dims)) ||
            (s = vk_head_transpose_record(ctx, c->k, (vkattn_tensor *)op.k, k_dims)) ||
            (s = vk_head_transpose_record(ctx, c->v, (vkattn_tensor *)op.v, v_dims)))
            return s;
    }
    uint64_t heads = (uint64_t)(d->B * d->H);
    for (uint64_t z0 = 0; z0 < heads; z0 += ch.heads)
        for (uint64_t r0 = 0; r0 < (uint64_t)d->Tq; r0 += ch.rows) {
            uint64_t nz = heads - z0 < ch.heads ? heads - z0 : ch.heads;
            uint64_t nr = (uint64_t)d->Tq - r0 < ch.rows ? (uint64_t)d->Tq - r0 : ch.rows;
            if ((s = record_chunk(ctx, c, &op, z0, nz, r0, nr)) != VKATTN_OK)
                return s;
        }
    if (bshd) {
        const int64_t o_dims[4] = {d->B, d->H, d->Tq, d->Dv};
        return vk_head_transpose_record(ctx, op.o, c->o, o_dims);
    }
    return VKATTN_OK;
}
