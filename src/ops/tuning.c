/* Experiment knobs of the kernels' plans (tuning.h): vkattn_context_desc.tuning
 * or VKATTN_TUNE, "kernel.knob=N" entries separated by commas, parsed once when
 * a context is created. Planners read a knob with tuning_value() and fall back
 * to their own choice; a value they cannot take (a tile that does not fit in
 * shared memory, more lanes than a subgroup) makes them refuse the call, naming
 * the setting, so that a sweep on a GPU reports it instead of timing something
 * else. bench/tune_sweep.py sweeps them. */
#include "attention_fused.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_BIT(k) (1u << (k))
#define VARIANT_BIT(v) KERNEL_BIT(VKATTN_FUSED_##v)
#define EVERY_VARIANT (VARIANT_BIT(ROWS) | VARIANT_BIT(TILED) | VARIANT_BIT(DECODE) | \
                       VARIANT_BIT(COOPMAT) | VARIANT_BIT(COOPMAT_EMULATED) | WORKGROUP_BOTH)
#define COOPMAT_BOTH (VARIANT_BIT(COOPMAT) | VARIANT_BIT(COOPMAT_EMULATED))
#define WORKGROUP_BOTH (VARIANT_BIT(COOPMAT_WORKGROUP) | VARIANT_BIT(COOPMAT_WORKGROUP_EMULATED))
#define MATMUL_BOTH (KERNEL_BIT(TUNING_MATMUL_COOPMAT) | KERNEL_BIT(TUNING_MATMUL_COOPMAT_EMULATED))

/* Indexed by tuning_knob: its name, the kernels that read it, its range. */
static const struct {
    const char *name;
    uint32_t kernels;
    uint32_t min, max;
} knobs[KNOB_COUNT] = {
    [KNOB_TARGET] = {"target", EVERY_VARIANT, 1, 1u << 20},
    [KNOB_ROWS] = {"rows", VARIANT_BIT(TILED) | COOPMAT_BOTH | WORKGROUP_BOTH | MATMUL_BOTH, 1, 4},
    [KNOB_KEYS] = {"keys", VARIANT_BIT(TILED) | COOPMAT_BOTH | WORKGROUP_BOTH, 4, 256},
    [KNOB_LANES] = {"lanes", VARIANT_BIT(TILED), 1, 128},
    [KNOB_WORKGROUP] = {"workgroup", VARIANT_BIT(TILED), 1, 1024},
    [KNOB_SUBGROUPS] = {"subgroups",
                        VARIANT_BIT(DECODE) | COOPMAT_BOTH | WORKGROUP_BOTH | MATMUL_BOTH,
                        1, 16},
    [KNOB_STAGES] = {"stages", COOPMAT_BOTH | MATMUL_BOTH, 1, 2},
    [KNOB_ORDER] = {"order", VARIANT_BIT(TILED) | COOPMAT_BOTH | WORKGROUP_BOTH, 1, 2},
    [KNOB_SOFTMAX] = {"softmax", COOPMAT_BOTH, 1, 2},
    [KNOB_ABLATE] = {"ablate", COOPMAT_BOTH | WORKGROUP_BOTH, 1, 15},
    [KNOB_Q] = {"q", COOPMAT_BOTH, 1, 2},
    [KNOB_COLUMNS] = {"columns", MATMUL_BOTH, 1, 16},
    [KNOB_GRID_COLUMNS] = {"grid_columns", MATMUL_BOTH, 1, 16},
    [KNOB_DEPTH] = {"depth", MATMUL_BOTH, 8, 256},
    [KNOB_BUFFERS] = {"buffers", COOPMAT_BOTH, 1, 2},
    [KNOB_BF16] = {"bf16", COOPMAT_BOTH, 1, 2},
};

/* The name of a kernel in tuning strings: a fused variant's, or the matmul's. */
static const char *kernel_name(int kernel)
{
    switch (kernel) {
    case TUNING_MATMUL_COOPMAT: return "matmul_coopmat";
    case TUNING_MATMUL_COOPMAT_EMULATED: return "matmul_coopmat_emulated";
    default: return vkattn_fused_variant_name((vkattn_fused_variant)kernel);
    }
}

uint32_t tuning_value(const vkattn_context *ctx, int kernel, tuning_knob knob, uint32_t fallback)
{
    uint32_t v = kernel >= 0 && kernel < TUNING_KERNEL_END ? ctx->tuning.value[kernel][knob] : 0;
    return v ? v : fallback;
}

bool fused_heavy_first(const vkattn_context *ctx, vkattn_fused_variant variant,
                       const attention_dims *d)
{
    return d->causal && tuning_value(ctx, variant, KNOB_ORDER, 1) == 1;
}

void tuning_describe(int kernel, tuning_knob knob, uint32_t value, char *out, size_t out_size)
{
    snprintf(out, out_size, "tuning %s.%s=%u", kernel_name(kernel), knobs[knob].name, value);
}

/* The kernel of that name, or -1. */
static int kernel_named(const char *name, size_t length)
{
    for (int k = VKATTN_FUSED_AUTO + 1; k < TUNING_KERNEL_END; k++) {
        const char *known = kernel_name(k);
        if (strcmp(known, "?") && strlen(known) == length && !strncmp(known, name, length))
            return k;
    }
    return -1;
}

/* One "kernel.knob=N" entry; NULL when taken, else why not. */
static const char *take_entry(kernel_tuning *tuning, const char *entry, char *why, size_t why_size)
{
    const char *dot = strchr(entry, '.'), *eq = strchr(entry, '=');
    if (!dot || !eq || eq < dot)
        return "not kernel.knob=N";
    int kernel = kernel_named(entry, (size_t)(dot - entry));
    if (kernel < 0)
        return "no such kernel (rows, tiled, decode, coopmat, coopmat_emulated, coopmat_workgroup, "
               "coopmat_workgroup_emulated, matmul_coopmat, matmul_coopmat_emulated)";
    size_t knob_length = (size_t)(eq - dot - 1);
    int knob = 0;
    while (knob < KNOB_COUNT && !(strlen(knobs[knob].name) == knob_length &&
                                  !strncmp(knobs[knob].name, dot + 1, knob_length)))
        knob++;
    if (knob == KNOB_COUNT || !(knobs[knob].kernels & KERNEL_BIT(kernel))) {
        snprintf(why, why_size, "the %s kernel has no such knob", kernel_name(kernel));
        return why;
    }
    char *end;
    errno = 0;
    unsigned long value = strtoul(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || eq[1] == '-' || value < knobs[knob].min ||
        value > knobs[knob].max) {
        snprintf(why, why_size, "%s takes %u to %u", knobs[knob].name, knobs[knob].min,
                 knobs[knob].max);
        return why;
    }
    /* Wrong results on purpose: never from a tuning string alone. */
    const char *diagnostics = getenv("VKATTN_DIAGNOSTICS");
    if (knob == KNOB_ABLATE && !(diagnostics && !strcmp(diagnostics, "1")))
        return "a timing diagnostic that computes wrong results: taken only with "
               "VKATTN_DIAGNOSTICS=1";
    tuning->value[kernel][knob] = (uint32_t)value;
    return NULL;
}

void tuning_init(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    memset(&ctx->tuning, 0, sizeof ctx->tuning);
    const char *text = desc->tuning ? desc->tuning : getenv("VKATTN_TUNE");
    const char *source = desc->tuning ? "tuning" : "VKATTN_TUNE";
    if (!text)
        return;
    char entry[64], why[96];
    for (const char *at = text; *at;) {
        size_t length = strcspn(at, ",");
        while (length && isspace((unsigned char)*at))
            at++, length--;
        size_t kept = length;
        while (kept && isspace((unsigned char)at[kept - 1]))
            kept--;
        if (kept) {
            const char *problem = "too long";
            if (kept < sizeof entry) {
                memcpy(entry, at, kept);
                entry[kept] = '\0';
                problem = take_entry(&ctx->tuning, entry, why, sizeof why);
            }
            if (problem)
                ctx_log(ctx, VKATTN_LOG_WARNING, "%s: \"%.*s\" ignored: %s", source, (int)kept,
                        at, problem);
            else if (strstr(entry, ".ablate="))
                ctx_log(ctx, VKATTN_LOG_WARNING, "%s: %s: attention results are wrong on "
                        "purpose (a timing diagnostic)", source, entry);
            else
                ctx_log(ctx, VKATTN_LOG_INFO, "%s: %s", source, entry);
        }
        at += length;
        if (*at == ',')
            at++;
    }
}
