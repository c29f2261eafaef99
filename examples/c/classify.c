/* classify: a zero-copy image classifier against the RKNN C API (npurt's librknnrt.so on x86, the vendor's on a
 * board). The uint8 RGB image is written straight into the NPU input buffer in NHWC at the row stride the runtime
 * asks for (w_stride), the output is read as float from its buffer, and the top 5 classes are printed.
 *
 *   make PREFIX=../../build/capi && ./classify model.npurt image.ppm
 *
 * The model takes uint8 images (mean/std fused at conversion, e.g. `npurt convert m.onnx --mean 127.5,127.5,127.5
 * --std 127.5,127.5,127.5 -o m.npurt`); the image is a binary PPM (P6) of the model's input size. docs/c-api.md
 * ("A model and an image") makes both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rknn_api.h"

static unsigned char *read_ppm(const char *path, int *w, int *h)
{
    FILE *f = fopen(path, "rb");
    int maxval;
    if (!f || fscanf(f, "P6 %d %d %d", w, h, &maxval) != 3 || maxval != 255 || fgetc(f) == EOF) {
        fprintf(stderr, "%s: not a binary PPM (P6, maxval 255)\n", path);
        exit(1);
    }
    size_t n = (size_t)*w * *h * 3;
    unsigned char *rgb = malloc(n);
    if (fread(rgb, 1, n, f) != n) {
        fprintf(stderr, "%s: truncated\n", path);
        exit(1);
    }
    fclose(f);
    return rgb;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s model image.ppm\n", argv[0]);
        return 2;
    }
    rknn_context ctx;
    int ret = rknn_init(&ctx, argv[1], 0, 0, NULL);
    if (ret != RKNN_SUCC) {
        fprintf(stderr, "rknn_init failed: %d\n", ret);
        return 1;
    }

    /* input: the native attr, fed as uint8 NHWC (normalisation and quantisation happen on the NPU) */
    rknn_tensor_attr in_attr;
    memset(&in_attr, 0, sizeof(in_attr));
    in_attr.index = 0;
    rknn_query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, &in_attr, sizeof(in_attr));
    in_attr.type = RKNN_TENSOR_UINT8;
    in_attr.fmt = RKNN_TENSOR_NHWC;
    int height = in_attr.dims[1], width = in_attr.dims[2], channels = in_attr.dims[3];
    int w, h;
    unsigned char *rgb = read_ppm(argv[2], &w, &h);
    if (w != width || h != height || channels != 3) {
        fprintf(stderr, "the model takes %dx%dx%d images, %s is %dx%dx3\n", width, height, channels, argv[2], w, h);
        return 1;
    }
    rknn_tensor_mem *in_mem = rknn_create_mem(ctx, in_attr.size_with_stride);
    int stride = in_attr.w_stride ? (int)in_attr.w_stride : width;
    unsigned char *dst = (unsigned char *)in_mem->virt_addr + in_mem->offset;
    for (int y = 0; y < height; y++)
        memcpy(dst + (size_t)y * stride * channels, rgb + (size_t)y * width * channels, (size_t)width * channels);
    rknn_set_io_mem(ctx, in_mem, &in_attr);

    /* output: float32 in its logical layout */
    rknn_tensor_attr out_attr;
    memset(&out_attr, 0, sizeof(out_attr));
    out_attr.index = 0;
    rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &out_attr, sizeof(out_attr));
    out_attr.type = RKNN_TENSOR_FLOAT32;
    rknn_tensor_mem *out_mem = rknn_create_mem(ctx, out_attr.n_elems * sizeof(float));
    rknn_set_io_mem(ctx, out_mem, &out_attr);

    ret = rknn_run(ctx, NULL);
    if (ret != RKNN_SUCC) {
        fprintf(stderr, "rknn_run failed: %d\n", ret);
        return 1;
    }
    const float *scores = out_mem->virt_addr;
    printf("input %dx%d, w_stride %d; top 5 of %u classes:\n", width, height, stride, out_attr.n_elems);
    int taken[5] = {-1, -1, -1, -1, -1};
    for (int k = 0; k < 5 && k < (int)out_attr.n_elems; k++) {
        int best = -1;
        for (int i = 0; i < (int)out_attr.n_elems; i++) {
            int used = 0;
            for (int j = 0; j < k; j++)
                used |= taken[j] == i;
            if (!used && (best < 0 || scores[i] > scores[best]))
                best = i;
        }
        taken[k] = best;
        printf("  %d: class %d  %.6f\n", k + 1, best, scores[best]);
    }
    rknn_destroy_mem(ctx, in_mem);
    rknn_destroy_mem(ctx, out_mem);
    rknn_destroy(ctx);
    free(rgb);
    return 0;
}
