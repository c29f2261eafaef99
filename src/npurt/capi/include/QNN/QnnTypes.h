/* npurt's QnnTypes.h: versions, data types, quantization and tensors (x86-64 layouts: Qnn_QuantizeParams_t 40 B,
 * Qnn_TensorV1_t 112 B, Qnn_Tensor_t 144 B). */
#ifndef NPURT_QNN_TYPES_H
#define NPURT_QNN_TYPES_H

#include "QnnCommon.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t major;
    uint32_t minor;
    uint32_t patch;
} Qnn_Version_t;
#define QNN_VERSION_INIT {0u, 0u, 0u}

typedef struct {
    Qnn_Version_t coreApiVersion;
    Qnn_Version_t backendApiVersion;
} Qnn_ApiVersion_t;
#define QNN_API_VERSION_INIT {QNN_VERSION_INIT, QNN_VERSION_INIT}

typedef uint64_t Qnn_ContextBinarySize_t;

typedef enum {
    QNN_DATATYPE_INT_8 = 0x0008,
    QNN_DATATYPE_INT_16 = 0x0016,
    QNN_DATATYPE_INT_32 = 0x0032,
    QNN_DATATYPE_INT_64 = 0x0064,
    QNN_DATATYPE_UINT_8 = 0x0108,
    QNN_DATATYPE_UINT_16 = 0x0116,
    QNN_DATATYPE_UINT_32 = 0x0132,
    QNN_DATATYPE_UINT_64 = 0x0164,
    QNN_DATATYPE_FLOAT_16 = 0x0216,
    QNN_DATATYPE_BFLOAT_16 = 0x0226,
    QNN_DATATYPE_FLOAT_32 = 0x0232,
    QNN_DATATYPE_FLOAT_64 = 0x0264,
    QNN_DATATYPE_SFIXED_POINT_4 = 0x0304,
    QNN_DATATYPE_SFIXED_POINT_8 = 0x0308,
    QNN_DATATYPE_SFIXED_POINT_16 = 0x0316,
    QNN_DATATYPE_SFIXED_POINT_32 = 0x0332,
    QNN_DATATYPE_UFIXED_POINT_4 = 0x0404,
    QNN_DATATYPE_UFIXED_POINT_8 = 0x0408,
    QNN_DATATYPE_UFIXED_POINT_16 = 0x0416,
    QNN_DATATYPE_UFIXED_POINT_32 = 0x0432,
    QNN_DATATYPE_BOOL_8 = 0x0508,
    QNN_DATATYPE_STRING = 0x0608,
    QNN_DATATYPE_UNDEFINED = 0x7FFFFFFF
} Qnn_DataType_t;

typedef enum {
    QNN_PRIORITY_LOW = 0,
    QNN_PRIORITY_NORMAL = 100,
    QNN_PRIORITY_DEFAULT = QNN_PRIORITY_NORMAL,
    QNN_PRIORITY_NORMAL_HIGH = 150,
    QNN_PRIORITY_HIGH = 200,
    QNN_PRIORITY_UNDEFINED = 0x7FFFFFFF
} Qnn_Priority_t;

typedef enum {
    QNN_TENSOR_TYPE_APP_WRITE = 0,
    QNN_TENSOR_TYPE_APP_READ = 1,
    QNN_TENSOR_TYPE_APP_READWRITE = 2,
    QNN_TENSOR_TYPE_NATIVE = 3,
    QNN_TENSOR_TYPE_STATIC = 4,
    QNN_TENSOR_TYPE_NULL = 5,
    QNN_TENSOR_TYPE_UPDATEABLE_STATIC = 6,
    QNN_TENSOR_TYPE_UPDATEABLE_NATIVE = 7,
    QNN_TENSOR_TYPE_UPDATEABLE_APP_WRITE = 8,
    QNN_TENSOR_TYPE_UPDATEABLE_APP_READ = 9,
    QNN_TENSOR_TYPE_UPDATEABLE_APP_READWRITE = 10,
    QNN_TENSOR_TYPE_OPTIONAL_APP_WRITE = 11,
    QNN_TENSOR_TYPE_OPTIONAL_APP_READ = 12,
    QNN_TENSOR_TYPE_OPTIONAL_APP_READWRITE = 13,
    QNN_TENSOR_TYPE_UNDEFINED = 0x7FFFFFFF
} Qnn_TensorType_t;

typedef uint32_t Qnn_TensorDataFormat_t;
#define QNN_TENSOR_DATA_FORMAT_DENSE 0
#define QNN_TENSOR_DATA_FORMAT_FLAT_BUFFER 0

typedef enum {
    QNN_DEFINITION_IMPL_GENERATED = 0,
    QNN_DEFINITION_DEFINED = 1,
    QNN_DEFINITION_UNDEFINED = 0x7FFFFFFF
} Qnn_Definition_t;

typedef enum {
    QNN_QUANTIZATION_ENCODING_SCALE_OFFSET = 0,
    QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET = 1,
    QNN_QUANTIZATION_ENCODING_BW_SCALE_OFFSET = 2,
    QNN_QUANTIZATION_ENCODING_BW_AXIS_SCALE_OFFSET = 3,
    QNN_QUANTIZATION_ENCODING_BLOCK = 4,
    QNN_QUANTIZATION_ENCODING_BLOCKWISE_EXPANSION = 5,
    QNN_QUANTIZATION_ENCODING_VECTOR = 6,
    QNN_QUANTIZATION_ENCODING_FLOAT_BLOCK = 7,
    QNN_QUANTIZATION_ENCODING_BW_AXIS_SCALE_OFFSET_MAPPED = 8,
    QNN_QUANTIZATION_ENCODING_BW_BLOCK_MAPPED = 9,
    QNN_QUANTIZATION_ENCODING_BW_BLOCKWISE_EXPANSION_MAPPED = 10,
    QNN_QUANTIZATION_ENCODING_BW_FLOAT_BLOCK = 11,
    QNN_QUANTIZATION_ENCODING_UNDEFINED = 0x7FFFFFFF
} Qnn_QuantizationEncoding_t;

/* float = (quantized + offset) * scale */
typedef struct {
    float scale;
    int32_t offset;
} Qnn_ScaleOffset_t;

typedef struct {
    int32_t axis;
    uint32_t numScaleOffsets;
    Qnn_ScaleOffset_t *scaleOffset;
} Qnn_AxisScaleOffset_t;

typedef struct {
    uint32_t bitwidth;
    float scale;
    int32_t offset;
} Qnn_BwScaleOffset_t;

typedef struct {
    uint32_t bitwidth;
    int32_t axis;
    uint32_t numElements;
    float *scales;
    int32_t *offsets;
} Qnn_BwAxisScaleOffset_t;

typedef struct {
    uint32_t *blockSize;
    Qnn_ScaleOffset_t *scaleOffset;
} Qnn_BlockEncoding_t;

typedef struct {
    Qnn_Definition_t encodingDefinition;
    Qnn_QuantizationEncoding_t quantizationEncoding;
    union {
        Qnn_ScaleOffset_t scaleOffsetEncoding;
        Qnn_AxisScaleOffset_t axisScaleOffsetEncoding;
        Qnn_BwScaleOffset_t bwScaleOffsetEncoding;
        Qnn_BwAxisScaleOffset_t bwAxisScaleOffsetEncoding;
        Qnn_BlockEncoding_t blockEncoding;
        void *otherEncoding; /* the pointer-typed encodings (blockwise expansion, vector, ...) */
    };
} Qnn_QuantizeParams_t;

#define QNN_QUANTIZE_PARAMS_INIT \
    {QNN_DEFINITION_UNDEFINED, QNN_QUANTIZATION_ENCODING_UNDEFINED, {{0.0f, 0}}}

typedef enum {
    QNN_TENSORMEMTYPE_RAW = 0,
    QNN_TENSORMEMTYPE_MEMHANDLE = 1,
    QNN_TENSORMEMTYPE_RETRIEVE_RAW = 2,
    QNN_TENSORMEMTYPE_UNDEFINED = 0x7FFFFFFF
} Qnn_TensorMemType_t;

typedef struct {
    void *data;
    uint32_t dataSize;
} Qnn_ClientBuffer_t;
#define QNN_CLIENT_BUFFER_INIT {NULL, 0u}

typedef struct {
    void *getTensorData;  /* callbacks lending / taking back a RETRIEVE_RAW tensor's data */
    void *freeTensorData;
} Qnn_TensorRetrieveRaw_t;

typedef enum {
    QNN_SPARSE_LAYOUT_HYBRID_COO = 0,
    QNN_SPARSE_LAYOUT_UNDEFINED = 0x7FFFFFFF
} Qnn_SparseLayoutType_t;

typedef struct {
    uint32_t numSpecifiedElements;
    uint32_t numSparseDimensions;
} Qnn_SparseLayoutHybridCoo_t;

typedef struct {
    Qnn_SparseLayoutType_t type;
    union {
        Qnn_SparseLayoutHybridCoo_t hybridCoo;
    };
} Qnn_SparseParams_t;

typedef struct {
    uint32_t id;
    const char *name;
    Qnn_TensorType_t type;
    Qnn_TensorDataFormat_t dataFormat;
    Qnn_DataType_t dataType;
    Qnn_QuantizeParams_t quantizeParams;
    uint32_t rank;
    uint32_t *dimensions;
    Qnn_TensorMemType_t memType;
    union {
        Qnn_ClientBuffer_t clientBuf;
        Qnn_MemHandle_t memHandle;
    };
} Qnn_TensorV1_t;

typedef struct {
    uint32_t id;
    const char *name;
    Qnn_TensorType_t type;
    Qnn_TensorDataFormat_t dataFormat;
    Qnn_DataType_t dataType;
    Qnn_QuantizeParams_t quantizeParams;
    uint32_t rank;
    uint32_t *dimensions;
    Qnn_TensorMemType_t memType;
    union {
        Qnn_ClientBuffer_t clientBuf;
        Qnn_MemHandle_t memHandle;
        Qnn_TensorRetrieveRaw_t *retrieveRaw;
    };
    uint8_t *isDynamicDimensions;
    Qnn_SparseParams_t sparseParams;
    uint8_t isProduced;
} Qnn_TensorV2_t;

typedef enum {
    QNN_TENSOR_VERSION_1 = 1,
    QNN_TENSOR_VERSION_2 = 2,
    QNN_TENSOR_VERSION_UNDEFINED = 0x7FFFFFFF
} Qnn_TensorVersion_t;

typedef struct {
    Qnn_TensorVersion_t version;
    union {
        Qnn_TensorV1_t v1;
        Qnn_TensorV2_t v2;
    };
} Qnn_Tensor_t;

#define QNN_TENSOR_V1_INIT                                                                      \
    {0u, NULL, QNN_TENSOR_TYPE_UNDEFINED, QNN_TENSOR_DATA_FORMAT_DENSE, QNN_DATATYPE_UNDEFINED, \
     QNN_QUANTIZE_PARAMS_INIT, 0u, NULL, QNN_TENSORMEMTYPE_UNDEFINED, {QNN_CLIENT_BUFFER_INIT}}
#define QNN_TENSOR_INIT {QNN_TENSOR_VERSION_1, {QNN_TENSOR_V1_INIT}}


/* a typed scalar (16 B: dataType @0, the value @8) */
typedef struct {
    Qnn_DataType_t dataType;
    union {
        float floatValue;
        double doubleValue;
        uint64_t uint64Value;
        int64_t int64Value;
        uint32_t uint32Value;
        int32_t int32Value;
        uint16_t uint16Value;
        int16_t int16Value;
        uint8_t uint8Value;
        int8_t int8Value;
        uint8_t bool8Value;
        const char *stringValue;
    };
} Qnn_Scalar_t;
/* Op configs (graphAddNode, backendValidateOpConfig): Qnn_Param_t 160 B, Qnn_OpConfig_t 80 B */
#define QNN_SCALAR_INIT {QNN_DATATYPE_UNDEFINED, {0.0f}}

typedef enum {
    QNN_PARAMTYPE_SCALAR = 0,
    QNN_PARAMTYPE_TENSOR = 1,
    QNN_PARAMTYPE_UNDEFINED = 0xFFFFFFFF
} Qnn_ParamType_t;

typedef struct {
    Qnn_ParamType_t paramType;
    const char *name;
    union {
        Qnn_Scalar_t scalarParam;
        Qnn_Tensor_t tensorParam; /* a STATIC tensor */
    };
} Qnn_Param_t;
#define QNN_PARAM_INIT {QNN_PARAMTYPE_UNDEFINED, NULL, {QNN_SCALAR_INIT}}

typedef struct {
    const char *name;
    const char *packageName; /* "qti.aisw" */
    const char *typeName;    /* e.g. "Conv2d" */
    uint32_t numOfParams;
    Qnn_Param_t *params;
    uint32_t numOfInputs;
    Qnn_Tensor_t *inputTensors;
    uint32_t numOfOutputs;
    Qnn_Tensor_t *outputTensors;
} Qnn_OpConfigV1_t;
#define QNN_OPCONFIG_V1_INIT {NULL, NULL, NULL, 0u, NULL, 0u, NULL, 0u, NULL}

typedef enum {
    QNN_OPCONFIG_VERSION_1 = 1,
    QNN_OPCONFIG_VERSION_UNDEFINED = 0x7FFFFFFF
} Qnn_OpConfigVersion_t;

typedef struct {
    Qnn_OpConfigVersion_t version;
    union {
        Qnn_OpConfigV1_t v1;
    };
} Qnn_OpConfig_t;
#define QNN_OPCONFIG_INIT {QNN_OPCONFIG_VERSION_1, {QNN_OPCONFIG_V1_INIT}}

#define QNN_OP_PACKAGE_NAME_QTI_AISW "qti.aisw"

/* an opaque blob (data, length) */
typedef struct {
    void *data;
    uint64_t len;
} Qnn_OpaqueObject_t;

#ifdef __cplusplus
}
#endif
#endif
