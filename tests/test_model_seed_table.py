"""The int8 MobileNet v1 of the RKNN NPU SRAM guide (tests/data/seed/memory_table.txt): npurt's native shapes and internal tensor sizes equal the
vendor's memory table wherever the vendor uses C1 = ceil(C / C2) (the table also shows unexplained larger C1
values — output4, output48, output50.. — which no documented rule produces; npurt does not imitate them)."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.model.zoo import mobilenet_v1
from npurt.tensor import DType, Layout

from helpers.data import memory_table



def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.strip("()").split(","))


def seed_rows() -> list[tuple]:
    """(tensor, logical shape, native shape, size) of the seed table's ConvRelu outputs with C1 = ceil(C/16)."""
    rows = []
    for _, user, name, _, orig, native, _, _, size, hit in memory_table()[1]:
        shape, dims = _shape(orig), _shape(native)
        if user == "ConvRelu" and hit is not None and dims[1] == -(-shape[1] // 16):
            rows.append((name, shape, dims, size))
    return rows


SEED_ROWS = seed_rows()


def test_seed_rows_selected():
    names = [name for name, _, _, _ in SEED_ROWS]
    assert {"output2", "output6", "output8", "output10", "output16", "output18", "output24", "output26"} <= set(names)
    assert not {"output4", "output48", "output50"} & set(names)


@pytest.fixture(scope="module")
def compiled():
    x = np.random.default_rng(0).normal(size=(1, 3, 224, 224)).astype(np.float32)
    return npurt.compile(mobilenet_v1(), soc="rk3588", quantize=[x], progress=False)


@pytest.mark.parametrize("name,shape,native,size", SEED_ROWS)
def test_internal_tensor_matches_seed_row(compiled, name, shape, native, size):
    st = compiled.storage[name]
    assert st.dtype is DType.INT8 and st.layout is Layout.NC1HWC2
    assert st.shape == shape and st.dims == native
    assert st.size == size and compiled.plan.sizes[name] == size
    assert compiled.graph.nodes[compiled.graph.tensors[name].producer].display_type == "ConvRelu"


def test_input_row_and_io_outside_arena(compiled):
    attr = compiled.native_input_attrs[0]
    assert attr.size_with_stride == 0x24C00               # seed: input0 (1,3,224,224) -> 0x24c00 bytes
    assert attr.fmt is Layout.NHWC and attr.dims == [1, 224, 224, 3]
    assert "input0" not in compiled.plan.offsets
    for out in compiled.graph.outputs:
        assert out not in compiled.plan.offsets


def test_arena_is_at_most_the_vendors(compiled):
    # the seed reports Total Internal Memory Size 2157568 for this network
    assert compiled.internal_size <= 2157568
    assert compiled.plan.internal_size >= compiled.plan.lower_bound
    assert all(off % 1024 == 0 for off in compiled.plan.offsets.values())


def test_user_column_and_last_row_match_the_seed(compiled):
    """The seed table: User is the consuming op; the output row is the float output the API returns."""
    from npurt.model.report import memory_rows
    rows, _ = memory_rows(compiled)
    by_name = {r.tensor: r for r in rows}
    assert (rows[0].id, rows[0].user, rows[0].tensor) == (1, "ConvRelu", "input0")
    seed_users = {f"output{k}": "ConvRelu" for k in range(2, 53, 2)}
    seed_users.update({"output54": "AveragePool", "output55": "Conv", "output56": "Softmax"})
    assert {name: by_name[name].user for name in seed_users} == seed_users
    last = rows[-1]
    assert (last.id, last.user, last.tensor, last.dtype) == (31, "OutputOperator", "output57", "FLOAT")
    assert last.orig_shape == last.native_shape == (1, 1000, 1, 1)
    assert last.size == last.end - last.start == 0xFA0
