/* Runs the fuzz target over files given on the command line, without libFuzzer:
 * ctest replays the committed corpus (seeds and past findings) on every build. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", argv[i]);
            return 1;
        }
        uint8_t *data = NULL;
        size_t size = 0, capacity = 0, n;
        do {
            if (size == capacity) {
                capacity = capacity ? 2 * capacity : 4096;
                uint8_t *grown = realloc(data, capacity);
                if (!grown) {
                    free(data);
                    fclose(f);
                    return 1;
                }
                data = grown;
            }
            n = fread(data + size, 1, capacity - size, f);
            size += n;
        } while (n > 0);
        fclose(f);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
    }
    printf("replayed %d inputs\n", argc - 1);
    return 0;
}
