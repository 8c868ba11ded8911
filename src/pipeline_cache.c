/* The persistent pipeline cache: a file per device (vendor, device, driver
 * version, device UUID) holding VkPipelineCache data behind vkattn's own header
 * and checksum. A file that is truncated, corrupt, or from another device,
 * driver or vkattn version is ignored with a log line, never handed to the
 * driver. Files are written to a temporary name and renamed into place. */
#define _POSIX_C_SOURCE 200809L /* mkdir, mkstemp, fdopen */
#include "internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "VKATTNPC"
#define CACHE_FORMAT 1
/* Larger files are not ours to trust. */
#define CACHE_MAX_BYTES ((uint64_t)256 << 20)

typedef struct cache_header {
    char magic[8];
    uint32_t format, vkattn_version;
    uint32_t vendor_id, device_id, driver_version, reserved;
    uint8_t device_uuid[VK_UUID_SIZE];
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
    uint64_t data_size;
    uint64_t checksum; /* FNV-1a of the data */
} cache_header;

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

static void expected_header(const vkattn_context *ctx, cache_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CACHE_MAGIC, sizeof h->magic);
    h->format = CACHE_FORMAT;
    h->vkattn_version = VKATTN_VERSION;
    h->vendor_id = ctx->info.vendor_id;
    h->device_id = ctx->info.device_id;
    h->driver_version = ctx->vk.driver_version;
    memcpy(h->device_uuid, ctx->vk.device_uuid, VK_UUID_SIZE);
    memcpy(h->pipeline_cache_uuid, ctx->vk.pipeline_cache_uuid, VK_UUID_SIZE);
}

/* mkdir -p for the directory part of `path`. */
static bool make_parent_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return true;
}

char *pipeline_cache_file(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    const char *env = getenv("VKATTN_PIPELINE_CACHE");
    if (desc->pipeline_cache_disable || (env && strcmp(env, "0") == 0))
        return NULL;
    char dir[1024];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (desc->pipeline_cache_dir)
        snprintf(dir, sizeof dir, "%s", desc->pipeline_cache_dir);
    else if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/vkattn", xdg);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/vkattn", home);
    else {
        ctx_log(ctx, VKATTN_LOG_DEBUG, "pipeline cache: no XDG_CACHE_HOME or HOME; not persisted");
        return NULL;
    }
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", ctx->vk.device_uuid[i]);
    size_t size = strlen(dir) + 96;
    char *path = malloc(size);
    if (path)
        snprintf(path, size, "%s/%04x-%04x-%08x-%s.cache", dir, ctx->info.vendor_id,
                 ctx->info.device_id, ctx->vk.driver_version, uuid);
    return path;
}

/* Why `data` (size bytes) is not a Vulkan pipeline cache of this device, or NULL. */
static const char *check_vulkan_header(const vkattn_context *ctx, const uint8_t *data, size_t size)
{
    VkPipelineCacheHeaderVersionOne h;
    if (size < sizeof h)
        return "shorter than a Vulkan pipeline cache header";
    memcpy(&h, data, sizeof h);
    if (h.headerSize < sizeof h || h.headerSize > size ||
        h.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return "its Vulkan header is malformed";
    if (h.vendorID != ctx->info.vendor_id || h.deviceID != ctx->info.device_id ||
        memcmp(h.pipelineCacheUUID, ctx->vk.pipeline_cache_uuid, VK_UUID_SIZE) != 0)
        return "its Vulkan header names another device or driver";
    return NULL;
}

void *pipeline_cache_load(vkattn_context *ctx, const char *path, size_t *size)
{
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        ctx_log(ctx, VKATTN_LOG_DEBUG, "pipeline cache %s: none yet", path);
        return NULL;
    }
    cache_header h, want;
    expected_header(ctx, &want);
    uint8_t *data = NULL;
    const char *why = NULL;
    if (fread(&h, sizeof h, 1, f) != 1)
        why = "shorter than its header";
    else if (memcmp(h.magic, CACHE_MAGIC, sizeof h.magic) != 0)
        why = "not a vkattn pipeline cache";
    else if (h.format != want.format || h.vkattn_version != want.vkattn_version)
        why = "written by another vkattn version";
    else if (memcmp(&h, &want, offsetof(cache_header, data_size)) != 0)
        why = "written for another device or driver";
    else if (h.data_size > CACHE_MAX_BYTES)
        why = "its size is absurd";
    else if (!(data = malloc(h.data_size ? h.data_size : 1)))
        why = "out of memory";
    else if (fread(data, 1, h.data_size, f) != h.data_size || fgetc(f) != EOF)
        why = "truncated, or longer than its header says";
    else if (fnv1a(data, h.data_size) != h.checksum)
        why = "its checksum does not match (corrupt)";
    else
        why = check_vulkan_header(ctx, data, h.data_size);
    fclose(f);
    if (why) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "pipeline cache %s ignored: %s", path, why);
        free(data);
        return NULL;
    }
    ctx_log(ctx, VKATTN_LOG_DEBUG, "pipeline cache %s: %llu bytes loaded", path,
            (unsigned long long)h.data_size);
    *size = h.data_size;
    return data;
}

void pipeline_cache_save(vkattn_context *ctx)
{
    vk_state *vk = &ctx->vk;
    if (!vk->pipeline_cache_path || vk->pipeline_count == 0)
        return;
    size_t size = 0;
    if (vk->vkd.GetPipelineCacheData(vk->device, vk->pipeline_cache, &size, NULL) != VK_SUCCESS)
        return;
    if (size == 0 || size == vk->pipeline_cache_loaded) {
        ctx_log(ctx, VKATTN_LOG_DEBUG, "pipeline cache: %zu bytes from the driver, nothing new "
                "to save", size);
        return;
    }
    uint8_t *data = malloc(size);
    if (!data || vk->vkd.GetPipelineCacheData(vk->device, vk->pipeline_cache, &size, data) != VK_SUCCESS) {
        free(data);
        return;
    }
    cache_header h;
    expected_header(ctx, &h);
    h.data_size = size;
    h.checksum = fnv1a(data, size);

    char *tmp = malloc(strlen(vk->pipeline_cache_path) + 16);
    bool ok = tmp != NULL;
    if (ok) {
        sprintf(tmp, "%s.XXXXXX", vk->pipeline_cache_path);
        ok = make_parent_dirs(tmp);
    }
    int fd = ok ? mkstemp(tmp) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    ok = f && fwrite(&h, sizeof h, 1, f) == 1 && fwrite(data, 1, size, f) == size;
    if (f)
        ok = fclose(f) == 0 && ok;
    ok = ok && rename(tmp, vk->pipeline_cache_path) == 0;
    if (!ok) {
        ctx_log(ctx, VKATTN_LOG_WARNING, "pipeline cache %s not saved: %s", vk->pipeline_cache_path,
                strerror(errno));
        if (fd >= 0)
            unlink(tmp);
    }
    free(tmp);
    free(data);
}
