/* vkattn: attention on any Vulkan GPU, from .npy files. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: vkattn <command> [options]\n"
    "\n"
    "commands:\n"
    "  devices     list the Vulkan devices vkattn can use\n"
    "  attention   scaled dot-product attention: Q, K, V .npy files -> O .npy\n"
    "  mha         the multi-head attention layer: X and weights .npy files -> Y .npy\n"
    "\n"
    "vkattn <command> --help describes each. vkattn --version prints the version.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *command = argv[1];
    if (!strcmp(command, "--help") || !strcmp(command, "-h") || !strcmp(command, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(command, "--version")) {
        printf("vkattn %s\n", vkattn_version_string());
        return 0;
    }
    if (!strcmp(command, "devices"))
        return run_devices(argc - 1, argv + 1);
    if (!strcmp(command, "attention"))
        return run_attention(argc - 1, argv + 1);
    if (!strcmp(command, "mha"))
        return run_mha(argc - 1, argv + 1);
    fprintf(stderr, "vkattn: unknown command '%s' (devices, attention or mha; see vkattn --help)\n",
            command);
    return EXIT_USAGE;
}
