/* Preloaded into the sanitizer run of the tests (tests/CMakeLists.txt): makes
 * dlclose a no-op, so the Vulkan driver and layers the loader unloads at
 * vkDestroyInstance stay mapped until exit and LeakSanitizer can name the module
 * of every stack it reports (else their frames read "<unknown module>" and could
 * be neither told apart from vkattn's nor suppressed by name). */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
