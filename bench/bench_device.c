/* vkattn-bench: the device header and the estimated peak FP32 rate. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Vendor datasheets, FP32 without tensor cores, by device-name substring; the
 * first match wins, so more specific names come first. */
static const struct {
    const char *name;
    double tflops;
} gpu_peaks[] = {
    {"H100 PCIe", 51.2},
    {"H100", 67.0},     /* SXM */
    {"H200", 67.0},
    {"A100", 19.5},
    {"RTX 4090", 82.6},
    {"L40S", 91.6},
    {"RTX 3090", 35.6},
};

/* What /proc/cpuinfo says about the host CPU. */
typedef struct cpu_facts {
    int cores;          /* physical: distinct (physical id, core id) pairs */
    int logical;
    double mhz;         /* average "cpu MHz" */
    int lanes;          /* fp32 lanes of the widest SIMD unit the flags name */
    const char *simd;
    bool fma;
} cpu_facts;

static bool has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = strstr(flags, flag); p; p = strstr(p + 1, flag))
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static double field_value(const char *line)
{
    const char *colon = strchr(line, ':');
    return colon ? atof(colon + 1) : 0.0;
}

static void read_cpuinfo(cpu_facts *out)
{
    *out = (cpu_facts){.lanes = 4, .simd = "SSE"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[4096];
    int physical = 0, mhz_count = 0;
    int seen[256][2]; /* (physical id, core id) pairs */
    int seen_count = 0;
    double mhz_sum = 0.0;
    bool flags_read = false;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9)) {
            out->logical++;
        } else if (!strncmp(line, "physical id", 11)) {
            physical = (int)field_value(line);
        } else if (!strncmp(line, "core id", 7)) {
            int core = (int)field_value(line), i = 0;
            while (i < seen_count && (seen[i][0] != physical || seen[i][1] != core))
                i++;
            if (i == seen_count && seen_count < 256) {
                seen[seen_count][0] = physical;
                seen[seen_count++][1] = core;
            }
        } else if (!strncmp(line, "cpu MHz", 7)) {
            mhz_sum += field_value(line);
            mhz_count++;
        } else if (!flags_read && (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8))) {
            flags_read = true;
            if (has_flag(line, "avx512f"))
                out->lanes = 16, out->simd = "avx512f";
            else if (has_flag(line, "avx2") || has_flag(line, "avx"))
                out->lanes = 8, out->simd = has_flag(line, "avx2") ? "avx2" : "avx";
            else if (has_flag(line, "asimd"))
                out->lanes = 4, out->simd = "asimd";
            out->fma = has_flag(line, "fma") || has_flag(line, "asimd");
        }
    }
    fclose(f);
    out->cores = seen_count ? seen_count : out->logical;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && out->cores > online)
        out->cores = (int)online;
    out->mhz = mhz_count ? mhz_sum / mhz_count : 0.0;
}

/* A CPU device: cores x fp32 SIMD lanes x 2 (an FMA is two flops) x 2 FMA
 * pipes per core x clock. llvmpipe names the vector width it compiles for
 * ("llvmpipe (LLVM 15.0.6, 256 bits)"); its code cannot use more lanes than
 * that even where the flags offer AVX-512, so the smaller width counts. */
static double cpu_peak(const vkattn_device_info *info, char *how, size_t size)
{
    cpu_facts cpu;
    read_cpuinfo(&cpu);
    if (cpu.cores == 0 || cpu.mhz <= 0.0) {
        snprintf(how, size, "unknown (no core count or clock in /proc/cpuinfo)");
        return 0.0;
    }
    int lanes = cpu.lanes;
    char width_note[96] = "";
    const char *bits = strstr(info->name, " bits)");
    if (!strncmp(info->name, "llvmpipe", 8) && bits) {
        const char *p = bits;
        while (p > info->name && p[-1] >= '0' && p[-1] <= '9')
            p--;
        int llvm_lanes = atoi(p) / 32;
        if (llvm_lanes > 0 && llvm_lanes < lanes) {
            snprintf(width_note, sizeof width_note, ", llvmpipe compiles for %d", llvm_lanes);
            lanes = llvm_lanes;
        }
    }
    int fma = cpu.fma ? 2 : 1;
    double peak = (double)cpu.cores * lanes * fma * 2.0 * cpu.mhz * 1e-3;
    snprintf(how, size, "%d cores x %d lanes (%s: %d%s) x %d (%s) x 2 FMA pipes x %.0f MHz, "
                        "from /proc/cpuinfo",
             cpu.cores, lanes, cpu.simd, cpu.lanes, width_note, fma,
             cpu.fma ? "FMA" : "no FMA flag", cpu.mhz);
    return peak;
}

double bench_peak_gflops(const vkattn_device_info *info, char *how, size_t size)
{
    if (info->backend == VKATTN_BACKEND_CPU) {
        snprintf(how, size, "not estimated: the CPU reference backend computes in double, "
                            "with plain loops");
        return 0.0;
    }
    if (info->type == VKATTN_DEVICE_TYPE_CPU)
        return cpu_peak(info, how, size);
    for (size_t i = 0; i < sizeof gpu_peaks / sizeof gpu_peaks[0]; i++)
        if (strstr(info->name, gpu_peaks[i].name)) {
            snprintf(how, size, "vendor datasheet, \"%s\": %.1f TFLOP/s fp32 without tensor cores",
                     gpu_peaks[i].name, gpu_peaks[i].tflops);
            return gpu_peaks[i].tflops * 1e3;
        }
    snprintf(how, size, "unknown for this device");
    return 0.0;
}

static const char *type_name(vkattn_device_type t)
{
    static const char *names[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
    return (unsigned)t < 5 ? names[t] : "?";
}

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

void bench_print_device(FILE *f, const vkattn_device_info *info, double peak, const char *how,
                        const bench_options *opt)
{
    fprintf(f, "vkattn-bench, library %s (header %d.%d.%d)\n", vkattn_version_string(),
            VKATTN_VERSION_MAJOR, VKATTN_VERSION_MINOR, VKATTN_VERSION_PATCH);
    if (info->backend == VKATTN_BACKEND_CPU) {
        fprintf(f, "device:   %s (the CPU reference backend, no Vulkan device)\n", info->name);
    } else {
        fprintf(f, "device:   %s, index %u, %s\n", info->name, info->index, type_name(info->type));
        fprintf(f, "vendor:   %s (vendor id 0x%04x, device id 0x%04x)\n", info->vendor,
                info->vendor_id, info->device_id);
        fprintf(f, "driver:   %s, %s, version %s\n", info->driver_name[0] ? info->driver_name : "?",
                info->driver_info[0] ? info->driver_info : "?", info->driver_version);
        fprintf(f, "vulkan:   API %u.%u.%u%s%s\n", VK_API_VERSION_MAJOR(info->api_version),
                VK_API_VERSION_MINOR(info->api_version), VK_API_VERSION_PATCH(info->api_version),
                info->adopted ? ", adopted device" : "",
                info->validation_enabled ? ", validation layer on (slower)" : "");
        fprintf(f, "compute:  subgroup %u (%u-%u, %s; arithmetic %s), shared memory %u B, "
                   "workgroup up to %u invocations, max storage buffer range %llu B (%.0f MiB)\n",
                info->subgroup_size, info->subgroup_size_min, info->subgroup_size_max,
                info->subgroup_size_required ? "required per kernel" : "not requirable",
                yes_no(info->subgroup_arithmetic), info->shared_memory_bytes,
                info->max_workgroup_invocations,
                (unsigned long long)info->max_storage_buffer_range,
                (double)info->max_storage_buffer_range / 1048576.0);
        fprintf(f, "features: 16-bit storage %s, fp16 arithmetic %s, cooperative matrix %s, "
                "bf16 matrices %s, pipeline statistics %s\n", yes_no(info->storage_16bit),
                yes_no(info->float16_arithmetic),
                !info->cooperative_matrix ? "no"
                : info->cooperative_matrix_khr ? "yes (VK_KHR_cooperative_matrix)"
                                               : "yes (VK_NV_cooperative_matrix)",
                yes_no(info->bf16_cooperative_matrix), yes_no(info->pipeline_statistics));
        fprintf(f, "memory:   %s\n",
                info->host_visible_device_memory
                    ? "tensors mapped (host-visible device memory)"
                : info->memory == VKATTN_MEMORY_DEVICE
                    ? "tensors device-local, staged transfers (memory mode DEVICE)"
                    : "tensors device-local, staged transfers");
    }
    bool gpu_timing = info->backend == VKATTN_BACKEND_VULKAN && info->timestamps;
    if (gpu_timing)
        fprintf(f, "timing:   GPU timestamps (period %.3g ns)", info->timestamp_period_ns);
    else if (info->backend == VKATTN_BACKEND_CPU)
        fprintf(f, "timing:   host clock (the CPU backend runs each op on the calling thread)");
    else
        fprintf(f, "timing:   host clock around submit-and-wait (note: %s has no GPU timestamps; "
                   "times include submission overhead)", info->name);
    char warm[64] = "";
    if (opt->warmup_ms > 0.0)
        snprintf(warm, sizeof warm, " and %.0f ms more", opt->warmup_ms);
    if (opt->reps_given)
        fprintf(f, "; median and min of %d runs after %d warm-up%s\n", opt->reps, opt->warmup,
                warm);
    else
        fprintf(f, "; median and min of up to %d runs (about %.1f s a case) after %d warm-up%s\n",
                opt->reps, opt->budget_ms * 1e-3, opt->warmup, warm);
    if (peak > 0.0)
        fprintf(f, "peak:     %.0f GFLOP/s fp32, estimated: %s\n", peak, how);
    else
        fprintf(f, "peak:     %s\n", how);
}
