/* Helpers shared by npurt's C tests: checks that print what failed, file I/O for inputs and outputs. */
#ifndef NPURT_TEST_COMMON_H
#define NPURT_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "CHECK failed %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CHECK_RET(expr, want)                                                              \
    do {                                                                                   \
        int got_ = (expr);                                                                 \
        if (got_ != (want)) {                                                              \
            fprintf(stderr, "CHECK failed %s:%d: %s returned %d, expected %d\n", __FILE__, \
                    __LINE__, #expr, got_, (int)(want));                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static inline void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? n : 1);
    CHECK(fread(buf, 1, n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static inline void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, size, f) == size);
    fclose(f);
}

#endif
