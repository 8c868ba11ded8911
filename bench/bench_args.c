/* vkattn-bench: command-line options. */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: vkattn-bench [options]\n"
        "Times vkattn's ops on one device, checks each result against the CPU\n"
        "reference backend and prints a table (and JSON lines / CSV).\n"
        "\n"
        "  --op LIST            attention,mha,matmul,softmax,head_transpose (comma list,\n"
        "                       repeatable; default: every op in the sweep)\n"
        "  --path P             auto|fused|unfused: run attention and mha by this path only\n"
        "                       (default: the sweep's paths, and the CPU reference backend)\n"
        "  --shape B,H,Hkv,Tq,Tk,D[,Dv]\n"
        "                       an attention case (repeatable); these replace the sweep's\n"
        "                       attention cases and run fused and unfused unless --path\n"
        "  --causal             causal masking for --shape cases\n"
        "  --variant V          rows|tiled|decode|coopmat|coopmat_emulated|\n"
        "                       coopmat_workgroup|coopmat_workgroup_emulated: run --shape\n"
        "                       cases by the fused path with this kernel only\n"
        "  --splits N           key splits of --shape cases' fused kernel (default chosen)\n"
        "  --tune KNOBS         the kernels' tile sizes and splits, as \"kernel.knob=N,...\"\n"
        "                       (a fused variant's name or matmul_coopmat;\n"
        "                       vkattn_context_desc.tuning, the same as VKATTN_TUNE; knobs\n"
        "                       in README.md; bench/tune_sweep.py)\n"
        "  --q-offset N         q_offset for --shape cases (default Tk - Tq)\n"
        "  --matmul M,N,K[,B]   a matmul case C (B, M, N) = A (B, M, K) @ W (K, N)\n"
        "                       (repeatable); these replace the sweep's matmul cases\n"
        "  --matmul-variant V   auto|tiled|naive|texel|coopmat|coopmat_emulated: the\n"
        "                       kernel of --matmul cases (default auto)\n"
        "  --with LIST          run each --shape case once per entry, in this order:\n"
        "                       plain (none), window=W (left W keys; right W too unless\n"
        "                       --causal), softcap (30), sinks, alibi, mask, varlen\n"
        "                       (B sequences of lengths 1..Tq), paged=BS (a shuffled\n"
        "                       paged cache of BS-token blocks), bshd (the contiguous\n"
        "                       cache in the paged one's layout), kv=f32|f16|bf16 (K and V\n"
        "                       of that dtype); e.g. --with plain,bshd,paged=16\n"
        "  --dtype f32|f16|bf16 input dtype of --shape cases; also of every sweep case when\n"
        "                       given. The CPU reference reads the same rounded inputs\n"
        "  --out-dtype f32|f16|bf16\n"
        "                       O's dtype of --shape cases (default f32; 16-bit O is\n"
        "                       computed in f32 and rounded into, one more pass)\n");
    fprintf(f,
        "  --reps N             timed runs (default: up to 20, fewer for slow cases so a\n"
        "                       case's timed runs take about 1.5 s (--full: 4 s), at least 2;\n"
        "                       exactly N when given)\n"
        "  --warmup N           untimed runs first, >= 1: the first run compiles (default 1)\n"
        "  --warmup-ms MS       then more untimed runs, batched into one submission each,\n"
        "                       until MS milliseconds have passed: a GPU leaves its idle\n"
        "                       clocks only under load (default 500 on GPUs, 0 on CPUs)\n"
        "  --backend B          auto|vulkan|cpu (default auto)\n"
        "  --device N|NAME      device index or name substring\n"
        "  --quick              the default sweep (under a minute on lavapipe)\n"
        "  --full               also long sequences, decode with and without key splits,\n"
        "                       GQA, f16 and bf16 inputs (and an f32 query against a\n"
        "                       bf16 KV cache), head sizes 80 and 96, larger\n"
        "                       matmuls, and each attention variant (window, paged,\n"
        "                       varlen, softcap, sinks, ALiBi, mask) beside the plain\n"
        "                       case it extends (and timed in turn with it: a ratio\n"
        "                       line), and a decode from a contiguous cache\n"
        "                       in the paged one's layout (BSHD), and an f16 prefill into\n"
        "                       f16 O (--quick has a windowed\n"
        "                       prefill and those two decodes)\n"
        "  --gpu                instead, attention sized for a data-centre GPU (auto path):\n"
        "                       causal prefill B=4 H=16 T=4096 D=128 and 64 (f16, f32),\n"
        "                       decode H=32 Hkv=8 Tk=8192 D=128 f16, B=1 H=8 T=2048 D=64\n"
        "                       f32/f16 causal or not, bf16 prefill at D=128, and the\n"
        "                       coopmat variant forced on the f16 cases and the bf16\n"
        "                       prefill; the decode\n"
        "                       also with the tiled variant forced and from a paged\n"
        "                       cache (block 16); and 4096^3 matmuls (tiled f32 and f16,\n"
        "                       coopmat f16); the f16 prefill at D=128 and the decode\n"
        "                       also into f16 O, as SDPA writes its output; the layer\n"
        "                       (mha, T=1024 C=1024 16 heads, causal) in f32, f16, and\n"
        "                       f16 throughout (q, k, v and the heads' output in f16)\n"
        "                       (scripts/gpu-check.sh runs it)\n"
        "  --json FILE|-        JSON lines, one object per case ('-': stdout; the table\n"
        "                       then goes to stderr)\n"
        "  --csv FILE           CSV with a header row, the same columns as the JSON\n"
        "  --no-verify          skip the comparison with the CPU reference\n"
        "  --profile            also each kernel's GPU time per timed run, below the case\n"
        "                       (and in the JSON and CSV): a GPU timestamp after every\n"
        "                       dispatch, so the case's own time grows a little\n"
        "  --soak N             instead of a sweep: N mixed calls (attention by each path,\n"
        "                       dtypes, GQA, window and sinks, decode, the layer) in one\n"
        "                       context, each result compared bit for bit with the first\n"
        "                       of its kind; prints the time and the memory before and\n"
        "                       after, fails on a difference or a growing heap\n"
        "  --help               this text\n"
        "\n");
    fprintf(f,
        "Shape columns (B,H,Hkv,Tq,Tk,D,Dv) for every op:\n"
        "  attention       Q (B,H,Tq,D), K (B,Hkv,Tk,D), V (B,Hkv,Tk,Dv)\n"
        "  mha             X (B,T,C): T = Tq = Tk, H heads of Dh = D = Dv, C = H*Dh, Hkv = H\n"
        "  matmul          (B,M,K) @ (K,N): Tq = M, Tk = N, D = K, H = Hkv = 1, Dv = 0\n"
        "  softmax         X (B,H,Tq,Tk) over Tk; D = Dv = 0\n"
        "  head_transpose  (B,T,H,D) -> (B,H,T,D): Tq = T, Tk = 0, Dv = D\n"
        "Figures: ms median and min (GPU timestamps, else host clock); GFLOP/s (attention:\n"
        "2*(D+Dv) per unmasked score entry and query head); GB/s of compulsory traffic\n"
        "(inputs read once at their dtype, the output written once at its); %% of the\n"
        "estimated peak FP32 rate; max abs error against the CPU reference (large cases:\n"
        "blocks of 16 rows at the start, middle and end).\n");
    fprintf(f,
        "The first run of each pipeline (warm-up) compiles shaders and is never timed;\n"
        "on a GPU untimed runs go on for 500 ms more, so that its clocks leave idle;\n"
        "for a cold start, disable both caches: MESA_SHADER_CACHE_DISABLE=true\n"
        "VKATTN_PIPELINE_CACHE=0.\n"
        "An option's value may also follow it after '=' (--shape=1,8,8,512,512,64).\n"
        "Exit status: 0 all cases ran and verified, 1 a case failed or errored, 2 usage.\n");
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "vkattn-bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Calls `entry` on each comma-separated entry of an option's list, stopping at
 * the first non-zero return; "--op list too long" and the like past 255 bytes. */
static int each_entry(const char *option, const char *list, int (*entry)(const char *, void *),
                      void *user)
{
    char buf[256];
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "vkattn-bench: %s list too long: '%s' (see --help)\n", option, list);
        return 2;
    }
    strcpy(buf, list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int rc = entry(tok, user);
        if (rc)
            return rc;
    }
    return 0;
}

static int op_entry(const char *tok, void *user)
{
    unsigned *mask = user;
    int op = 0;
    while (op < OP_COUNT && strcmp(tok, bench_op_name((bench_op)op)))
        op++;
    if (op == OP_COUNT)
        return bad("--op takes attention, mha, matmul, softmax or head_transpose, not '%s'", tok);
    *mask |= 1u << op;
    return 0;
}

static int parse_ops(const char *list, unsigned *mask)
{
    int rc = each_entry("--op", list, op_entry, mask);
    return rc ? rc : *mask ? 0 : bad("--op needs an op name%s", "");
}

/* A comma list of `min`..`max` positive integers into out; their count, or
 * -1 after reporting `option` and its `form`. */
static int parse_counts(const char *text, const char *option, const char *form, int min, int max,
                        int64_t *out)
{
    char buf[256];
    int n = 0;
    if (strlen(text) >= sizeof buf) {
        bad("%s too long", option);
        return -1;
    }
    strcpy(buf, text);
    bool well_formed = true;
    for (char *tok = strtok(buf, ","); tok && well_formed; tok = strtok(NULL, ",")) {
        long long v;
        well_formed = n < max && parse_int(tok, 1, 1ll << 31, &v);
        if (well_formed)
            out[n++] = v;
    }
    if (!well_formed || n < min) {
        char form_and_text[320];
        snprintf(form_and_text, sizeof form_and_text, "%s takes %s, positive integers, not '%s'",
                 option, form, text);
        bad("%s", form_and_text);
        return -1;
    }
    return n;
}

static int parse_shape(const char *text, int64_t out[7])
{
    int n = parse_counts(text, "--shape", "B,H,Hkv,Tq,Tk,D[,Dv]", 6, 7, out);
    if (n < 0)
        return 2;
    if (n == 6)
        out[6] = out[5];
    if (out[1] % out[2])
        return bad("--shape '%s': H must be a multiple of Hkv", text);
    return 0;
}

static int parse_matmul(const char *text, int64_t out[4])
{
    int n = parse_counts(text, "--matmul", "M,N,K[,B]", 3, 4, out);
    if (n < 0)
        return 2;
    if (n == 3)
        out[3] = 1;
    /* A (B, M, K), W (K, N) and C (B, M, N) within 2^40 elements each, so
     * that no size computed from them overflows. */
    double m = (double)out[0], nn = (double)out[1], k = (double)out[2], b = (double)out[3];
    if (b * m * k > 0x1p40 || k * nn > 0x1p40 || b * m * nn > 0x1p40)
        return bad("--matmul '%s': a tensor of more than 2^40 elements", text);
    return 0;
}

/* One --with entry: a variant's name, with its parameter after '='. */
static int parse_with_entry(const char *e, bench_att_variant *av, int64_t *param)
{
    static const struct { const char *name; bench_att_variant av; bool takes; } names[] = {
        {"plain", AV_NONE, false},    {"none", AV_NONE, false},
        {"window", AV_WINDOW, true},  {"softcap", AV_SOFTCAP, false},
        {"sinks", AV_SINKS, false},   {"alibi", AV_ALIBI, false},
        {"mask", AV_MASK, false},     {"varlen", AV_VARLEN, false},
        {"paged", AV_PAGED, true},    {"bshd", AV_TOKEN_MAJOR, false},
        {"kv", AV_KV_DTYPE, true},
    };
    const char *eq = strchr(e, '=');
    size_t len = eq ? (size_t)(eq - e) : strlen(e);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) != len || strncmp(e, names[i].name, len))
            continue;
        if (names[i].takes != (eq != NULL))
            return bad(names[i].takes ? "--with: '%s' needs a value (window=W, paged=BS, kv=f16)"
                                      : "--with: '%s' takes no value",
                       e);
        *av = names[i].av, *param = 0;
        long long n;
        if (names[i].av == AV_KV_DTYPE) {
            if (!strcmp(eq + 1, "f16")) *param = VKATTN_DTYPE_F16;
            else if (!strcmp(eq + 1, "bf16")) *param = VKATTN_DTYPE_BF16;
            else if (!strcmp(eq + 1, "f32")) *param = VKATTN_DTYPE_F32;
            else return bad("--with: kv takes f32, f16 or bf16, not '%s'", eq + 1);
        } else if (names[i].av == AV_WINDOW) {
            if (!parse_int(eq + 1, 0, 1ll << 30, &n))
                return bad("--with: window takes a left size of keys >= 0, not '%s'", eq + 1);
            *param = n;
        } else if (names[i].av == AV_PAGED) {
            if (!parse_int(eq + 1, 1, 256, &n))
                return bad("--with: paged takes a block size from 1 to 256, not '%s'", eq + 1);
            *param = n;
        }
        return 0;
    }
    return bad("--with takes plain, window=W, softcap, sinks, alibi, mask, varlen, paged=BS, "
               "bshd or kv=DTYPE, not '%s'", e);
}

static int with_entry(const char *e, void *user)
{
    bench_cli *c = user;
    if (c->with_count == BENCH_MAX_WITH)
        return bad("--with: at most 12 entries in all, '%s' is one more", e);
    int rc = parse_with_entry(e, &c->with[c->with_count], &c->with_param[c->with_count]);
    if (!rc)
        c->with_count++;
    return rc;
}

static int parse_with(const char *list, bench_cli *c)
{
    int rc = each_entry("--with", list, with_entry, c);
    return rc ? rc : c->with_count ? 0 : bad("--with needs a variant name%s", "");
}

/* An option with a value. */
static int value_option(bench_cli *c, const char *a, const char *v)
{
    long long n;
    if (!strcmp(a, "--soak")) {
        if (!parse_int(v, 1, 1000000000, &n))
            return bad("--soak takes a count of calls >= 1, not '%s'", v);
        c->soak = (long)n;
        return 0;
    }
    if (!strcmp(a, "--reps")) {
        if (!parse_int(v, 1, 1000000, &n))
            return bad("--reps takes a count >= 1, not '%s'", v);
        c->opt.reps = (int)n;
        c->opt.reps_given = true;
    } else if (!strcmp(a, "--warmup")) {
        if (!parse_int(v, 1, 1000000, &n))
            return bad("--warmup takes a count >= 1 (the first run compiles), not '%s'", v);
        c->opt.warmup = (int)n;
    } else if (!strcmp(a, "--warmup-ms")) {
        if (!parse_int(v, 0, 60000, &n))
            return bad("--warmup-ms takes milliseconds from 0 to 60000, not '%s'", v);
        c->opt.warmup_ms = (double)n;
        c->warmup_ms_given = true;
    } else if (!strcmp(a, "--q-offset")) {
        if (!parse_int(v, -(1ll << 31), 1ll << 31, &n))
            return bad("--q-offset takes an integer, not '%s'", v);
        c->has_q_offset = true;
        c->q_offset = n;
    } else if (!strcmp(a, "--op")) {
        return parse_ops(v, &c->op_mask);
    } else if (!strcmp(a, "--with")) {
        return parse_with(v, c);
    } else if (!strcmp(a, "--shape")) {
        if (c->shape_count == BENCH_MAX_SHAPES)
            return bad("at most 32 --shape options%s", "");
        return parse_shape(v, c->shapes[c->shape_count++]);
    } else if (!strcmp(a, "--matmul")) {
        if (c->matmul_count == BENCH_MAX_SHAPES)
            return bad("at most 32 --matmul options%s", "");
        return parse_matmul(v, c->matmuls[c->matmul_count++]);
    } else if (!strcmp(a, "--matmul-variant")) {
        static const char *const names[] = {"auto", "tiled", "naive", "texel", "coopmat",
                                            "coopmat_emulated"};
        size_t k = 0;
        while (k < sizeof names / sizeof names[0] && strcmp(v, names[k]))
            k++;
        if (k == sizeof names / sizeof names[0])
            return bad("--matmul-variant takes auto, tiled, naive, texel, coopmat or "
                       "coopmat_emulated, not '%s'", v);
        c->matmul_variant = (vkattn_matmul_variant)k;
        c->matmul_variant_given = true;
    } else if (!strcmp(a, "--path")) {
        c->path_given = true;
        if (!strcmp(v, "auto")) c->path = PATH_AUTO;
        else if (!strcmp(v, "fused")) c->path = PATH_FUSED;
        else if (!strcmp(v, "unfused")) c->path = PATH_UNFUSED;
        else return bad("--path takes auto, fused or unfused, not '%s'", v);
    } else if (!strcmp(a, "--out-dtype")) {
        if (!strcmp(v, "f32")) c->out_dtype = VKATTN_DTYPE_F32;
        else if (!strcmp(v, "f16")) c->out_dtype = VKATTN_DTYPE_F16;
        else if (!strcmp(v, "bf16")) c->out_dtype = VKATTN_DTYPE_BF16;
        else return bad("--out-dtype takes f32, f16 or bf16, not '%s'", v);
    } else if (!strcmp(a, "--dtype")) {
        c->dtype_given = true;
        if (!strcmp(v, "f32")) c->dtype = VKATTN_DTYPE_F32;
        else if (!strcmp(v, "f16")) c->dtype = VKATTN_DTYPE_F16;
        else if (!strcmp(v, "bf16")) c->dtype = VKATTN_DTYPE_BF16;
        else return bad("--dtype takes f32, f16 or bf16, not '%s'", v);
    } else if (!strcmp(a, "--backend")) {
        if (!strcmp(v, "auto")) c->backend = VKATTN_BACKEND_AUTO;
        else if (!strcmp(v, "vulkan")) c->backend = VKATTN_BACKEND_VULKAN;
        else if (!strcmp(v, "cpu")) c->backend = VKATTN_BACKEND_CPU;
        else return bad("--backend takes auto, vulkan or cpu, not '%s'", v);
    } else if (!strcmp(a, "--variant")) {
        c->fused_variant = VKATTN_FUSED_AUTO;
        for (int k = VKATTN_FUSED_AUTO + 1;
             strcmp(vkattn_fused_variant_name((vkattn_fused_variant)k), "?"); k++)
            if (!strcmp(v, vkattn_fused_variant_name((vkattn_fused_variant)k)))
                c->fused_variant = (vkattn_fused_variant)k;
        if (c->fused_variant == VKATTN_FUSED_AUTO)
            return bad("--variant takes rows, tiled, decode, coopmat or coopmat_emulated, not "
                       "'%s'", v);
    } else if (!strcmp(a, "--splits")) {
        if (!parse_int(v, 1, 65535, &n))
            return bad("--splits takes a count of key splits from 1 to 65535, not '%s'", v);
        c->kv_splits = (uint32_t)n;
    } else if (!strcmp(a, "--tune")) {
        c->tuning = v;
    } else if (!strcmp(a, "--device")) {
        c->device = v;
    } else if (!strcmp(a, "--json")) {
        c->json_path = v;
    } else if (!strcmp(a, "--csv")) {
        c->csv_path = v;
    } else {
        return bad("unknown option '%s'", a);
    }
    return 0;
}

int bench_parse_args(int argc, char **argv, bench_cli *c)
{
    *c = (bench_cli){.opt = {.reps = 20, .warmup = 1, .verify = true}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--quick")) {
            c->full = c->gpu = false;
        } else if (!strcmp(a, "--full")) {
            c->full = true;
            c->gpu = false;
        } else if (!strcmp(a, "--gpu")) {
            c->gpu = true;
            c->full = false;
        } else if (!strcmp(a, "--no-verify")) {
            c->opt.verify = false;
        } else if (!strcmp(a, "--profile")) {
            c->opt.profile = true;
        } else if (!strcmp(a, "--causal")) {
            c->causal = true;
        } else if (!strncmp(a, "--", 2) && strchr(a, '=')) {
            /* --name=value, as getopt_long takes it */
            const char *eq = strchr(a, '=');
            char name[32];
            if ((size_t)(eq - a) >= sizeof name)
                return bad("unknown option '%s'", a);
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            static const char *const flags[] = {"--help", "--quick", "--full", "--gpu",
                                                "--no-verify", "--profile", "--causal"};
            for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
                if (!strcmp(name, flags[f]))
                    return bad("'%s' takes no value", name);
            int rc = value_option(c, name, eq + 1);
            if (rc)
                return rc;
        } else if (strncmp(a, "--", 2) || i + 1 == argc) {
            return bad("unknown option, or no value after it: '%s'", a);
        } else {
            int rc = value_option(c, a, argv[++i]);
            if (rc)
                return rc;
        }
    }
    if ((c->fused_variant || c->kv_splits || c->with_count) && !c->shape_count)
        return bad("--variant, --splits and --with apply to --shape cases%s", "");
    if (c->matmul_variant_given && !c->matmul_count)
        return bad("--matmul-variant applies to --matmul cases%s", "");
    /* --op leaving out the op of the cases given would drop them unseen */
    if (c->op_mask && c->shape_count && !(c->op_mask & (1u << OP_ATTENTION)))
        return bad("--shape gives attention cases, which --op leaves out%s", "");
    if (c->op_mask && c->matmul_count && !(c->op_mask & (1u << OP_MATMUL)))
        return bad("--matmul gives matmul cases, which --op leaves out%s", "");
    /* Timed runs of one case take about this long at most (see bench_time). */
    c->opt.budget_ms = c->full ? 4000.0 : 1500.0;
    return 0;
}
