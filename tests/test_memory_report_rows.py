"""One row builder for the seed's RKNN_LOG_LEVEL=3 table (`npurt.model.report`), one Context wrapper
(`npurt.runtime.report`): `npurt report`, the rknn_init log and `Session.memory_report` show the same rows."""
from __future__ import annotations

import npurt
from npurt.model.report import dtype_name, memory_rows
from npurt.rknn.api import memory_table
from npurt.runtime import Context, ContextOptions
from npurt.runtime.report import context_layout, context_rows, context_table
from npurt.tensor import DType
from helpers.models import convnet, two_io


def test_rows_follow_the_seed():
    cm = npurt.compile(two_io(), progress=False)
    rows, totals = memory_rows(cm, sram_size=1024, arena_base=0x1000, io_addrs={"x": 0x50, "v": 0x90})
    names = [r.tensor for r in rows]
    g = cm.graph
    assert names[:2] == list(g.inputs) and names[-2:] == list(g.outputs)           # inputs, internal, outputs
    assert rows[0].user == "ConvRelu" and rows[0].start == 0x50 and rows[0].sram_hit is None   # user = consumer
    assert [r.user for r in rows[-2:]] == ["OutputOperator", "OutputOperator"] and rows[-1].start == 0x90
    internal = [r for r in rows if r.sram_hit is not None]
    assert [r.tensor for r in internal] == [t for n in g.nodes for t in n.outputs if t in cm.plan.offsets]
    assert all(r.start == 0x1000 + cm.plan.offsets[r.tensor] for r in internal)
    assert totals.weight_rw == sum(cm.plan.weight_sizes.values()) and totals.weight_size == cm.plan.weight_size
    assert dtype_name(DType.FLOAT32) == "FLOAT" and dtype_name(DType.FLOAT16) == "FLOAT16"


def test_one_table_for_rknn_session_and_context():
    with npurt.Session(convnet(), sram=True) as s:
        ctx = s.context
        lay = context_layout(ctx)
        buf = ctx.internal_buffer
        assert lay.sram_header == (buf.sram_size, ctx.device.sram_addr(buf)) and lay.arena_base == lay.sram_addr
        ins, outs = ctx.bindings()
        assert lay.io_addrs == {"x": ins[0].ref.buffer.dev_addr, "y": outs[0].ref.buffer.dev_addr}
        table = context_table(ctx)
        assert memory_table(ctx) == table and s.memory_report().startswith(table.rstrip("\n"))
        rows, totals, _ = context_rows(ctx)
        assert rows == memory_rows(ctx.compiled, lay.sram_size, lay.arena_base, lay.io_addrs, plan=ctx.plan,
                                   output_formats=lay.output_formats)[0]
        assert rows[-1].dtype == "FLOAT16" and rows[-1].native_shape == tuple(outs[0].user.dims)  # as bound
        assert totals.internal_size == s.mem_size().internal_size
    with Context(convnet(), options=ContextOptions()) as ctx:            # nothing bound: I/O at address 0
        rows, _, sram = context_rows(ctx)
        assert sram is None and rows[0].start == 0 and rows[-1].start == 0
        assert (rows[-1].dtype, rows[-1].native_shape) == ("FLOAT", rows[-1].orig_shape)   # the general API's
        assert rows[-1].size == 4 * ctx.compiled.output_attrs[0].n_elems
        assert all(r.sram_hit == 0 for r in rows[1:-1])
