/* The harness of the randomized API test (test_api_fuzz.c): the state of a
 * run, tensor specs built twice (on the GPU and the CPU context), and the
 * checks every call goes through (api_fuzz_core.c); each op's generator of
 * calls (api_fuzz_attention.c, api_fuzz_ops.c). */
#ifndef VKATTN_API_FUZZ_H
#define VKATTN_API_FUZZ_H

#include "test_util.h"

#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define I32 VKATTN_DTYPE_I32
#define BF16 VKATTN_DTYPE_BF16

enum { GPU = 0, CPU = 1 };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The statuses a call may return, as a bit set. */
#define EXPECT(status) (1u << (status))
#define EXPECT_OK EXPECT(VKATTN_OK)
#define EXPECT_ARG EXPECT(VKATTN_ERROR_INVALID_ARGUMENT)
#define EXPECT_SHAPE EXPECT(VKATTN_ERROR_INVALID_SHAPE)
#define EXPECT_MISMATCH EXPECT(VKATTN_ERROR_SHAPE_MISMATCH)
#define EXPECT_UNSUPPORTED EXPECT(VKATTN_ERROR_UNSUPPORTED)
#define EXPECT_OVERFLOW EXPECT(VKATTN_ERROR_SIZE_OVERFLOW)
/* An auxiliary tensor (kv_len, sinks, a sequence table) of the wrong dtype:
 * vkattn.h says UNSUPPORTED for dtypes but describes these tensors' shape
 * and dtype together, and the existing tests expect SHAPE_MISMATCH. */
#define EXPECT_AUX_DTYPE (EXPECT_MISMATCH | EXPECT_UNSUPPORTED)

/* ------------------------------------------------------------ the state -- */

/* A tensor with the same dtype, shape and contents on both contexts: t[GPU]
 * on env->gpu, t[CPU] on env->cpu (swapped for "a tensor of the other
 * context"). */
typedef struct twin {
    vkattn_tensor *t[2];
    vkattn_tensor_desc desc;
} twin;

/* What a tensor of a call is to be: shape, dtype and contents. */
#define MAX_I32 64
typedef struct tspec {
    bool used;
    vkattn_dtype dtype;
    int ndim;
    int64_t shape[4];
    float lo, hi;              /* float contents, uniform in [lo, hi] */
    int neg_inf_percent;       /* about that many elements -inf */
    int nonfinite_percent;     /* about that many NaN, +Inf or -Inf */
    bool sentinel;             /* an output: every element the sentinel */
    bool has_values;           /* I32 contents: values[] (else random) */
    int32_t values[MAX_I32];
} tspec;

#define SENTINEL 12345.0f
#define MAX_TWINS 32
#define MAX_KINDS 160
#define SHOWN_PER_KIND 3

typedef struct fuzz {
    test_env *env;
    rng r;
    uint64_t seed;
    int call;
    bool verbose;
    /* the current call */
    const char *op;
    char mutation[160];        /* what was made invalid; "" or "valid: ..." for none */
    unsigned expect;           /* the statuses it may return */
    bool forced;               /* a variant or path forced (see the top) */
    twin twins[MAX_TWINS];
    int ntwins;
    char what[6144];           /* its arguments, for messages */
    size_t what_len;
    /* the whole run */
    int findings;
    char kinds[MAX_KINDS][128];
    int kind_count[MAX_KINDS];
    int nkinds;
    vkattn_status last[2];     /* the statuses the last call returned */
    int ok_calls, error_calls, refusals, per_op[8], status_count[16];
    double op_seconds[8];
} fuzz;

static inline vkattn_context *ctx_of(const fuzz *f, int side)
{
    return side == GPU ? f->env->gpu : f->env->cpu;
}
static inline bool chance(rng *r, int percent) { return rng_int(r, 0, 99) < percent; }
static inline size_t dtype_bytes(vkattn_dtype d) { return d == F16 || d == BF16 ? 2 : 4; }

/* SPEC(&spec, dtype, d0, d1, ...): a tensor of that shape. */
#define SPEC(s, dtype, ...)                                                               \
    spec_shape((s), (dtype), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
               (int64_t[]){__VA_ARGS__})

/* The tensor of one side, or NULL for a NULL argument. */
static inline vkattn_tensor *side_of(const twin *t, int side) { return t ? t->t[side] : NULL; }

/* Makes the call on one side (GPU or CPU) from its op's argument struct. */
typedef vkattn_status (*call_fn)(fuzz *f, int side, const void *args);

const char *dtype_label(vkattn_dtype d);

size_t desc_count(const vkattn_tensor_desc *d);

vkattn_dtype any_float(rng *r);

vkattn_dtype out_float(rng *r);

/* A few head sizes, so that valid calls share compiled pipelines (each size
 * specializes its own), from 1 to 80, odd and even, vec4 and not. */
int64_t head_size(rng *r);

__attribute__((format(printf, 2, 3))) void describe(fuzz *f, const char *fmt, ...);

__attribute__((format(printf, 2, 3))) void set_mutation(fuzz *f, const char *fmt, ...);

/* Records a failed check. The first few of each kind (operation, mutation
 * family, check) are printed in full; the rest are counted. */
__attribute__((format(printf, 3, 4)))
void finding(fuzz *f, const char *check, const char *fmt, ...);

void spec_shape(tspec *s, vkattn_dtype dtype, int ndim, const int64_t *shape);

/* An I32 tensor of `n` given values (a row of `rows` when 2-D). */
void spec_i32(tspec *s, int64_t rows, int64_t n, const int32_t *values);

/* The same elements in another rank: a 4-D tensor merges its outer two
 * dimensions, a lower rank gains a leading 1. */
void spec_rerank(tspec *s);

void spec_flatten(tspec *s);

/* One dimension one larger or (where it stays >= 1) one smaller. */
void spec_nudge(rng *r, tspec *s, int dim);

/* A dense attention tensor of (B, heads, T, width) in the layout. */
void spec_dense(tspec *s, vkattn_dtype dtype, vkattn_layout layout, int64_t B,
                int64_t heads, int64_t T, int64_t width);

/* Creates the tensor on both contexts with the same contents. */
twin *twin_build(fuzz *f, const char *name, const tspec *s);

/* A tensor of the other context: the twin's two tensors swapped. */
void make_foreign(twin *t);

/* An argument of a call that is another one's tensor (t[dst] = t[src]). */
typedef struct slot_alias {
    int dst, src;
} slot_alias;

/* The call's tensors t[0..n): each built from its spec (NULL where unused),
 * then the aliases, the slot passed NULL and the slot from the other context
 * (-1: none) applied. */
void build_slots(fuzz *f, twin **t, const char *const *names, const tspec *specs, int n,
                 const slot_alias *aliases, int alias_count, int null_slot, int foreign_slot);

/* Runs the call on both contexts and checks everything the top of the file
 * lists. `out` is the tensor the call writes (NULL where it is passed NULL);
 * atol and rtol bound the GPU's difference from the CPU where both succeed. */
void run_call(fuzz *f, call_fn fn, const void *args, const twin *out, double atol,
              double rtol);

/* Destroys the call's tensors, after checking that its GPU work raised no
 * validation message (they are counted by the test logger). */
void finish_call(fuzz *f, int validation_before);

/* Picks one of `n` entries by weight. */
int pick_weighted(rng *r, const int *weights, int n);

/* A value that makes a scale or softcap invalid: not positive, not finite,
 * or (softcap) subnormal. */
float bad_positive(rng *r, bool subnormal_too);

/* A window side: unbounded, within the keys, or far past them. */
int32_t window_side(rng *r, int64_t Tk);

/* One of the slots (tensors of a call, `among` them, a bit each: SLOT(i))
 * that are in the call. */
#define SLOT(x) (1u << (x))
int pick_used(rng *r, const tspec *s, int nslots, unsigned among);

/* Each op's generator: draws one call (valid, or invalid in one way) and runs it. */
void fuzz_attention(fuzz *f);
void fuzz_matmul(fuzz *f);
void fuzz_softmax(fuzz *f);
void fuzz_head_transpose(fuzz *f);
void fuzz_mha(fuzz *f);
void fuzz_create(fuzz *f);
void fuzz_transfer(fuzz *f);

#endif
