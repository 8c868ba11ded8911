/* vkattn-bench: sweeps cases on the chosen device, times them with GPU
 * timestamps, verifies each against the CPU reference, prints a table and
 * writes JSON lines / CSV for comparing devices. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, strdup */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cli {
    bench_options opt;
    vkattn_backend backend;
    const char *device;
    const char *op;        /* NULL: all */
    bool full;
    const char *json_path, *csv_path;
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vkattn-bench [options]\n"
            "  --op matmul|softmax|head_transpose   run one op only (default: all)\n"
            "  --quick                              the default sweep (under a minute on lavapipe)\n"
            "  --full                               larger shapes too\n"
            "  --reps N                             timed repetitions (default 5)\n"
            "  --warmup N                           untimed runs first (default 1)\n"
            "  --backend auto|vulkan|cpu            (default auto)\n"
            "  --device N|NAME                      device index or name substring\n"
            "  --json FILE|-                        JSON lines, one object per case\n"
            "  --csv FILE                           CSV, one row per case\n"
            "  --no-verify                          skip the CPU reference check\n"
            "Exit status: 0 all cases ran and verified, 1 a case failed, 2 usage error.\n");
}

static int parse(int argc, char **argv, cli *c)
{
    *c = (cli){.opt = {.reps = 5, .warmup = 1, .verify = true}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            c->full = false;
        } else if (!strcmp(a, "--full")) {
            c->full = true;
        } else if (!strcmp(a, "--no-verify")) {
            c->opt.verify = false;
        } else if (v && !strcmp(a, "--reps")) {
            c->opt.reps = atoi(v), i++;
        } else if (v && !strcmp(a, "--warmup")) {
            c->opt.warmup = atoi(v), i++;
        } else if (v && !strcmp(a, "--op")) {
            c->op = v, i++;
        } else if (v && !strcmp(a, "--device")) {
            c->device = v, i++;
        } else if (v && !strcmp(a, "--json")) {
            c->json_path = v, i++;
        } else if (v && !strcmp(a, "--csv")) {
            c->csv_path = v, i++;
        } else if (v && !strcmp(a, "--backend")) {
            if (!strcmp(v, "auto")) c->backend = VKATTN_BACKEND_AUTO;
            else if (!strcmp(v, "vulkan")) c->backend = VKATTN_BACKEND_VULKAN;
            else if (!strcmp(v, "cpu")) c->backend = VKATTN_BACKEND_CPU;
            else {
                fprintf(stderr, "vkattn-bench: --backend must be auto, vulkan or cpu, not '%s'\n", v);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "vkattn-bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (c->opt.reps < 1 || c->opt.warmup < 0) {
        fprintf(stderr, "vkattn-bench: --reps must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    if (c->op && strcmp(c->op, "matmul") && strcmp(c->op, "softmax") &&
        strcmp(c->op, "head_transpose")) {
        fprintf(stderr, "vkattn-bench: --op must be matmul, softmax or head_transpose, not '%s'\n",
                c->op);
        return 2;
    }
    return 0;
}

/* The sweep. Quick: the shapes the foundation issue measures. */
static int build_cases(const cli *c, bench_case *out, int cap)
{
    static const bench_case quick[] = {
        {OP_MATMUL, "", 1, 1024, 1024, 1024, false, VKATTN_DTYPE_F32},
        {OP_MATMUL, "tiled", 1, 1024, 1024, 1024, false, VKATTN_DTYPE_F32},
        {OP_MATMUL, "naive", 1, 1024, 1024, 1024, false, VKATTN_DTYPE_F32},
        {OP_MATMUL, "", 8, 256, 64, 64, false, VKATTN_DTYPE_F32},
        {OP_MATMUL, "", 1, 1000, 1000, 100, false, VKATTN_DTYPE_F16},
        {OP_MATMUL, "", 1, 999, 1001, 99, false, VKATTN_DTYPE_F32},
        {OP_SOFTMAX, "", 8, 1024, 1024, 0, false, VKATTN_DTYPE_F32},
        {OP_SOFTMAX, "", 8, 1024, 1024, 0, true, VKATTN_DTYPE_F32},
        {OP_SOFTMAX, "shared", 8, 1024, 1024, 0, false, VKATTN_DTYPE_F32},
        {OP_TRANSPOSE, "", 1, 1024, 8, 64, false, VKATTN_DTYPE_F32},
    };
    static const bench_case full[] = {
        {OP_MATMUL, "", 1, 2048, 2048, 2048, false, VKATTN_DTYPE_F32},
        {OP_MATMUL, "", 32, 512, 512, 64, false, VKATTN_DTYPE_F32},
        {OP_SOFTMAX, "", 32, 2048, 2048, 0, true, VKATTN_DTYPE_F32},
        {OP_TRANSPOSE, "", 4, 2048, 32, 128, false, VKATTN_DTYPE_F32},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof quick / sizeof quick[0] && n < cap; i++)
        if (!c->op || !strcmp(c->op, bench_op_name(quick[i].op)))
            out[n++] = quick[i];
    for (size_t i = 0; c->full && i < sizeof full / sizeof full[0] && n < cap; i++)
        if (!c->op || !strcmp(c->op, bench_op_name(full[i].op)))
            out[n++] = full[i];
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *type_name(vkattn_device_type t)
{
    static const char *names[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
    return (unsigned)t < 5 ? names[t] : "?";
}

/* Peak FP32 where it can be known: lavapipe reports its SIMD width in its name
 * ("llvmpipe (LLVM 15.0.6, 256 bits)"); peak = cores x lanes x 2 (FMA) x 2 FMA
 * pipes x clock from /proc/cpuinfo. Other devices: 0 (unknown). */
static double estimate_peak_gflops(const vkattn_device_info *info, char *how, size_t size)
{
    const char *bits = strstr(info->name, " bits)");
    if (strncmp(info->name, "llvmpipe", 8) != 0 || !bits) {
        snprintf(how, size, "unknown for this device");
        return 0.0;
    }
    const char *p = bits;
    while (p > info->name && p[-1] >= '0' && p[-1] <= '9')
        p--;
    int lanes = atoi(p) / 32;
    double mhz = 0.0;
    int cores = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9))
            cores++;
        if (!strncmp(line, "cpu MHz", 7) && mhz == 0.0) {
            char *colon = strchr(line, ':');
            if (colon)
                mhz = atof(colon + 1);
        }
    }
    if (f)
        fclose(f);
    double peak = (double)cores * lanes * 2.0 * 2.0 * mhz * 1e-3;
    snprintf(how, size, "%d cores x %d lanes x 2 (FMA) x 2 FMA pipes x %.0f MHz", cores, lanes, mhz);
    return peak;
}

int main(int argc, char **argv)
{
    cli c;
    int rc = parse(argc, argv, &c);
    if (rc)
        return rc;

    vkattn_context_desc gd = {.backend = c.backend, .device = c.device};
    vkattn_context *gpu = NULL, *cpu = NULL;
    vkattn_status s = vkattn_context_create(&gd, &gpu);
    if (s != VKATTN_OK) {
        fprintf(stderr, "vkattn-bench: cannot create a context: %s\n", vkattn_status_string(s));
        return 1;
    }
    vkattn_context_desc cd = {.backend = VKATTN_BACKEND_CPU};
    if ((s = vkattn_context_create(&cd, &cpu)) != VKATTN_OK) {
        fprintf(stderr, "vkattn-bench: cannot create the CPU reference: %s\n", vkattn_status_string(s));
        vkattn_context_destroy(gpu);
        return 1;
    }
    vkattn_device_info info;
    vkattn_context_info(gpu, &info);
    char peak_how[160];
    double peak = estimate_peak_gflops(&info, peak_how, sizeof peak_how);
    printf("vkattn-bench %s\n", vkattn_version_string());
    printf("device:  %s (%s, %s, vendor 0x%04x)\n", info.name, type_name(info.type), info.vendor,
           info.vendor_id);
    printf("driver:  %s %s (version %s), Vulkan %u.%u.%u\n", info.driver_name, info.driver_info,
           info.driver_version, VK_API_VERSION_MAJOR(info.api_version),
           VK_API_VERSION_MINOR(info.api_version), VK_API_VERSION_PATCH(info.api_version));
    printf("limits:  subgroup %u%s, shared memory %u B, storage buffer range %llu B\n",
           info.subgroup_size, info.subgroup_arithmetic ? " (arithmetic)" : "",
           info.shared_memory_bytes, (unsigned long long)info.max_storage_buffer_range);
    printf("features: 16-bit storage %s, fp16 arithmetic %s, cooperative matrix %s\n",
           info.storage_16bit ? "yes" : "no", info.float16_arithmetic ? "yes" : "no",
           info.cooperative_matrix ? "yes" : "no");
    printf("timing:  %s; median and min of %d runs after %d warm-up\n",
           info.timestamps ? "GPU timestamps" : "host clock (no GPU timestamps on this queue)",
           c.opt.reps, c.opt.warmup);
    if (peak > 0)
        printf("peak:    %.0f GFLOP/s fp32 estimated (%s)\n", peak, peak_how);
    else
        printf("peak:    %s\n", peak_how);

    FILE *json = NULL, *csv = NULL;
    if (c.json_path)
        json = strcmp(c.json_path, "-") ? fopen(c.json_path, "w") : stdout;
    if (c.csv_path)
        csv = fopen(c.csv_path, "w");
    if ((c.json_path && !json) || (c.csv_path && !csv)) {
        fprintf(stderr, "vkattn-bench: cannot open an output file\n");
        return 1;
    }
    if (csv)
        fprintf(csv, "op,variant,backend,device,driver,dtype,shape,causal,ms_median,ms_min,"
                     "gflops,gbps,max_abs_err,ok\n");

    bench_case cases[64];
    int n = build_cases(&c, cases, 64);
    printf("\n%-15s %-9s %-20s %-4s %-6s %10s %10s %9s %8s %6s %10s %s\n", "op", "variant",
           "shape", "dt", "causal", "ms median", "ms min", "GFLOP/s", "GB/s", "%peak", "max err",
           "check");
    int failures = 0;
    double start = now_s();
    for (int i = 0; i < n; i++) {
        char shape[64];
        bench_case_shape(&cases[i], shape, sizeof shape);
        fprintf(stderr, "[%d/%d %.0fs] %s %s %s\n", i + 1, n, now_s() - start,
                bench_op_name(cases[i].op), cases[i].variant, shape);
        bench_result r;
        bench_run_case(gpu, cpu, &cases[i], &c.opt, &r);
        double gflops = r.ms_median > 0 ? r.flops / (r.ms_median * 1e6) : 0;
        double gbps = r.ms_median > 0 ? r.bytes / (r.ms_median * 1e6) : 0;
        const char *dt = cases[i].dtype == VKATTN_DTYPE_F16 ? "f16" : "f32";
        const char *check = r.error[0] ? "ERROR" : !c.opt.verify ? "-" : r.ok ? "ok" : "FAIL";
        if (r.error[0] || !r.ok)
            failures++;
        printf("%-15s %-9s %-20s %-4s %-6s %10.3f %10.3f %9.2f %8.2f %6.1f %10.2e %s\n",
               bench_op_name(cases[i].op), cases[i].variant[0] ? cases[i].variant : "auto", shape,
               dt, cases[i].causal ? "yes" : "no", r.ms_median, r.ms_min, gflops, gbps,
               peak > 0 && gflops > 0 ? 100.0 * gflops / peak : 0.0, r.max_abs_err, check);
        if (r.error[0])
            printf("    %s\n", r.error);
        fflush(stdout);
        if (json)
            fprintf(json,
                    "{\"op\":\"%s\",\"variant\":\"%s\",\"backend\":\"%s\",\"device\":\"%s\","
                    "\"driver\":\"%s %s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"causal\":%s,"
                    "\"ms_median\":%.6f,\"ms_min\":%.6f,\"gflops\":%.4f,\"gbps\":%.4f,"
                    "\"max_abs_err\":%.3e,\"ok\":%s}\n",
                    bench_op_name(cases[i].op), cases[i].variant,
                    info.backend == VKATTN_BACKEND_CPU ? "cpu" : "vulkan", info.name,
                    info.driver_name, info.driver_info, dt, shape,
                    cases[i].causal ? "true" : "false", r.ms_median, r.ms_min, gflops, gbps,
                    r.max_abs_err, r.ok && !r.error[0] ? "true" : "false");
        if (csv)
            fprintf(csv, "%s,%s,%s,\"%s\",\"%s %s\",%s,%s,%d,%.6f,%.6f,%.4f,%.4f,%.3e,%d\n",
                    bench_op_name(cases[i].op), cases[i].variant,
                    info.backend == VKATTN_BACKEND_CPU ? "cpu" : "vulkan", info.name,
                    info.driver_name, info.driver_info, dt, shape, cases[i].causal, r.ms_median,
                    r.ms_min, gflops, gbps, r.max_abs_err, r.ok && !r.error[0]);
    }
    if (json && json != stdout)
        fclose(json);
    if (csv)
        fclose(csv);
    vkattn_context_destroy(cpu);
    vkattn_context_destroy(gpu);
    if (failures)
        printf("\n%d case(s) failed\n", failures);
    return failures ? 1 : 0;
}
