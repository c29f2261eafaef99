/* The tutorial's QNN_MEM_TYPE_ION example as a whole program: one rpcmem buffer, fd and memory handle per tensor
 * (inputs and outputs), graphExecute on the registered memory, deregister and free.
 * usage: qnn_ion MODEL.bin INPUT.raw OUTPUT.raw  (raw bytes in the graph's own tensor format) */
#include "qnn_app.h"

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    app_load();
    int fds_before = count_fds();
    app_open(argv[1]);
    Qnn_ContextHandle_t context = app_context(NULL);
    Qnn_GraphHandle_t graph = app_graph(context);
    size_t input_size;
    uint8_t *input = read_file(argv[2], &input_size);

    Qnn_Tensor_t inputs[MAX_IO], outputs[MAX_IO];
    uint8_t *in_ptr[MAX_IO], *out_ptr[MAX_IO];
    size_t off = 0;
    for (uint32_t k = 0; k < app.n_in + app.n_out; k++) {
        int is_in = k < app.n_in;
        Qnn_Tensor_t *tensor = is_in ? &inputs[k] : &outputs[k - app.n_in];
        *tensor = is_in ? app.inputs[k] : app.outputs[k - app.n_in];
        size_t bufSize = is_in ? app.in_bytes[k] : app.out_bytes[k - app.n_in];
        uint8_t *memPointer = (uint8_t *)app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)bufSize);
        CHECK(memPointer != NULL);
        int memFd = app.rpcmem_to_fd(memPointer);
        CHECK(memFd != -1);
        Qnn_MemDescriptor_t memDescriptor = QNN_MEM_DESCRIPTOR_INIT;
        memDescriptor.memShape = (Qnn_MemShape_t){tensor->v1.rank, tensor->v1.dimensions, NULL};
        memDescriptor.dataType = tensor->v1.dataType;
        memDescriptor.memType = QNN_MEM_TYPE_ION;
        memDescriptor.ionInfo.fd = memFd;
        tensor->v1.memType = QNN_TENSORMEMTYPE_MEMHANDLE;
        tensor->v1.memHandle = NULL;
        CHECK_QNN(app.qnn.memRegister(context, &memDescriptor, 1u, &(tensor->v1.memHandle)));
        CHECK(tensor->v1.memHandle != NULL);
        if (is_in) {
            in_ptr[k] = memPointer;
            CHECK(off + bufSize <= input_size);
            memcpy(memPointer, input + off, bufSize);      /* "Load the input data to memPointer" */
            off += bufSize;
        } else {
            out_ptr[k - app.n_in] = memPointer;
        }
    }
    CHECK_QNN(app.qnn.graphExecute(graph, inputs, app.n_in, outputs, app.n_out, NULL, NULL));
    FILE *f = fopen(argv[3], "wb");
    CHECK(f != NULL);
    for (uint32_t k = 0; k < app.n_out; k++)
        CHECK(fwrite(out_ptr[k], 1, app.out_bytes[k], f) == app.out_bytes[k]);
    fclose(f);

    for (uint32_t k = 0; k < app.n_in; k++) {
        CHECK_QNN(app.qnn.memDeRegister(&inputs[k].v1.memHandle, 1));
        app.rpcmem_free(in_ptr[k]);
    }
    for (uint32_t k = 0; k < app.n_out; k++) {
        CHECK_QNN(app.qnn.memDeRegister(&outputs[k].v1.memHandle, 1));
        app.rpcmem_free(out_ptr[k]);
    }
    CHECK_QNN(app.qnn.contextFree(context, NULL));
    app_close();
    free(input);
    CHECK(count_fds() == fds_before);
    printf("qnn_ion ok\n");
    return 0;
}
