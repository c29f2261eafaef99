"""QNN HTP shared buffers on the QNN mirror (docs/qnn-shared-buffers.md).

The tutorial's two flows, line by line in Python:
1. QNN_MEM_TYPE_ION: one rpcmem buffer per tensor; its fd is registered (memRegister) and the tensor switches
   from a client buffer to QNN_TENSORMEMTYPE_MEMHANDLE. graphExecute then reads and writes the rpcmem memory itself.
2. QNN_HTP_MEM_SHARED_BUFFER: one rpcmem buffer for input and output, one handle per offset.
Run: python examples/qnn_shared_buffer.py
"""
import ctypes

import npurt
import npurt.qnn as q
from _common import compare, image, reference, small_model


def ok(ret):
    assert q.qnn_error_code(ret) == q.QNN_SUCCESS, q.error_string(ret)


model = small_model()
binary = npurt.compile(model, precision="float32", progress=False)      # stands in for the context binary
x = image(seed=6)
ref = reference(model, x)

qi = q.interface("fastrpc")
backend, device = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t()
ok(qi.backendCreate(None, None, backend))
ok(qi.deviceCreate(None, None, device))
context = q.Qnn_ContextHandle_t()
ok(qi.contextCreateFromBinary(backend, device, None, binary, 0, context, None))
graph = q.Qnn_GraphHandle_t()
ok(qi.graphRetrieve(context, binary.graph.name, graph))
in_spec, out_spec = q.tensor_specs(binary)

# 1. ION: one buffer and one handle per tensor ---------------------------------------------------------------------
inputs, outputs = q.io_tensors(binary)
pointers = []
for tensor, spec in ((inputs[0], in_spec[0]), (outputs[0], out_spec[0])):
    mem_pointer = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, spec.nbytes)
    mem_fd = q.rpcmem_to_fd(mem_pointer)
    desc = q.Qnn_MemDescriptor_t()
    desc.memShape.numDim = tensor.v1.rank
    desc.memShape.dimSize = tensor.v1.dimensions
    desc.dataType = tensor.v1.dataType
    desc.memType = q.QNN_MEM_TYPE_ION
    desc.ionInfo.fd = mem_fd
    tensor.v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
    tensor.v1.memHandle = None
    ok(qi.memRegister(context, desc, 1, q.field_ref(tensor.v1, "memHandle")))
    pointers.append(mem_pointer)
    print(f"rpcmem {spec.nbytes} B at {mem_pointer:#x}, fd {mem_fd} -> mem handle {tensor.v1.memHandle}")
in_spec[0].pack(x, q.rpcmem_view(pointers[0], in_spec[0].nbytes))          # "load the input data to memPointer"
ok(qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
y = out_spec[0].unpack(q.rpcmem_view(pointers[1], out_spec[0].nbytes))
compare("ION buffers", y, ref, atol=1e-4)
for tensor in inputs + outputs:
    ok(qi.memDeRegister([tensor.v1.memHandle], 1))
for p in pointers:
    q.rpcmem_free(p)

# 2. one shared buffer, one handle per offset ----------------------------------------------------------------------
inputs, outputs = q.io_tensors(binary)
specs, tensors = in_spec + out_spec, inputs + outputs
total = sum(s.nbytes for s in specs)
mem_pointer = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, total)
mem_fd = q.rpcmem_to_fd(mem_pointer)
offsets, offset = [], 0
for tensor, spec in zip(tensors, specs):
    desc = q.Qnn_MemDescriptor_t()
    desc.memShape.numDim = tensor.v1.rank
    desc.memShape.dimSize = tensor.v1.dimensions
    desc.dataType = tensor.v1.dataType
    desc.memType = q.QNN_MEM_TYPE_CUSTOM
    info = q.QnnMemHtp_Descriptor_t()
    info.type = q.QNN_HTP_MEM_SHARED_BUFFER
    info.size = total
    info.sharedBufferConfig.fd = mem_fd
    info.sharedBufferConfig.offset = offset
    desc.customInfo = ctypes.addressof(info)                # C: desc.customInfo = &info
    desc._keep = info                                       # keep the struct alive as long as the descriptor
    tensor.v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
    handle = q.Qnn_MemHandle_t()
    ok(qi.memRegister(context, desc, 1, handle))
    tensor.v1.memHandle = handle.value
    offsets.append(offset)
    offset += spec.nbytes
print(f"one rpcmem buffer of {total} B (fd {mem_fd}): input at offset {offsets[0]}, output at offset {offsets[1]}")
specs[0].pack(x, q.rpcmem_view(mem_pointer, specs[0].nbytes, offset=offsets[0]))
ok(qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
y = specs[1].unpack(q.rpcmem_view(mem_pointer, specs[1].nbytes, offset=offsets[1]))
compare("one shared buffer", y, ref, atol=1e-4)
for tensor in tensors:
    ok(qi.memDeRegister([tensor.v1.memHandle], 1))
q.rpcmem_free(mem_pointer)
ok(qi.contextFree(context, None))
ok(qi.deviceFree(device))
ok(qi.backendFree(backend))
print("qnn_shared_buffer example OK")
