/* The tutorial's FastRPC example: external weights and spill-fill buffers. DEFER_GRAPH_INIT context, sizes and
 * start alignment from contextGetProperty, rpcmem buffers registered as WEIGHTS_BUFFER and SHARED_SPILLFILL_BUFFER
 * (unconditionally, as the tutorial does: a 0-byte spill-fill buffer where none is needed), contextFinalize copies
 * the weights in, graphRetrieve, graphExecute, contextFree deregisters them.
 * usage: qnn_fastrpc_external MODEL.bin INPUT.raw OUTPUT.raw */
#include "qnn_app.h"

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    app_load();
    int fds_before = count_fds();
    app_open(argv[1]);
    /* Step 1. Create context using DEFER_GRAPH_INIT config option */
    QnnContext_Config_t contextConfig = QNN_CONTEXT_CONFIG_INIT;
    contextConfig.option = QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT;
    contextConfig.isGraphInitDeferred = 1;
    const QnnContext_Config_t *pContextConfig[] = {&contextConfig, NULL};
    Qnn_ContextHandle_t context = app_context(pContextConfig);
    Qnn_GraphHandle_t early = NULL;                       /* not deserialised yet */
    EXPECT_QNN(app.qnn.graphRetrieve(context, app.graph_name, &early), QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED);
    /* Step 2. Retrieve context properties */
    uint64_t weightsBufferSize = app_property(context, QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE);
    uint64_t spillfillBufferSize = app_property(context, QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE);
    uint64_t bufferStartAlignmentBytes = app_property(context, QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT);
    CHECK(weightsBufferSize > 0 && bufferStartAlignmentBytes == 4096);
    printf("weights %llu spillfill %llu alignment %llu\n", (unsigned long long)weightsBufferSize,
           (unsigned long long)spillfillBufferSize, (unsigned long long)bufferStartAlignmentBytes);
    /* Step 3. Allocate external buffers */
    uint8_t *weightsBufferPointer = NULL, *spillfillBufferPointer = NULL;
    int weightsBufferMemFd = -1, spillfillBufferMemFd = -1;
    if (weightsBufferSize > 0) {
        weightsBufferPointer = (uint8_t *)app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS,
                                                           (int)weightsBufferSize);
        CHECK(weightsBufferPointer != NULL);
        weightsBufferMemFd = app.rpcmem_to_fd(weightsBufferPointer);
        CHECK(weightsBufferMemFd != -1);
        CHECK((uintptr_t)weightsBufferPointer % bufferStartAlignmentBytes == 0);
    }
    if (spillfillBufferSize > 0) {
        spillfillBufferPointer = (uint8_t *)app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS,
                                                             (int)spillfillBufferSize);
        CHECK(spillfillBufferPointer != NULL);
        spillfillBufferMemFd = app.rpcmem_to_fd(spillfillBufferPointer);
        CHECK(spillfillBufferMemFd != -1);
    }
    /* Step 4. Register external buffers with QNN */
    Qnn_MemHandle_t weightsMemHandle = NULL, spillfillMemHandle = NULL;
    Qnn_MemDescriptor_t memDescriptor = QNN_MEM_DESCRIPTOR_INIT;
    memDescriptor.memType = QNN_MEM_TYPE_CUSTOM;
    QnnMemHtp_Descriptor_t weightsHtpMemDescriptor;
    weightsHtpMemDescriptor.type = QNN_HTP_MEM_WEIGHTS_BUFFER;
    weightsHtpMemDescriptor.size = weightsBufferSize;
    QnnHtpMem_SharedBufferConfig_t weightsSharedBuffConfig = {weightsBufferMemFd, 0};
    weightsHtpMemDescriptor.weightsBufferConfig = weightsSharedBuffConfig;
    memDescriptor.customInfo = &weightsHtpMemDescriptor;
    CHECK_QNN(app.qnn.memRegister(context, &memDescriptor, 1u, &weightsMemHandle));
    QnnMemHtp_Descriptor_t spillfillHtpMemDescriptor;
    spillfillHtpMemDescriptor.type = QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER;
    spillfillHtpMemDescriptor.size = spillfillBufferSize;
    QnnHtpMem_SharedBufferConfig_t spillfillSharedBuffConfig = {spillfillBufferMemFd, 0};
    spillfillHtpMemDescriptor.spillfillBufferConfig = spillfillSharedBuffConfig;
    memDescriptor.customInfo = &spillfillHtpMemDescriptor;
    CHECK_QNN(app.qnn.memRegister(context, &memDescriptor, 1u, &spillfillMemHandle));
    CHECK(weightsMemHandle != NULL && spillfillMemHandle != NULL);
    for (uint64_t k = 0; k < weightsBufferSize; k++)      /* empty until finalize */
        CHECK(weightsBufferPointer[k] == 0);
    /* Step 5. Finalize context: the weights are copied into the external weights buffer */
    CHECK_QNN(app.qnn.contextFinalize(context, NULL));
    uint64_t nonzero = 0;
    for (uint64_t k = 0; k < weightsBufferSize; k++)
        nonzero += weightsBufferPointer[k] != 0;
    CHECK(nonzero > 0);
    /* after finalize the buffers are in use: they cannot be deregistered */
    EXPECT_QNN(app.qnn.memDeRegister(&weightsMemHandle, 1), QNN_MEM_ERROR_INVALID_ARGUMENT);
    Qnn_GraphHandle_t graph = app_graph(context);
    /* Execute graphs (RAW I/O: the point here is weights and spill-fill) */
    size_t input_size;
    void *input = read_file(argv[2], &input_size);
    Qnn_Tensor_t ins[MAX_IO], outs[MAX_IO];
    void *outputs[MAX_IO];
    app_raw_io(ins, outs, input, outputs);
    CHECK_QNN(app.qnn.graphExecute(graph, ins, app.n_in, outs, app.n_out, NULL, NULL));
    if (spillfillBufferSize > 0) {                        /* the spilled activations went through it */
        uint64_t used = 0;
        for (uint64_t k = 0; k < spillfillBufferSize; k++)
            used += spillfillBufferPointer[k] != 0;
        CHECK(used > 0);
    }
    FILE *f = fopen(argv[3], "wb");
    CHECK(f != NULL);
    for (uint32_t k = 0; k < app.n_out; k++) {
        CHECK(fwrite(outputs[k], 1, app.out_bytes[k], f) == app.out_bytes[k]);
        free(outputs[k]);
    }
    fclose(f);
    /* Free context (the buffers are deregistered automatically), then the DMA buffers */
    CHECK_QNN(app.qnn.contextFree(context, NULL));
    EXPECT_QNN(app.qnn.memDeRegister(&spillfillMemHandle, 1), QNN_MEM_ERROR_INVALID_HANDLE);
    app.rpcmem_free(weightsBufferPointer);
    app.rpcmem_free(spillfillBufferPointer);
    app_close();
    free(input);
    CHECK(count_fds() == fds_before);
    printf("qnn_fastrpc_external ok\n");
    return 0;
}
