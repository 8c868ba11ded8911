/* vkattn-bench: names and shape strings, the table, JSON lines and CSV. The
 * JSON keys and CSV columns are stable: tools compare runs across devices. */
#include "bench.h"

#include <math.h>
#include <string.h>

const char *bench_op_name(bench_op op)
{
    static const char *names[OP_COUNT] = {"attention", "mha", "matmul", "softmax",
                                          "head_transpose"};
    return (unsigned)op < OP_COUNT ? names[op] : "?";
}

const char *bench_path_name(bench_path path)
{
    static const char *names[] = {"auto", "fused", "unfused", "reference", "-"};
    return (unsigned)path <= PATH_NONE ? names[path] : "?";
}

const char *bench_variant_name(const bench_case *c)
{
    static const char *matmul[] = {"auto", "tiled", "naive", "texel", "coopmat", "coopmat_emu"};
    static const char *softmax[] = {"auto", "subgroup", "shared"};
    switch (c->op) {
    case OP_MATMUL:
        return (unsigned)c->variant < 6 ? matmul[c->variant] : "?";
    case OP_SOFTMAX:
        return (unsigned)c->variant < 3 ? softmax[c->variant] : "?";
    case OP_ATTENTION: {
        /* A 16-bit O, then the forced fused variant, if any, before the splits. */
        static char name[80], out[16], splits[24];
        out[0] = '\0';
        if (c->out_dtype != VKATTN_DTYPE_F32)
            snprintf(out, sizeof out, "o=%s ", bench_dtype_name(c->out_dtype));
        if (c->path == PATH_FUSED || c->path == PATH_AUTO) {
            if (c->kv_splits)
                snprintf(splits, sizeof splits, "splits=%u", c->kv_splits);
            else
                snprintf(splits, sizeof splits, "splits=auto");
            snprintf(name, sizeof name, "%s%s%s%s%s", out, bench_att_variant_name(c),
                     c->variant ? vkattn_fused_variant_name((vkattn_fused_variant)c->variant) : "",
                     c->variant ? " " : "", splits);
            return name;
        }
        snprintf(name, sizeof name, "%s%s", out, bench_att_variant_name(c));
        if (!name[0])
            return "-";
        name[strlen(name) - 1] = '\0'; /* each part ends in a space */
        return name;
    }
    case OP_MHA:
        switch (c->compute_dtype) {
        case VKATTN_DTYPE_F16: return "compute=f16";
        case VKATTN_DTYPE_BF16: return "compute=bf16";
        default: return "-";
        }
    default:
        return "-";
    }
}

const char *bench_dtype_name(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return "f32";
    case VKATTN_DTYPE_F16: return "f16";
    case VKATTN_DTYPE_BF16: return "bf16";
    case VKATTN_DTYPE_I32: return "i32";
    }
    return "?";
}

double bench_dtype_bytes(vkattn_dtype dtype)
{
    return dtype == VKATTN_DTYPE_F16 || dtype == VKATTN_DTYPE_BF16 ? 2.0 : 4.0;
}

void bench_case_shape(const bench_case *c, char *buf, size_t size)
{
    long long B = c->B, H = c->H, Hkv = c->Hkv, Tq = c->Tq, Tk = c->Tk, D = c->D, Dv = c->Dv;
    switch (c->op) {
    case OP_ATTENTION:
        if (D == Dv)
            snprintf(buf, size, "%lld,%lld,%lld,%lld,%lld,%lld", B, H, Hkv, Tq, Tk, D);
        else
            snprintf(buf, size, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", B, H, Hkv, Tq, Tk, D, Dv);
        break;
    case OP_MHA:
        snprintf(buf, size, "B%lld T%lld C%lld H%lld Dh%lld", B, Tq, H * D, H, D);
        break;
    case OP_MATMUL:
        snprintf(buf, size, "%lldx%lldx%lldx%lld", B, Tq, Tk, D);
        break;
    case OP_SOFTMAX:
        snprintf(buf, size, "%lldx%lldx%lldx%lld", B, H, Tq, Tk);
        break;
    default:
        snprintf(buf, size, "%lldx%lldx%lldx%lld", B, Tq, H, D);
    }
}

/* Derived figures of one case. */
typedef struct figures {
    double gflops, gbps, pct_peak;
    const vkattn_device_info *info;
    bool gpu_timing;
    const char *check;
} figures;

static figures derive(const bench_report *rep, const bench_case *c, const bench_result *r)
{
    figures f = {0};
    bool on_cpu = c->path == PATH_REFERENCE;
    f.info = on_cpu ? rep->cpu_info : rep->main_info;
    f.gpu_timing = f.info->backend == VKATTN_BACKEND_VULKAN && f.info->timestamps;
    if (r->ms_median > 0.0) {
        f.gflops = r->flops / (r->ms_median * 1e6);
        f.gbps = r->bytes / (r->ms_median * 1e6);
    }
    if (!on_cpu && rep->peak_gflops > 0.0 && !r->flops_nominal)
        f.pct_peak = 100.0 * f.gflops / rep->peak_gflops;
    f.check = r->error[0] ? "ERROR" : !r->ok ? "FAIL" : r->verified ? "ok"
              : on_cpu ? "ref" : "-";
    return f;
}

static const char *table_format =
    "%-14s %-9s %-22s %-24s %-3s %-3s %10s %10s %4s %9s %8s %6s %9s %9s %s\n";

void bench_report_begin(const bench_report *rep)
{
    if (rep->table) {
        fprintf(rep->table, "\n");
        fprintf(rep->table, table_format, "op", "path", "variant", "shape", "dt", "cau",
                "ms median", "ms min", "reps", "GFLOP/s", "GB/s", "%peak", "max err", "tol",
                "check");
    }
    if (rep->csv)
        fprintf(rep->csv,
                "op,path,variant,backend,device,driver,dtype,shape,B,H,Hkv,Tq,Tk,D,Dv,causal,"
                "q_offset,kv_splits,reps,timing,ms_median,ms_min,gflops,gbps,pct_peak,"
                "max_abs_err,tolerance,verified,ok,note,error,kernels,base,base_ms_median,"
                "base_ratio\n");
}

/* Writes s as a JSON string body (quotes and control characters escaped). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A CSV field, quoted, inner quotes doubled. */
static void csv_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fprintf(f, "null"); /* JSON has no Inf or NaN */
}

/* A table cell: the number, or "-" where it does not apply. */
static void cell(char *buf, size_t size, bool show, const char *fmt, double v)
{
    if (show)
        snprintf(buf, size, fmt, v);
    else
        snprintf(buf, size, "-");
}

/* "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"; "" for the CPU backend. */
static void driver_string(const vkattn_device_info *info, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", info->driver_name,
             info->driver_name[0] && info->driver_info[0] ? " " : "", info->driver_info);
}

static void table_row(const bench_report *rep, const bench_case *c, const bench_result *r,
                      const figures *f, const char *shape)
{
    char med[32], min[32], reps[16], gflops[32], gbps[32], pct[16], err[32], tol[32];
    bool ran = r->reps > 0;
    cell(med, sizeof med, ran, "%.3f", r->ms_median);
    cell(min, sizeof min, ran, "%.3f", r->ms_min);
    cell(reps, sizeof reps, ran, "%.0f", (double)r->reps);
    cell(gflops, sizeof gflops, ran && r->flops > 0, "%.2f", f->gflops);
    cell(gbps, sizeof gbps, ran, "%.2f", f->gbps);
    cell(pct, sizeof pct, f->pct_peak > 0, "%.1f", f->pct_peak);
    cell(err, sizeof err, r->verified, "%.2e", r->max_abs_err);
    cell(tol, sizeof tol, r->verified, "%.1e", r->tolerance);
    fprintf(rep->table, table_format, bench_op_name(c->op), bench_path_name(c->path),
            bench_variant_name(c), shape, bench_dtype_name(c->dtype), c->causal ? "yes" : "no",
            med, min, reps, gflops, gbps, pct, err, tol, f->check);
    if (r->error[0])
        fprintf(rep->table, "    %s\n", r->error);
    else if (!r->ok)
        fprintf(rep->table, "    error %.3g exceeds the tolerance (verified %s)\n",
                r->max_abs_err, r->note);
    if (r->kernels[0])
        fprintf(rep->table, "    per run: %s\n", r->kernels);
    if (r->base_ratio > 0.0)
        fprintf(rep->table, "    x%.3f the %s case's time (median of %d runs of each, taken in turn; "
                            "%s %.3f ms)\n",
                r->base_ratio, r->base_name, r->reps, r->base_name, r->base_ms_median);
    fflush(rep->table);
}

static void json_row(const bench_report *rep, const bench_case *c, const bench_result *r,
                     const figures *f, const char *shape, int64_t q_offset)
{
    FILE *j = rep->json;
    char driver[520];
    driver_string(f->info, driver, sizeof driver);
    fprintf(j, "{\"op\":\"%s\",\"path\":\"%s\",\"variant\":\"%s\",\"backend\":\"%s\",\"device\":",
            bench_op_name(c->op), bench_path_name(c->path), bench_variant_name(c),
            f->info->backend == VKATTN_BACKEND_CPU ? "cpu" : "vulkan");
    json_string(j, f->info->name);
    fprintf(j, ",\"driver\":");
    json_string(j, driver);
    fprintf(j, ",\"dtype\":\"%s\",\"shape\":\"%s\",\"B\":%lld,\"H\":%lld,\"Hkv\":%lld,"
               "\"Tq\":%lld,\"Tk\":%lld,\"D\":%lld,\"Dv\":%lld,\"causal\":%s,\"q_offset\":%lld,"
               "\"kv_splits\":%u,\"reps\":%d,\"timing\":\"%s\",\"ms_median\":",
            bench_dtype_name(c->dtype), shape, (long long)c->B, (long long)c->H,
            (long long)c->Hkv, (long long)c->Tq, (long long)c->Tk, (long long)c->D,
            (long long)c->Dv, c->causal ? "true" : "false", (long long)q_offset, c->kv_splits,
            r->reps, f->gpu_timing ? "gpu" : "host");
    json_number(j, "%.6f", r->ms_median);
    fprintf(j, ",\"ms_min\":");
    json_number(j, "%.6f", r->ms_min);
    fprintf(j, ",\"gflops\":");
    json_number(j, "%.4f", f->gflops);
    fprintf(j, ",\"gbps\":");
    json_number(j, "%.4f", f->gbps);
    fprintf(j, ",\"pct_peak\":");
    json_number(j, "%.3f", f->pct_peak);
    fprintf(j, ",\"max_abs_err\":");
    json_number(j, "%.6e", r->max_abs_err);
    fprintf(j, ",\"tolerance\":");
    json_number(j, "%.6e", r->tolerance);
    fprintf(j, ",\"verified\":%s,\"ok\":%s,\"note\":", r->verified ? "true" : "false",
            r->ok && !r->error[0] ? "true" : "false");
    json_string(j, r->note);
    fprintf(j, ",\"error\":");
    json_string(j, r->error);
    fprintf(j, ",\"kernels\":");
    json_string(j, r->kernels);
    fprintf(j, ",\"base\":");
    json_string(j, r->base_ratio > 0.0 ? r->base_name : "");
    fprintf(j, ",\"base_ms_median\":");
    json_number(j, "%.6f", r->base_ratio > 0.0 ? r->base_ms_median : NAN);
    fprintf(j, ",\"base_ratio\":");
    json_number(j, "%.4f", r->base_ratio > 0.0 ? r->base_ratio : NAN);
    fprintf(j, "}\n");
    fflush(j);
}

static void csv_row(const bench_report *rep, const bench_case *c, const bench_result *r,
                    const figures *f, const char *shape, int64_t q_offset)
{
    FILE *v = rep->csv;
    char driver[520];
    driver_string(f->info, driver, sizeof driver);
    fprintf(v, "%s,%s,%s,%s,", bench_op_name(c->op), bench_path_name(c->path),
            bench_variant_name(c), f->info->backend == VKATTN_BACKEND_CPU ? "cpu" : "vulkan");
    csv_string(v, f->info->name);
    fputc(',', v);
    csv_string(v, driver);
    fprintf(v, ",%s,", bench_dtype_name(c->dtype));
    csv_string(v, shape);
    fprintf(v, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%lld,%u,%d,%s,%.6f,%.6f,%.4f,%.4f,%.3f,"
               "%.6e,%.6e,%d,%d,",
            (long long)c->B, (long long)c->H, (long long)c->Hkv, (long long)c->Tq,
            (long long)c->Tk, (long long)c->D, (long long)c->Dv, c->causal, (long long)q_offset,
            c->kv_splits, r->reps, f->gpu_timing ? "gpu" : "host", r->ms_median, r->ms_min,
            f->gflops, f->gbps, f->pct_peak, r->max_abs_err, r->tolerance, r->verified,
            r->ok && !r->error[0]);
    csv_string(v, r->note);
    fputc(',', v);
    csv_string(v, r->error);
    fputc(',', v);
    csv_string(v, r->kernels);
    fputc(',', v);
    csv_string(v, r->base_ratio > 0.0 ? r->base_name : "");
    if (r->base_ratio > 0.0)
        fprintf(v, ",%.6f,%.4f", r->base_ms_median, r->base_ratio);
    else
        fprintf(v, ",,");
    fputc('\n', v);
    fflush(v);
}

void bench_report_case(const bench_report *rep, const bench_case *c, const bench_result *r)
{
    char shape[64];
    bench_case_shape(c, shape, sizeof shape);
    figures f = derive(rep, c, r);
    /* The offset in effect: attention and softmax default to bottom-right. */
    int64_t q_offset = c->has_q_offset ? c->q_offset
                       : c->op == OP_ATTENTION || c->op == OP_SOFTMAX ? c->Tk - c->Tq
                                                                       : 0;
    if (rep->table)
        table_row(rep, c, r, &f, shape);
    if (rep->json)
        json_row(rep, c, r, &f, shape, q_offset);
    if (rep->csv)
        csv_row(rep, c, r, &f, shape, q_offset);
}
