/* The tutorial's Non-RPC example: two contexts with REGISTER_CONCURRENT_RESOURCE_SHARING + DEFER_GRAPH_INIT share
 * one external spill-fill and one VTCM backup buffer in DSP address space (qurt_malloc, npurt's stand-in for the
 * DSP-side malloc: the one line a port changes), registered with both contexts, finalized, executed one after the
 * other and then from two threads at once. Run with NPURT_QNN_USE_CASE=native.
 * usage: qnn_native_concurrent MODEL.bin INPUT.raw OUTPUT.raw */
#include <pthread.h>
#include "qnn_app.h"

typedef struct {
    Qnn_GraphHandle_t graph;
    Qnn_Tensor_t ins[MAX_IO], outs[MAX_IO];
    void *outputs[MAX_IO];
    Qnn_ErrorHandle_t ret;
} Run;

static void *run(void *arg)
{
    Run *r = arg;
    r->ret = app.qnn.graphExecute(r->graph, r->ins, app.n_in, r->outs, app.n_out, NULL, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    app_load();
    int fds_before = count_fds();
    app_open(argv[1]);
    /* Step 1. Create contexts with REGISTER_CONCURRENT_RESOURCE_SHARING and DEFER_GRAPH_INIT */
    QnnHtpContext_CustomConfig_t htpCustomConfig = QNN_HTP_CONTEXT_CUSTOM_CONFIG_INIT;
    htpCustomConfig.option = QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING;
    htpCustomConfig.concurrentGroupRegistration.firstGroupHandle = 0;
    htpCustomConfig.concurrentGroupRegistration.maxSpillFillBuffer = 0;
    QnnContext_Config_t contextCustomConfig = QNN_CONTEXT_CONFIG_INIT;
    contextCustomConfig.option = QNN_CONTEXT_CONFIG_OPTION_CUSTOM;
    contextCustomConfig.customConfig = &htpCustomConfig;
    QnnContext_Config_t contextExtBufferCustomConfig = QNN_CONTEXT_CONFIG_INIT;
    contextExtBufferCustomConfig.option = QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT;
    contextExtBufferCustomConfig.isGraphInitDeferred = 1;
    const QnnContext_Config_t *contextConfig[] = {&contextCustomConfig, &contextExtBufferCustomConfig, NULL};
    Qnn_ContextHandle_t context1 = app_context(contextConfig);
    Qnn_ContextHandle_t context2 = app_context(contextConfig);
    /* Step 2. Retrieve the buffer sizes, for each context */
    uint64_t requiredSpillFillBufferSize = 0, requiredVtcmBackupBufferSize = 0;
    Qnn_ContextHandle_t contexts[2] = {context1, context2};
    for (int c = 0; c < 2; c++) {
        QnnHtpContext_CustomProperty_t spillfillCustomProp = QNN_HTP_CONTEXT_CUSTOM_PROPERTY_INIT;
        spillfillCustomProp.option = QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE;
        QnnContext_Property_t spillfillProperty = {.option = QNN_CONTEXT_PROPERTY_OPTION_CUSTOM,
                                                   .customProperty = &spillfillCustomProp};
        QnnHtpContext_CustomProperty_t vtcmCustomProp = QNN_HTP_CONTEXT_CUSTOM_PROPERTY_INIT;
        vtcmCustomProp.option = QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE;
        QnnContext_Property_t vtcmProperty = {.option = QNN_CONTEXT_PROPERTY_OPTION_CUSTOM,
                                              .customProperty = &vtcmCustomProp};
        QnnContext_Property_t *properties[] = {&spillfillProperty, &vtcmProperty, NULL};
        CHECK_QNN(app.qnn.contextGetProperty(contexts[c], properties));
        if (spillfillCustomProp.spillfillBufferSize > requiredSpillFillBufferSize)
            requiredSpillFillBufferSize = spillfillCustomProp.spillfillBufferSize;
        if (vtcmCustomProp.vtcmBackupBufferSize > requiredVtcmBackupBufferSize)
            requiredVtcmBackupBufferSize = vtcmCustomProp.vtcmBackupBufferSize;
    }
    CHECK(requiredVtcmBackupBufferSize > 0);
    printf("spillfill %llu vtcm backup %llu\n", (unsigned long long)requiredSpillFillBufferSize,
           (unsigned long long)requiredVtcmBackupBufferSize);
    /* Step 3. Allocate external buffers in DSP address space */
    void *spillFillQurtVAPtr = app.qurt_malloc(requiredSpillFillBufferSize);
    QnnHtpMem_QurtAddress_t spillFillQurtVA = (QnnHtpMem_QurtAddress_t)(uintptr_t)spillFillQurtVAPtr;
    void *vtcmBackupQurtVAPtr = app.qurt_malloc(requiredVtcmBackupBufferSize);
    QnnHtpMem_QurtAddress_t vtcmBackupQurtVA = (QnnHtpMem_QurtAddress_t)(uintptr_t)vtcmBackupQurtVAPtr;
    CHECK(vtcmBackupQurtVAPtr != NULL && (uintptr_t)vtcmBackupQurtVAPtr == vtcmBackupQurtVA);
    memset(vtcmBackupQurtVAPtr, 0, requiredVtcmBackupBufferSize);  /* the program can touch DSP memory */
    /* the use case's support table holds: no ION (nor SHARED_BUFFER) registration in Non-RPC */
    void *rpc = app.rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, RPCMEM_DEFAULT_FLAGS, (int)app.in_bytes[0]);
    Qnn_MemDescriptor_t ion = QNN_MEM_DESCRIPTOR_INIT;
    ion.memShape = (Qnn_MemShape_t){app.inputs[0].v1.rank, app.inputs[0].v1.dimensions, NULL};
    ion.dataType = app.inputs[0].v1.dataType;
    ion.memType = QNN_MEM_TYPE_ION;
    ion.ionInfo.fd = app.rpcmem_to_fd(rpc);
    Qnn_MemHandle_t refused = NULL;
    EXPECT_QNN(app.qnn.memRegister(context1, &ion, 1, &refused), QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE);
    CHECK(refused == NULL);
    app.rpcmem_free(rpc);
    /* Step 4. Register the same buffers with both contexts */
    QnnMemHtp_Descriptor_t spillFillHtpDescriptor;
    spillFillHtpDescriptor.type = QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER;
    spillFillHtpDescriptor.size = requiredSpillFillBufferSize;
    spillFillHtpDescriptor.sharedSpillfillBufferQurtAddress = spillFillQurtVA;
    uint32_t dims = 1;
    const Qnn_MemShape_t qnnMemShapeInput = {1, &dims, NULL};
    Qnn_MemDescriptor_t spillFillMemDescriptor = {.memShape = qnnMemShapeInput, .dataType = QNN_DATATYPE_UINT_8,
                                                  .memType = QNN_MEM_TYPE_CUSTOM,
                                                  .customInfo = &spillFillHtpDescriptor};
    QnnMemHtp_Descriptor_t vtcmBackupHtpDescriptor;
    vtcmBackupHtpDescriptor.type = QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER;
    vtcmBackupHtpDescriptor.size = requiredVtcmBackupBufferSize;
    vtcmBackupHtpDescriptor.sharedVTCMBackupBufferQurtAddress = vtcmBackupQurtVA;
    Qnn_MemDescriptor_t vtcmBackupMemDescriptor = {.memShape = qnnMemShapeInput, .dataType = QNN_DATATYPE_UINT_8,
                                                   .memType = QNN_MEM_TYPE_CUSTOM,
                                                   .customInfo = &vtcmBackupHtpDescriptor};
    Qnn_MemDescriptor_t memDescriptors[2] = {spillFillMemDescriptor, vtcmBackupMemDescriptor};
    Qnn_MemHandle_t memHandles1[2] = {NULL, NULL}, memHandles2[2] = {NULL, NULL};
    CHECK_QNN(app.qnn.memRegister(context1, memDescriptors, 2, memHandles1));
    CHECK_QNN(app.qnn.memRegister(context2, memDescriptors, 2, memHandles2));
    CHECK(memHandles1[0] && memHandles1[1] && memHandles2[0] && memHandles2[1]);
    /* Step 5. Finalize contexts */
    CHECK_QNN(app.qnn.contextFinalize(context1, NULL));
    CHECK_QNN(app.qnn.contextFinalize(context2, NULL));
    size_t input_size;
    void *input = read_file(argv[2], &input_size);
    Run runs[2];
    for (int c = 0; c < 2; c++) {
        runs[c].graph = app_graph(contexts[c]);
        app_raw_io(runs[c].ins, runs[c].outs, input, runs[c].outputs);
    }
    /* Execute: one after the other (the VTCM passes from context1 to context2: its image goes to the backup) */
    run(&runs[0]);
    CHECK_QNN(runs[0].ret);
    run(&runs[1]);
    CHECK_QNN(runs[1].ret);
    uint64_t backed_up = 0;
    for (uint64_t k = 0; k < requiredVtcmBackupBufferSize; k++)
        backed_up += ((uint8_t *)vtcmBackupQurtVAPtr)[k] != 0;
    CHECK(backed_up > 0);
    /* then both at once: concurrent sharing allows it */
    pthread_t threads[2];
    for (int c = 0; c < 2; c++) CHECK(pthread_create(&threads[c], NULL, run, &runs[c]) == 0);
    for (int c = 0; c < 2; c++) CHECK(pthread_join(threads[c], NULL) == 0);
    CHECK_QNN(runs[0].ret);
    CHECK_QNN(runs[1].ret);
    for (uint32_t k = 0; k < app.n_out; k++)               /* both contexts computed the same */
        CHECK(memcmp(runs[0].outputs[k], runs[1].outputs[k], app.out_bytes[k]) == 0);
    FILE *f = fopen(argv[3], "wb");
    CHECK(f != NULL);
    for (uint32_t k = 0; k < app.n_out; k++)
        CHECK(fwrite(runs[0].outputs[k], 1, app.out_bytes[k], f) == app.out_bytes[k]);
    fclose(f);
    /* Free contexts (the buffers are deregistered automatically), then the DSP buffers */
    CHECK_QNN(app.qnn.contextFree(context1, NULL));
    CHECK_QNN(app.qnn.contextFree(context2, NULL));
    app.qurt_free(spillFillQurtVAPtr);
    app.qurt_free(vtcmBackupQurtVAPtr);
    for (int c = 0; c < 2; c++)
        for (uint32_t k = 0; k < app.n_out; k++) free(runs[c].outputs[k]);
    app_close();
    free(input);
    CHECK(count_fds() == fds_before);
    printf("qnn_native_concurrent ok\n");
    return 0;
}
