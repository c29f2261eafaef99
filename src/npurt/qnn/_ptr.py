"""C's `&struct.field` for the QNN mirror's out-parameters. Raw pointers handed to the mirror are read and
written through `npurt.memory.raw` (guarded: an unmapped address is an error, never a crash)."""
from __future__ import annotations

import ctypes


def field_ref(obj: ctypes.Structure, name: str):
    """C's `&obj.name`: a ctypes object of the field's type that aliases the field's memory (writing its
    `.value` writes the struct). Used for out-parameters such as `&(inputTensor.v1.memHandle)`:
    `qi.memRegister(ctx, desc, 1, field_ref(tensor.v1, "memHandle"))`."""
    desc = getattr(type(obj), name)
    for field_name, field_type, *_ in type(obj)._fields_:
        if field_name == name:
            return field_type.from_buffer(obj, desc.offset)
    for anon in getattr(type(obj), "_anonymous_", ()):          # a member of an anonymous union
        union_type = dict((f[0], f[1]) for f in type(obj)._fields_)[anon]
        for field_name, field_type, *_ in union_type._fields_:
            if field_name == name:
                return field_type.from_buffer(obj, desc.offset)
    raise AttributeError(name)
