/* onnxruntime's QNN EP with its HTP shared-memory allocator, driven through onnxruntime's C API (the Python API of
 * onnxruntime 1.32 cannot create that allocator): an EPContext model over an npurt binary, input and output tensors
 * allocated by the EP's HtpSharedMemoryAllocator (rpcmem), one run, the output written out. Usage:
 *   qnn_ort_shared LIBONNXRUNTIME EP_LIBRARY BACKEND MODEL INPUT.f32 OUTPUT.f32 N,C,H,W N,C,H,W
 * onnxruntime's C API is reached through its function table by index (OrtApi is append-only; the indices are those of
 * the public onnxruntime_c_api.h, API version 24). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *Status;                       /* OrtStatus* (NULL: success) */
typedef struct {
    const void **(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} ApiBase;

#define API_VERSION 24
enum {                                      /* OrtApi member indices */
    GET_ERROR_MESSAGE = 2, CREATE_ENV = 3, CREATE_SESSION = 7, RUN = 9, CREATE_SESSION_OPTIONS = 10,
    CREATE_TENSOR_AS_ORT_VALUE = 48, GET_TENSOR_MUTABLE_DATA = 51, RELEASE_ENV = 92, RELEASE_STATUS = 93,
    RELEASE_SESSION = 95, RELEASE_VALUE = 96, RELEASE_SESSION_OPTIONS = 100, ADD_SESSION_CONFIG_ENTRY = 130,
    CREATE_ALLOCATOR = 131, RELEASE_ALLOCATOR = 132, REGISTER_EP_LIBRARY = 301, GET_EP_DEVICES = 303,
    APPEND_EP_V2 = 304, EP_DEVICE_EP_NAME = 312, EP_DEVICE_MEMORY_INFO = 374
};
#define HOST_ACCESSIBLE 5                   /* OrtDeviceMemoryType_HOST_ACCESSIBLE */
#define FLOAT 1                             /* ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT */

static const void **api;
#define FN(index, type) ((type)api[index])

static void check(Status s, const char *what)
{
    if (s) {
        fprintf(stderr, "FAIL %s: %s\n", what, FN(GET_ERROR_MESSAGE, const char *(*)(Status))(s));
        exit(1);
    }
    printf("ok %s\n", what);
    fflush(stdout);
}

static int parse_shape(const char *text, int64_t shape[4])
{
    return sscanf(text, "%ld,%ld,%ld,%ld", &shape[0], &shape[1], &shape[2], &shape[3]) == 4;
}

int main(int argc, char **argv)
{
    int64_t in_shape[4], out_shape[4];
    if (argc != 9 || !parse_shape(argv[7], in_shape) || !parse_shape(argv[8], out_shape)) {
        fprintf(stderr, "usage: %s LIBONNXRUNTIME EP BACKEND MODEL IN OUT N,C,H,W N,C,H,W\n", argv[0]);
        return 2;
    }
    void *ort = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!ort) { fprintf(stderr, "FAIL dlopen: %s\n", dlerror()); return 1; }
    const ApiBase *(*get_base)(void) = (const ApiBase *(*)(void))dlsym(ort, "OrtGetApiBase");
    api = get_base()->GetApi(API_VERSION);
    if (!api) { fprintf(stderr, "FAIL GetApi(%d)\n", API_VERSION); return 1; }

    void *env = NULL, *opts = NULL, *session = NULL, *alloc = NULL, *x = NULL, *y = NULL;
    check(FN(CREATE_ENV, Status (*)(int, const char *, void **))(3, "npurt", &env), "CreateEnv");
    check(FN(REGISTER_EP_LIBRARY, Status (*)(void *, const char *, const char *))(env, "QNNExecutionProvider",
                                                                                 argv[2]), "RegisterEpLibrary");
    const void *const *devices = NULL;
    size_t n_devices = 0, i;
    check(FN(GET_EP_DEVICES, Status (*)(void *, const void *const **, size_t *))(env, &devices, &n_devices),
          "GetEpDevices");
    const void *qnn = NULL;
    for (i = 0; i < n_devices; i++)
        if (!strcmp(FN(EP_DEVICE_EP_NAME, const char *(*)(const void *))(devices[i]), "QNNExecutionProvider"))
            qnn = devices[i];
    if (!qnn) { fprintf(stderr, "FAIL no QNN EP device\n"); return 1; }

    check(FN(CREATE_SESSION_OPTIONS, Status (*)(void **))(&opts), "CreateSessionOptions");
    check(FN(ADD_SESSION_CONFIG_ENTRY, Status (*)(void *, const char *, const char *))(
              opts, "session.disable_cpu_ep_fallback", "1"), "AddSessionConfigEntry");
    const char *keys[] = {"backend_path", "enable_htp_shared_memory_allocator"};
    const char *values[] = {argv[3], "1"};
    check(FN(APPEND_EP_V2, Status (*)(void *, void *, const void *const *, size_t, const char *const *,
                                      const char *const *, size_t))(opts, env, &qnn, 1, keys, values, 2),
          "AppendExecutionProvider_V2");
    check(FN(CREATE_SESSION, Status (*)(void *, const char *, void *, void **))(env, argv[4], opts, &session),
          "CreateSession");
    /* the session's allocator for the EP device's HOST_ACCESSIBLE memory ("QnnHtpShared"): the EP's
     * HtpSharedMemoryAllocator (the EP's factory creates no environment-wide shared allocator in this version) */
    const void *shared = FN(EP_DEVICE_MEMORY_INFO, const void *(*)(const void *, int))(qnn, HOST_ACCESSIBLE);
    if (!shared) { fprintf(stderr, "FAIL no HOST_ACCESSIBLE memory info\n"); return 1; }
    check(FN(CREATE_ALLOCATOR, Status (*)(void *, const void *, void **))(session, shared, &alloc),
          "CreateAllocator(session, QnnHtpShared)");
    check(FN(CREATE_TENSOR_AS_ORT_VALUE, Status (*)(void *, const int64_t *, size_t, int, void **))(
              alloc, in_shape, 4, FLOAT, &x), "CreateTensor(input, shared)");
    check(FN(CREATE_TENSOR_AS_ORT_VALUE, Status (*)(void *, const int64_t *, size_t, int, void **))(
              alloc, out_shape, 4, FLOAT, &y), "CreateTensor(output, shared)");
    float *xd = NULL, *yd = NULL;
    check(FN(GET_TENSOR_MUTABLE_DATA, Status (*)(void *, void **))(x, (void **)&xd), "GetTensorMutableData(in)");
    check(FN(GET_TENSOR_MUTABLE_DATA, Status (*)(void *, void **))(y, (void **)&yd), "GetTensorMutableData(out)");
    size_t n_in = (size_t)(in_shape[0] * in_shape[1] * in_shape[2] * in_shape[3]);
    size_t n_out = (size_t)(out_shape[0] * out_shape[1] * out_shape[2] * out_shape[3]);
    FILE *f = fopen(argv[5], "rb");
    if (!f || fread(xd, sizeof(float), n_in, f) != n_in) { fprintf(stderr, "FAIL reading %s\n", argv[5]); return 1; }
    fclose(f);
    printf("input at %p, output at %p\n", (void *)xd, (void *)yd);

    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    const void *inputs[] = {x};
    void *outputs[] = {y};
    check(FN(RUN, Status (*)(void *, const void *, const char *const *, const void *const *, size_t,
                             const char *const *, size_t, void **))(session, NULL, in_names, inputs, 1, out_names, 1,
                                                                     outputs), "Run");
    f = fopen(argv[6], "wb");
    if (!f || fwrite(yd, sizeof(float), n_out, f) != n_out) { fprintf(stderr, "FAIL writing %s\n", argv[6]); return 1; }
    fclose(f);

    FN(RELEASE_VALUE, void (*)(void *))(x);          /* frees the rpcmem buffers: memDeRegister first */
    FN(RELEASE_VALUE, void (*)(void *))(y);
    FN(RELEASE_ALLOCATOR, void (*)(void *))(alloc);
    FN(RELEASE_SESSION, void (*)(void *))(session);
    FN(RELEASE_SESSION_OPTIONS, void (*)(void *))(opts);
    FN(RELEASE_ENV, void (*)(void *))(env);
    printf("done\n");
    return 0;
}
