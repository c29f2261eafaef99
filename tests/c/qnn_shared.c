/* The tutorial's QNN_HTP_MEM_SHARED_BUFFER example as a whole program: one rpcmem buffer and one fd for every
 * I/O tensor, one memory handle per tensor offset (size = the whole buffer).
 * usage: qnn_shared MODEL.bin INPUT.raw OUTPUT.raw */
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

    uint32_t numTensors = app.n_in + app.n_out;
    Qnn_Tensor_t tensors[2 * MAX_IO];
    size_t sizes[2 * MAX_IO];
    uint64_t totalBufferSize = 0;                        /* "Calculate the shared buffer size" */
    for (uint32_t k = 0; k < numTensors; k++) {
        tensors[k] = k < app.n_in ? app.inputs[k] : app.outputs[k - app.n_in];
        sizes[k] = k < app.n_in ? app.in_bytes[k] : app.out_bytes[k - app.n_in];
        totalBufferSize += sizes[k];
    }
    uint8_t *memPointer = (uint8_t *)app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS,
                                                      (int)totalBufferSize);
    CHECK(memPointer != NULL);
    int memFd = app.rpcmem_to_fd(memPointer);
    CHECK(memFd != -1);
    uint64_t offset = 0, offsets[2 * MAX_IO];
    for (uint32_t k = 0; k < numTensors; k++) {
        Qnn_MemDescriptor_t memDescriptor = QNN_MEM_DESCRIPTOR_INIT;
        memDescriptor.memShape = (Qnn_MemShape_t){tensors[k].v1.rank, tensors[k].v1.dimensions, NULL};
        memDescriptor.dataType = tensors[k].v1.dataType;
        memDescriptor.memType = QNN_MEM_TYPE_CUSTOM;
        tensors[k].v1.memType = QNN_TENSORMEMTYPE_MEMHANDLE;
        tensors[k].v1.memHandle = NULL;
        QnnMemHtp_Descriptor_t htpMemDescriptor;
        htpMemDescriptor.type = QNN_HTP_MEM_SHARED_BUFFER;
        htpMemDescriptor.size = totalBufferSize;          /* the total buffer size */
        QnnHtpMem_SharedBufferConfig_t htpSharedBuffConfig = {memFd, offset};
        htpMemDescriptor.sharedBufferConfig = htpSharedBuffConfig;
        memDescriptor.customInfo = &htpMemDescriptor;
        CHECK_QNN(app.qnn.memRegister(context, &memDescriptor, 1u, &(tensors[k].v1.memHandle)));
        offsets[k] = offset;
        offset += sizes[k];
    }
    for (uint32_t k = 1; k < numTensors; k++)             /* one fd, one handle per offset */
        CHECK(tensors[k].v1.memHandle != tensors[0].v1.memHandle);
    size_t in_off = 0;
    for (uint32_t k = 0; k < app.n_in; k++) {
        memcpy(memPointer + offsets[k], input + in_off, sizes[k]);
        in_off += sizes[k];
    }
    CHECK(in_off == input_size);
    CHECK_QNN(app.qnn.graphExecute(graph, tensors, app.n_in, tensors + app.n_in, app.n_out, NULL, NULL));
    FILE *f = fopen(argv[3], "wb");
    CHECK(f != NULL);
    for (uint32_t k = app.n_in; k < numTensors; k++)
        CHECK(fwrite(memPointer + offsets[k], 1, sizes[k], f) == sizes[k]);
    fclose(f);
    for (uint32_t k = 0; k < numTensors; k++)
        CHECK_QNN(app.qnn.memDeRegister(&(tensors[k].v1.memHandle), 1));
    app.rpcmem_free(memPointer);
    CHECK_QNN(app.qnn.contextFree(context, NULL));
    app_close();
    free(input);
    CHECK(count_fds() == fds_before);
    printf("qnn_shared ok\n");
    return 0;
}
