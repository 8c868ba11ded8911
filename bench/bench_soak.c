/* vkattn-bench --soak N: N mixed calls in the main context (attention by each
 * path, dtypes, GQA, windows and sinks, the layer; one to three recorded per
 * submission), each result compared bit for bit with the first of its kind,
 * and the memory the process uses before and after (tests/test_soak.c is the
 * short version that ctest runs). */
#include "bench.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct soak_kind {
    const char *name;
    int64_t B, H, Hkv, T, D;
    vkattn_dtype dtype;
    vkattn_attention_path path;
    bool window_sinks, mha;
    vkattn_dtype out_dtype; /* 16-bit outputs share one f32 scratch of different sizes */
} soak_kind;

#define F32 VKATTN_DTYPE_F32
#define F16 VKATTN_DTYPE_F16
#define BF16 VKATTN_DTYPE_BF16
static const soak_kind kinds[] = {
    {"attention f32 auto", 1, 8, 8, 256, 64, F32, VKATTN_PATH_AUTO, false, false, F32},
    {"attention f16 GQA window+sinks, f16 O", 2, 8, 2, 200, 64, F16, VKATTN_PATH_AUTO, true, false,
     F16},
    {"attention bf16 fused, bf16 O", 1, 4, 4, 100, 32, BF16, VKATTN_PATH_FUSED, false, false, BF16},
    {"attention f32 unfused", 1, 4, 2, 128, 64, F32, VKATTN_PATH_UNFUSED, true, false, F32},
    {"decode f32", 1, 32, 8, 1, 128, F32, VKATTN_PATH_AUTO, false, false, F32},
    {"mha f32, f16 Y", 1, 4, 4, 128, 32, F32, VKATTN_PATH_AUTO, false, true, F16},
};
#define KINDS (sizeof kinds / sizeof kinds[0])

typedef struct soak_state {
    vkattn_tensor *q, *k, *v, *o, *sinks, *w_qkv, *w_out;
    size_t out_count;
    float *first, *got;
} soak_state;

/* Keys of a query-block case: Tq + 300 (a KV cache) for decode, else Tq. */
static int64_t keys_of(const soak_kind *k) { return k->T == 1 ? 4096 : k->T; }

static vkattn_status setup(vkattn_context *ctx, bench_tensors *ts, const soak_kind *k,
                           soak_state *s)
{
    int64_t C = k->H * k->D;
    size_t most = (size_t)(k->B * k->H * keys_of(k) * k->D) + (size_t)(3 * C * C);
    float *data = malloc(most * sizeof *data);
    if (!data)
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    bench_fill(data, most, 7, -1.0f, 1.0f);
    vkattn_status st;
    if (k->mha) {
        int64_t xs[3] = {k->B, k->T, C}, wq[2] = {3 * C, C}, wo[2] = {C, C};
        s->out_count = (size_t)(k->B * k->T * C);
        if ((st = bench_tensor(ctx, ts, k->dtype, 3, xs, data, &s->q)) ||
            (st = bench_tensor(ctx, ts, k->dtype, 2, wq, data, &s->w_qkv)) ||
            (st = bench_tensor(ctx, ts, k->dtype, 2, wo, data, &s->w_out)) ||
            (st = bench_tensor(ctx, ts, k->out_dtype, 3, xs, NULL, &s->o)))
            goto done;
    } else {
        int64_t qs[4] = {k->B, k->H, k->T, k->D}, ks[4] = {k->B, k->Hkv, keys_of(k), k->D};
        int64_t hs[1] = {k->H};
        s->out_count = (size_t)(k->B * k->H * k->T * k->D);
        if ((st = bench_tensor(ctx, ts, k->dtype, 4, qs, data, &s->q)) ||
            (st = bench_tensor(ctx, ts, k->dtype, 4, ks, data + 1, &s->k)) ||
            (st = bench_tensor(ctx, ts, k->dtype, 4, ks, data + 2, &s->v)) ||
            (st = bench_tensor(ctx, ts, k->out_dtype, 4, qs, NULL, &s->o)) ||
            (k->window_sinks &&
             (st = bench_tensor(ctx, ts, VKATTN_DTYPE_F32, 1, hs, data + 3, &s->sinks))))
            goto done;
    }
    s->first = malloc(s->out_count * sizeof *s->first);
    s->got = malloc(s->out_count * sizeof *s->got);
    st = s->first && s->got ? VKATTN_OK : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
done:
    free(data);
    return st;
}

/* Records kind k `times` times, then downloads its output into `out`. */
static vkattn_status call(vkattn_context *ctx, const soak_kind *k, const soak_state *s,
                          int times, float *out)
{
    vkattn_status st = VKATTN_OK;
    for (int i = 0; i < times && st == VKATTN_OK; i++) {
        if (k->mha) {
            vkattn_mha_desc d = {.heads = (int32_t)k->H, .causal = true, .path = k->path};
            st = vkattn_mha(ctx, &d, s->q, s->w_qkv, NULL, s->w_out, NULL, s->o);
        } else {
            vkattn_attention_desc d = {.causal = true, .path = k->path,
                                       .has_window = k->window_sinks, .window_left = 64,
                                       .window_right = -1, .sinks = s->sinks};
            st = vkattn_attention(ctx, &d, s->q, s->k, s->v, s->o);
        }
    }
    return st ? st : vkattn_tensor_download(s->o, out, VKATTN_DTYPE_F32);
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int bench_soak(vkattn_context *ctx, long calls, FILE *out)
{
    bench_tensors ts[KINDS];
    soak_state states[KINDS];
    memset(ts, 0, sizeof ts);
    memset(states, 0, sizeof states);
    vkattn_status st = VKATTN_OK;
    for (size_t i = 0; i < KINDS && !st; i++)
        if (!(st = setup(ctx, &ts[i], &kinds[i], &states[i])))
            st = call(ctx, &kinds[i], &states[i], 1, states[i].first);
    long mismatches = 0, rss_start = rss_kib();
    size_t heap_start = mallinfo2().uordblks;
    double t0 = bench_now_s();
    for (long n = 0; n < calls && !st; n++) {
        size_t i = (size_t)(n * 7 + n / (long)KINDS) % KINDS;
        soak_state *s = &states[i];
        st = call(ctx, &kinds[i], s, 1 + (int)(n % 3), s->got);
        if (!st && memcmp(s->got, s->first, s->out_count * sizeof *s->got) != 0) {
            if (mismatches++ < 5)
                fprintf(out, "soak: call %ld (%s) differs from the first result\n", n,
                        kinds[i].name);
        }
    }
    double seconds = bench_now_s() - t0;
    long rss_end = rss_kib();
    size_t heap_end = mallinfo2().uordblks;
    if (st)
        fprintf(out, "soak: failed: %s (%s)\n", vkattn_status_string(st), vkattn_last_error(ctx));
    fprintf(out,
            "soak: %ld calls of %zu kinds in %.1f s (%.2f ms a call); results differing from "
            "the first: %ld\n"
            "soak: RSS %ld -> %ld KiB; heap in use on this thread %zu -> %zu KiB\n",
            calls, KINDS, seconds, 1e3 * seconds / (double)(calls ? calls : 1), mismatches,
            rss_start, rss_end, heap_start / 1024, heap_end / 1024);
    for (size_t i = 0; i < KINDS; i++) {
        bench_tensors_release(&ts[i]);
        free(states[i].first);
        free(states[i].got);
    }
    /* vkattn's own heap must stay flat (64 KiB of slack). */
    bool grew = heap_end > heap_start + 64 * 1024;
    if (grew)
        fprintf(out, "soak: the heap grew by %zu KiB\n", (heap_end - heap_start) / 1024);
    return st || mismatches || grew ? 1 : 0;
}
