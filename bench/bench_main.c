/* vkattn-bench: sweeps cases on the chosen device, times them with GPU
 * timestamps, verifies each against the CPU reference, prints a table and
 * writes JSON lines / CSV for comparing devices. Exit status: 0 all cases ran
 * and verified, 1 a case failed or errored (or no context), 2 usage error. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CASES 128

static void run_case(const bench_env *env, const bench_case *c, bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->ok = true;
    switch (c->op) {
    case OP_ATTENTION:
        if (c->att_variant != AV_NONE)
            bench_run_attention_variant(env, c, r);
        else
            bench_run_attention(env, c, r);
        break;
    case OP_MHA: bench_run_mha(env, c, r); break;
    case OP_MATMUL: bench_run_matmul(env, c, r); break;
    case OP_SOFTMAX: bench_run_softmax(env, c, r); break;
    default: bench_run_transpose(env, c, r); break;
    }
}

/* The library's warnings and errors (a tuning entry ignored, a fallback taken);
 * with --profile (user_data points at the flag) also the device reports:
 * each new pipeline's statistics where the driver gives them (registers,
 * spills: VK_KHR_pipeline_executable_properties), with VKATTN_COOPMAT_LAYOUT=1
 * the device's cooperative-matrix layout, what the device offers of
 * VK_NV_cooperative_matrix2, and whether the SPIR-V 1.6 forms are taken. Without --profile stderr stays for what went
 * wrong, which is how scripts check a run. */
static void bench_log_warnings(void *user_data, vkattn_log_level level,
                               vkattn_log_source source, const char *message)
{
    (void)source;
    const bool *profile = user_data;
    bool report = strncmp(message, "pipeline statistics", 19) == 0 ||
                  strncmp(message, "coopmat layout", 14) == 0 ||
                  strncmp(message, "coopmat peak", 12) == 0 ||
                  strncmp(message, "cooperative matrix 2", 20) == 0 ||
                  strncmp(message, "SPIR-V 1.6 forms", 16) == 0;
    if (level >= VKATTN_LOG_WARNING || (report && *profile))
        fprintf(stderr, "vkattn: %s\n", message);
}

static FILE *open_output(const char *path, const char *what)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f)
        fprintf(stderr, "vkattn-bench: cannot write the %s file '%s'\n", what, path);
    return f;
}

int main(int argc, char **argv)
{
    bench_cli cli;
    int rc = bench_parse_args(argc, argv, &cli);
    if (rc)
        return rc < 0 ? 0 : rc;
    static bench_case cases[MAX_CASES];
    int n = cli.soak ? 0 : bench_build_cases(&cli, cases, MAX_CASES);
    if (n == 0 && !cli.soak) {
        fprintf(stderr, "vkattn-bench: no case left to run (see --op and --path)\n");
        return 2;
    }

    bench_env env = {.opt = cli.opt};
    vkattn_context_desc md = {.backend = cli.backend, .device = cli.device,
                              .profile = cli.opt.profile, .tuning = cli.tuning,
                              .log_fn = bench_log_warnings,
                              .log_user_data = &cli.opt.profile};
    vkattn_status s = vkattn_context_create(&md, &env.main);
    if (s != VKATTN_OK) {
        fprintf(stderr, "vkattn-bench: cannot create a context%s%s: %s\n",
                cli.device ? " on device " : "", cli.device ? cli.device : "",
                vkattn_status_string(s));
        return 1;
    }
    if (cli.soak) {
        vkattn_device_info info;
        vkattn_context_info(env.main, &info);
        printf("vkattn-bench --soak on %s\n", info.name);
        int failed = bench_soak(env.main, cli.soak, stdout);
        vkattn_context_destroy(env.main);
        return failed;
    }
    vkattn_context_desc cd = {.backend = VKATTN_BACKEND_CPU};
    if ((s = vkattn_context_create(&cd, &env.cpu)) != VKATTN_OK) {
        fprintf(stderr, "vkattn-bench: cannot create the CPU reference: %s\n",
                vkattn_status_string(s));
        vkattn_context_destroy(env.main);
        return 1;
    }
    vkattn_device_info main_info, cpu_info;
    vkattn_context_info(env.main, &main_info);
    vkattn_context_info(env.cpu, &cpu_info);
    /* A CPU device runs at its clock from the first run. */
    if (!cli.warmup_ms_given)
        env.opt.warmup_ms = main_info.type == VKATTN_DEVICE_TYPE_CPU ? 0.0 : BENCH_GPU_WARMUP_MS;

    bench_report rep = {
        .main_info = &main_info, .cpu_info = &cpu_info,
        /* With JSON on stdout, the human-readable part goes to stderr. */
        .table = cli.json_path && !strcmp(cli.json_path, "-") ? stderr : stdout,
    };
    char how[256];
    rep.peak_gflops = bench_peak_gflops(&main_info, how, sizeof how);
    bench_print_device(rep.table, &main_info, rep.peak_gflops, how, &env.opt);
    const char *tuning = cli.tuning ? cli.tuning : getenv("VKATTN_TUNE");
    if (tuning && main_info.backend != VKATTN_BACKEND_CPU)
        fprintf(rep.table, "tuning:   %s (%s; warnings above name entries ignored)\n", tuning,
                cli.tuning ? "--tune" : "VKATTN_TUNE");
    if (!cli.opt.verify)
        fprintf(rep.table, "verify:   off (--no-verify)\n");
    else
        fprintf(rep.table, "verify:   against %s (double accumulation); large cases on blocks "
                           "of %d rows at the start, middle and end\n",
                cpu_info.name, BENCH_BLOCK_ROWS);

    int failures = 0;
    if ((cli.json_path && !(rep.json = open_output(cli.json_path, "JSON"))) ||
        (cli.csv_path && !(rep.csv = open_output(cli.csv_path, "CSV")))) {
        failures = 1;
        goto done;
    }
    bench_report_begin(&rep);
    double start = bench_now_s();
    for (int i = 0; i < n; i++) {
        char shape[64];
        bench_case_shape(&cases[i], shape, sizeof shape);
        fprintf(stderr, "[%d/%d %.0fs] %s %s %s\n", i + 1, n, bench_now_s() - start,
                bench_op_name(cases[i].op), bench_path_name(cases[i].path), shape);
        bench_result r;
        run_case(&env, &cases[i], &r);
        if (r.error[0] || !r.ok)
            failures++;
        bench_report_case(&rep, &cases[i], &r);
    }
    fprintf(rep.table, "\n%d case(s), %d failed, %.1f s\n", n, failures, bench_now_s() - start);
done:
    if (rep.json && rep.json != stdout)
        fclose(rep.json);
    if (rep.csv && rep.csv != stdout)
        fclose(rep.csv);
    vkattn_context_destroy(env.cpu);
    vkattn_context_destroy(env.main);
    return failures ? 1 : 0;
}
