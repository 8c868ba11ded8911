/* The harness of the randomized API test: see api_fuzz.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "api_fuzz.h"

/* A tensor's bytes, in its own dtype. */
typedef struct snapshot {
    void *bytes;
    size_t size;
} snapshot;

const char *dtype_label(vkattn_dtype d)
{
    switch (d) {
    case F32: return "f32";
    case F16: return "f16";
    case I32: return "i32";
    case BF16: return "bf16";
    default: return "dtype?";
    }
}


size_t desc_count(const vkattn_tensor_desc *d)
{
    size_t n = 1;
    for (int i = 0; i < d->ndim; i++)
        n *= (size_t)d->shape[i];
    return n;
}

vkattn_dtype any_float(rng *r)
{
    static const vkattn_dtype types[] = {F32, F32, F16, BF16};
    return types[rng_int(r, 0, 3)];
}

vkattn_dtype out_float(rng *r)
{
    static const vkattn_dtype types[] = {F32, F32, F32, F16, BF16};
    return types[rng_int(r, 0, 4)];
}

/* A few head sizes, so that valid calls share compiled pipelines (each size
 * specializes its own), from 1 to 80, odd and even, vec4 and not. */
int64_t head_size(rng *r)
{
    static const int64_t sizes[] = {1, 3, 8, 16, 24, 33, 64, 80};
    return sizes[rng_int(r, 0, 7)];
}

__attribute__((format(printf, 2, 3))) void describe(fuzz *f, const char *fmt, ...)
{
    if (f->what_len >= sizeof f->what - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(f->what + f->what_len, sizeof f->what - f->what_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        f->what_len += (size_t)n;
    if (f->what_len > sizeof f->what - 1)
        f->what_len = sizeof f->what - 1;
}

__attribute__((format(printf, 2, 3))) void set_mutation(fuzz *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->mutation, sizeof f->mutation, fmt, ap);
    va_end(ap);
}

/* Records a failed check. The first few of each kind (operation, mutation
 * family, check) are printed in full; the rest are counted. */
__attribute__((format(printf, 3, 4)))
void finding(fuzz *f, const char *check, const char *fmt, ...)
{
    f->findings++;
    char kind[128];
    size_t family = strcspn(f->mutation, "0123456789=(-");
    snprintf(kind, sizeof kind, "%s | %.*s | %s", f->op, (int)family,
             f->mutation[0] ? f->mutation : "valid", check);
    int k = 0;
    while (k < f->nkinds && strcmp(f->kinds[k], kind) != 0)
        k++;
    if (k == f->nkinds && k < MAX_KINDS)
        snprintf(f->kinds[f->nkinds++], sizeof f->kinds[0], "%s", kind);
    if (k < MAX_KINDS && ++f->kind_count[k] > SHOWN_PER_KIND)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FINDING [%s] call %d (seed %#llx), %s, %s:\n  %s\n  arguments:%s\n", check,
            f->call, (unsigned long long)f->seed, f->op,
            f->mutation[0] ? f->mutation : "valid", msg, f->what);
}

/* ---------------------------------------------------------- tensor specs -- */

void spec_shape(tspec *s, vkattn_dtype dtype, int ndim, const int64_t *shape)
{
    memset(s, 0, sizeof *s);
    s->used = true;
    s->dtype = dtype;
    s->ndim = ndim;
    memcpy(s->shape, shape, (size_t)ndim * sizeof *shape);
    s->lo = -1.0f;
    s->hi = 1.0f;
}


/* An I32 tensor of `n` given values (a row of `rows` when 2-D). */
void spec_i32(tspec *s, int64_t rows, int64_t n, const int32_t *values)
{
    if (rows > 0)
        SPEC(s, I32, rows, n);
    else
        SPEC(s, I32, n);
    int64_t count = rows > 0 ? rows * n : n;
    assert_true(count <= MAX_I32);
    memcpy(s->values, values, (size_t)count * sizeof *values);
    s->has_values = true;
}

static size_t spec_count(const tspec *s)
{
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= (size_t)s->shape[i];
    return n;
}

/* The same elements in another rank: a 4-D tensor merges its outer two
 * dimensions, a lower rank gains a leading 1. */
void spec_rerank(tspec *s)
{
    if (s->ndim == 4) {
        s->shape[0] *= s->shape[1];
        s->shape[1] = s->shape[2];
        s->shape[2] = s->shape[3];
        s->ndim = 3;
    } else {
        memmove(s->shape + 1, s->shape, (size_t)s->ndim * sizeof s->shape[0]);
        s->shape[0] = 1;
        s->ndim++;
    }
}

void spec_flatten(tspec *s)
{
    s->shape[0] = (int64_t)spec_count(s);
    s->ndim = 1;
}

/* One dimension one larger or (where it stays >= 1) one smaller. */
void spec_nudge(rng *r, tspec *s, int dim)
{
    s->shape[dim] += s->shape[dim] > 1 && chance(r, 50) ? -1 : 1;
}

/* A dense attention tensor of (B, heads, T, width) in the layout. */
void spec_dense(tspec *s, vkattn_dtype dtype, vkattn_layout layout, int64_t B,
                int64_t heads, int64_t T, int64_t width)
{
    if (layout == VKATTN_LAYOUT_BSHD)
        SPEC(s, dtype, B, T, heads, width);
    else
        SPEC(s, dtype, B, heads, T, width);
}

/* " name=dtype(shape)" and an I32 tensor's values, for the messages. */
static void describe_spec(fuzz *f, const char *name, const tspec *s)
{
    describe(f, " %s=%s(", name, dtype_label(s->dtype));
    for (int i = 0; i < s->ndim; i++)
        describe(f, "%s%lld", i ? "," : "", (long long)s->shape[i]);
    describe(f, ")");
    size_t n = spec_count(s);
    if (s->has_values && n <= MAX_I32) {
        describe(f, "{");
        for (size_t i = 0; i < n; i++)
            describe(f, "%s%d", i ? "," : "", s->values[i]);
        describe(f, "}");
    }
}

/* Creates the tensor on both contexts with the same contents. */
twin *twin_build(fuzz *f, const char *name, const tspec *s)
{
    if (!s->used)
        return NULL;
    assert_true(f->ntwins < MAX_TWINS);
    twin *t = &f->twins[f->ntwins++];
    memset(t, 0, sizeof *t);
    t->desc = (vkattn_tensor_desc){.dtype = s->dtype, .ndim = s->ndim};
    memcpy(t->desc.shape, s->shape, sizeof t->desc.shape);
    describe_spec(f, name, s);
    for (int side = 0; side < 2; side++) {
        vkattn_status st = vkattn_tensor_create(ctx_of(f, side), &t->desc, &t->t[side]);
        if (st != VKATTN_OK)
            fail_msg("call %d: creating %s: %s", f->call, name, vkattn_last_error(ctx_of(f, side)));
    }
    size_t n = spec_count(s);
    bool values = s->has_values && n <= MAX_I32;
    void *host = malloc(n * 4);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) {
        if (s->dtype == I32)
            ((int32_t *)host)[i] = s->sentinel ? (int32_t)SENTINEL
                                   : values    ? s->values[i]
                                               : rng_int(&f->r, 0, 3);
        else if (s->sentinel)
            ((float *)host)[i] = SENTINEL;
        else if (values)
            ((float *)host)[i] = (float)s->values[i];
        else if (s->neg_inf_percent && chance(&f->r, s->neg_inf_percent))
            ((float *)host)[i] = -INFINITY;
        else if (s->nonfinite_percent && chance(&f->r, s->nonfinite_percent))
            ((float *)host)[i] = (float[]){NAN, INFINITY, -INFINITY}[rng_int(&f->r, 0, 2)];
        else
            ((float *)host)[i] = rng_uniform(&f->r, s->lo, s->hi);
    }
    for (int side = 0; side < 2; side++)
        assert_int_equal(vkattn_tensor_upload(t->t[side], host, s->dtype == I32 ? I32 : F32),
                         VKATTN_OK);
    free(host);
    return t;
}


/* A tensor of the other context: the twin's two tensors swapped. */
void make_foreign(twin *t)
{
    vkattn_tensor *g = t->t[GPU];
    t->t[GPU] = t->t[CPU];
    t->t[CPU] = g;
}

void build_slots(fuzz *f, twin **t, const char *const *names, const tspec *specs, int n,
                 const slot_alias *aliases, int alias_count, int null_slot, int foreign_slot)
{
    for (int slot = 0; slot < n; slot++)
        t[slot] = twin_build(f, names[slot], &specs[slot]);
    for (int i = 0; i < alias_count; i++) {
        t[aliases[i].dst] = t[aliases[i].src];
        describe(f, " %s=%s", names[aliases[i].dst], names[aliases[i].src]);
    }
    if (null_slot >= 0)
        t[null_slot] = NULL;
    if (foreign_slot >= 0)
        make_foreign(t[foreign_slot]);
}

/* ------------------------------------------------------------ the checks -- */


static snapshot snapshot_take(fuzz *f, vkattn_tensor *t)
{
    vkattn_tensor_desc d = vkattn_tensor_get_desc(t);
    snapshot s = {.size = desc_count(&d) * dtype_bytes(d.dtype)};
    s.bytes = malloc(s.size);
    assert_non_null(s.bytes);
    vkattn_status st = vkattn_tensor_download(t, s.bytes, d.dtype);
    if (st != VKATTN_OK)
        fail_msg("call %d: downloading a snapshot: %s", f->call, vkattn_status_string(st));
    return s;
}

/* GPU and CPU outputs of a successful call: |gpu - cpu| <= atol + rtol |cpu|,
 * NaN and Inf at the same places. A 16-bit output holds each side's f32
 * result rounded, so the two may also be one 16-bit ulp apart. */
static void compare_outputs(fuzz *f, const twin *out, double atol, double rtol)
{
    if (out->desc.dtype == I32) { /* an uploaded I32 tensor: the same values */
        snapshot g = snapshot_take(f, out->t[GPU]), c = snapshot_take(f, out->t[CPU]);
        if (memcmp(g.bytes, c.bytes, g.size))
            finding(f, "result", "the I32 tensors differ between the contexts");
        free(g.bytes);
        free(c.bytes);
        return;
    }
    if (out->desc.dtype == F16)
        atol += 0x1p-24, rtol += 0x1p-9;
    else if (out->desc.dtype == BF16)
        rtol += 0x1p-6;
    size_t n = desc_count(&out->desc);
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(vkattn_tensor_download(out->t[GPU], got, F32), VKATTN_OK);
    assert_int_equal(vkattn_tensor_download(out->t[CPU], want, F32), VKATTN_OK);
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double ratio;
        if (isnan(want[i]) || isnan(got[i]) || isinf(want[i]) || isinf(got[i]))
            ratio = (isnan(want[i]) && isnan(got[i])) || want[i] == got[i] ? 0.0 : INFINITY;
        else
            ratio = fabs((double)got[i] - want[i]) / (atol + rtol * fabs((double)want[i]));
        if (ratio > worst)
            worst = ratio, at = i;
    }
    if (worst > 1.0)
        finding(f, "result", "element %zu of %zu is %.9g on the GPU, %.9g on the CPU (%.3gx the "
                "bound %.3g + %.3g|ref|)", at, n, (double)got[at], (double)want[at], worst, atol,
                rtol);
    free(got);
    free(want);
}

static bool known_status(vkattn_status s)
{
    return (int)s >= VKATTN_OK && (int)s <= VKATTN_ERROR_IO;
}

static const char *expect_text(unsigned expect, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int s = 0; s <= VKATTN_ERROR_IO; s++)
        if (expect & EXPECT(s)) {
            size_t len = strlen(buf);
            snprintf(buf + len, size - len, "%s%s", len ? " or " : "",
                     vkattn_status_string((vkattn_status)s));
        }
    return buf;
}


/* Runs the call on both contexts and checks everything the top of the file
 * lists. `out` is the tensor the call writes (NULL where it is passed NULL);
 * atol and rtol bound the GPU's difference from the CPU where both succeed. */
void run_call(fuzz *f, call_fn fn, const void *args, const twin *out, double atol,
              double rtol)
{
    snapshot before[2] = {{0}};
    for (int side = 0; side < 2 && out; side++)
        before[side] = snapshot_take(f, out->t[side]);
    vkattn_status s[2];
    char message[2][512];
    for (int side = 0; side < 2; side++) {
        s[side] = fn(f, side, args);
        const char *m = vkattn_last_error(ctx_of(f, side));
        snprintf(message[side], sizeof message[side], "%s", s[side] == VKATTN_OK ? "" : m ? m : "");
        if (!known_status(s[side]))
            finding(f, "status", "%s returned %d, not a vkattn_status", side ? "CPU" : "GPU",
                    (int)s[side]);
        else if (s[side] != VKATTN_OK && message[side][0] == '\0')
            finding(f, "message", "%s returned %s with an empty vkattn_last_error",
                    side ? "CPU" : "GPU", vkattn_status_string(s[side]));
    }
    if (f->verbose)
        fprintf(stderr, "call %d %s %s: GPU %s, CPU %s%s%s\n   %s\n", f->call, f->op,
                f->mutation[0] ? f->mutation : "valid", vkattn_status_string(s[GPU]),
                vkattn_status_string(s[CPU]), s[GPU] ? ": " : "", message[GPU], f->what);
    if (known_status(s[CPU]))
        f->status_count[s[CPU]]++;
    f->last[GPU] = s[GPU], f->last[CPU] = s[CPU];

    /* A failed call leaves its output as it was (vkattn.h, "Errors."). */
    for (int side = 0; side < 2 && out; side++) {
        if (s[side] != VKATTN_OK) {
            snapshot after = snapshot_take(f, out->t[side]);
            if (after.size != before[side].size || memcmp(after.bytes, before[side].bytes, after.size))
                finding(f, "output touched", "%s failed (%s: %s) but changed its output",
                        side ? "CPU" : "GPU", vkattn_status_string(s[side]), message[side]);
            free(after.bytes);
        }
        free(before[side].bytes);
    }

    /* Same status on both contexts, but for a variant this device cannot run. */
    bool refusal = f->forced && s[GPU] == VKATTN_ERROR_UNSUPPORTED && s[CPU] == VKATTN_OK;
    if (refusal)
        f->refusals++;
    else if (s[GPU] != s[CPU])
        finding(f, "backends differ", "GPU %s (%s), CPU %s (%s)", vkattn_status_string(s[GPU]),
                message[GPU], vkattn_status_string(s[CPU]), message[CPU]);

    /* The status vkattn.h gives for what was made invalid (one finding where
     * both contexts return the same wrong one). */
    char want[160];
    for (int side = 0; side < 2; side++) {
        if ((side == GPU && refusal) || !known_status(s[side]) ||
            (f->expect & EXPECT(s[side])) || (side == CPU && s[CPU] == s[GPU]))
            continue;
        finding(f, "status", "%s returned %s (%s), expected %s",
                side == GPU && s[CPU] == s[GPU] ? "both contexts" : side ? "CPU" : "GPU",
                vkattn_status_string(s[side]), message[side][0] ? message[side] : "no message",
                expect_text(f->expect, want, sizeof want));
    }

    if (s[GPU] == VKATTN_OK && s[CPU] == VKATTN_OK) {
        f->ok_calls++;
        if (out)
            compare_outputs(f, out, atol, rtol);
    } else {
        f->error_calls++;
    }
}

/* Destroys the call's tensors, after checking that its GPU work raised no
 * validation message (they are counted by the test logger). */
void finish_call(fuzz *f, int validation_before)
{
    vkattn_status s = vkattn_synchronize(f->env->gpu);
    if (s != VKATTN_OK)
        finding(f, "synchronize", "vkattn_synchronize after the call: %s: %s",
                vkattn_status_string(s), vkattn_last_error(f->env->gpu));
    if (f->env->gpu_log.validation_messages != validation_before)
        finding(f, "validation", "%d validation-layer message(s) (printed above)",
                f->env->gpu_log.validation_messages - validation_before);
    /* Every tensor the call created, once: aliasing arguments point to these
     * twins, they are not twins of their own. */
    for (int i = 0; i < f->ntwins; i++)
        for (int side = 0; side < 2; side++)
            vkattn_tensor_destroy(f->twins[i].t[side]);
    f->ntwins = 0;
}

/* Picks one of `n` entries by weight. */
int pick_weighted(rng *r, const int *weights, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += weights[i];
    int x = rng_int(r, 0, total - 1);
    for (int i = 0; i < n; i++) {
        if (x < weights[i])
            return i;
        x -= weights[i];
    }
    return n - 1;
}

/* A value that makes a scale or softcap invalid: not positive, not finite,
 * or (softcap) subnormal. */
float bad_positive(rng *r, bool subnormal_too)
{
    static const float bad[] = {-1.0f, -FLT_MIN, -0.5f, NAN, INFINITY, -INFINITY, 1e-40f};
    return bad[rng_int(r, 0, subnormal_too ? 6 : 5)];
}

/* A window side: unbounded, within the keys, or far past them. */
int32_t window_side(rng *r, int64_t Tk)
{
    int x = rng_int(r, 0, 9);
    return x < 3 ? -1 : x < 9 ? rng_int(r, 0, (int)Tk + 2) : INT32_MAX;
}

/* One of the slots (tensors of a call, `among` them) that are in the call. */
int pick_used(rng *r, const tspec *s, int nslots, unsigned among)
{
    int candidates[16] = {0}, n = 0;
    for (int i = 0; i < nslots; i++)
        if (s[i].used && (among & (1u << i)))
            candidates[n++] = i;
    assert_true(n > 0);
    return candidates[n > 1 ? rng_int(r, 0, n - 1) : 0];
}
