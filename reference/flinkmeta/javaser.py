"""Just enough of Java's object serialization to find where one object ends, and read it.

From format version 4 on, Flink appends the ``CheckpointProperties`` to ``_metadata`` with an
``ObjectOutputStream``. The reader keeps those bytes as they are (so writing them back is
exact) but must know where they end and that they are whole: a file cut inside them is
truncated, as Flink's ``ObjectInputStream`` would find. ``read_object`` walks the stream's
grammar (Java Object Serialization Specification, chapter 6) without loading any class, and
returns the object as plain values: ``JavaObject`` (class name and fields by name),
``JavaEnum``, ``str``, numbers, lists for arrays, ``None``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from flinkmeta._wire import Input, decode_modified_utf8

__all__ = ["JavaEnum", "JavaObject", "read_object"]

_MAGIC = b"\xac\xed\x00\x05"
TC_NULL, TC_REFERENCE, TC_CLASSDESC, TC_OBJECT, TC_STRING = 0x70, 0x71, 0x72, 0x73, 0x74
TC_ARRAY, TC_CLASS, TC_BLOCKDATA, TC_ENDBLOCKDATA, TC_RESET = 0x75, 0x76, 0x77, 0x78, 0x79
TC_BLOCKDATALONG, TC_LONGSTRING, TC_PROXYCLASSDESC, TC_ENUM = 0x7A, 0x7C, 0x7D, 0x7E
_BASE_HANDLE = 0x7E0000
SC_WRITE_METHOD, SC_SERIALIZABLE, SC_EXTERNALIZABLE, SC_BLOCK_DATA = 0x01, 0x02, 0x04, 0x08
_MAX_DEPTH = 64
_PRIMITIVES: dict[str, tuple[int, str]] = {
    "B": (1, ">b"),
    "C": (2, ">H"),
    "D": (8, ">d"),
    "F": (4, ">f"),
    "I": (4, ">i"),
    "J": (8, ">q"),
    "S": (2, ">h"),
    "Z": (1, ">?"),
}


@dataclass(frozen=True)
class JavaEnum:
    class_name: str
    constant: str


@dataclass
class JavaObject:
    class_name: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class _ClassDesc:
    name: str
    flags: int
    fields: list[tuple[str, str]]  # (type code, field name)
    superclass: _ClassDesc | None


class _Stream:
    def __init__(self, source: Input) -> None:
        self.src = source
        self.handles: list[Any] = []

    def new_handle(self, value: Any) -> int:
        self.handles.append(value)
        return len(self.handles) - 1

    def tag(self, what: str) -> int:
        return self.src.u8(what)

    def content(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.src.fail(f"Java serialization nested at most {_MAX_DEPTH} deep")
        at = self.src.pos
        code = self.tag("a Java serialization type code")
        if code == TC_NULL:
            return None
        if code == TC_REFERENCE:
            return self.reference(at)
        if code == TC_OBJECT:
            return self.new_object(depth)
        if code in (TC_STRING, TC_LONGSTRING):
            return self.new_string(code)
        if code == TC_ENUM:
            return self.new_enum(depth)
        if code == TC_ARRAY:
            return self.new_array(depth)
        if code == TC_CLASS:
            desc = self.class_desc(depth)
            self.new_handle(desc)
            return desc
        if code in (TC_CLASSDESC, TC_PROXYCLASSDESC):
            self.src.pos = at
            return self.class_desc(depth)
        if code == TC_RESET:
            self.handles.clear()
            return self.content(depth + 1)
        raise self.src.fail("a Java serialization object", f"type code 0x{code:02x}", at)

    def reference(self, at: int) -> Any:
        handle = self.src.i32("a Java serialization handle") - _BASE_HANDLE
        if not 0 <= handle < len(self.handles):
            raise self.src.fail("a reference to an earlier Java object", str(handle), at)
        return self.handles[handle]

    def new_string(self, code: int) -> str:
        if code == TC_STRING:
            value = self.src.utf("a Java string")
        else:
            at = self.src.pos
            length = self.src.i64("the length of a long Java string")
            if not 0 <= length <= self.src.remaining:
                raise self.src.fail("a long string the bytes left can hold", str(length), at)
            try:
                value = decode_modified_utf8(self.src.take(length, "a long Java string"))
            except ValueError as exc:
                raise self.src.fail("modified UTF-8", str(exc), at) from None
        self.new_handle(value)
        return value

    def class_desc(self, depth: int) -> _ClassDesc | None:
        at = self.src.pos
        code = self.tag("a Java class descriptor")
        if code == TC_NULL:
            return None
        if code == TC_REFERENCE:
            desc = self.reference(at)
            if not isinstance(desc, _ClassDesc):
                raise self.src.fail("a reference to a class descriptor", type(desc).__name__, at)
            return desc
        if code == TC_CLASSDESC:
            name = self.src.utf("a class name")
            self.src.take(8, "a serialVersionUID")
            desc = _ClassDesc(name, 0, [], None)
            self.new_handle(desc)
            desc.flags = self.src.u8("class descriptor flags")
            desc.fields = self.field_descs(depth)
            self.annotation(depth)
            desc.superclass = self.class_desc(depth + 1)
            return desc
        if code == TC_PROXYCLASSDESC:
            desc = _ClassDesc("<proxy>", SC_SERIALIZABLE, [], None)
            self.new_handle(desc)
            for _ in range(self.src.count("proxy interfaces", 2)):
                self.src.utf("a proxy interface name")
            self.annotation(depth)
            desc.superclass = self.class_desc(depth + 1)
            return desc
        raise self.src.fail("a Java class descriptor", f"type code 0x{code:02x}", at)

    def field_descs(self, depth: int) -> list[tuple[str, str]]:
        count = struct.unpack(">H", self.src.take(2, "the number of fields"))[0]
        fields = []
        for _ in range(count):
            at = self.src.pos
            type_code = chr(self.src.u8("a field type code"))
            name = self.src.utf("a field name")
            if type_code in ("L", "["):
                self.content(depth + 1)  # the field's class name, a string
            elif type_code not in _PRIMITIVES:
                raise self.src.fail("a Java field type code", repr(type_code), at)
            fields.append((type_code, name))
        return fields

    def annotation(self, depth: int) -> None:
        """Block data and objects up to TC_ENDBLOCKDATA."""
        while True:
            at = self.src.pos
            code = self.tag("an annotation or TC_ENDBLOCKDATA")
            if code == TC_ENDBLOCKDATA:
                return
            if code == TC_BLOCKDATA:
                self.src.take(self.src.u8("a block length"), "block data")
            elif code == TC_BLOCKDATALONG:
                self.src.take(self.src.count("block data bytes", 1), "block data")
            else:
                self.src.pos = at
                self.content(depth + 1)

    def new_object(self, depth: int) -> JavaObject:
        desc = self.class_desc(depth + 1)
        if desc is None:
            raise self.src.fail("the class descriptor of an object", "null")
        obj = JavaObject(desc.name)
        self.new_handle(obj)
        chain = []
        cursor: _ClassDesc | None = desc
        while cursor is not None:
            chain.append(cursor)
            cursor = cursor.superclass
        for klass in reversed(chain):
            self.class_data(klass, obj, depth)
        return obj

    def class_data(self, klass: _ClassDesc, obj: JavaObject, depth: int) -> None:
        if klass.flags & SC_EXTERNALIZABLE:
            if not klass.flags & SC_BLOCK_DATA:
                raise self.src.fail("externalizable data in block mode", klass.name)
            self.annotation(depth)
            return
        for type_code, name in klass.fields:
            obj.fields[name] = self.field_value(type_code, depth)
        if klass.flags & SC_WRITE_METHOD:
            self.annotation(depth)

    def field_value(self, type_code: str, depth: int) -> Any:
        if type_code in _PRIMITIVES:
            size, fmt = _PRIMITIVES[type_code]
            return struct.unpack(fmt, self.src.take(size, "a primitive field value"))[0]
        return self.content(depth + 1)

    def new_enum(self, depth: int) -> JavaEnum:
        desc = self.class_desc(depth + 1)
        index = self.new_handle(None)
        constant = self.content(depth + 1)
        if not isinstance(constant, str):
            raise self.src.fail("an enum constant's name", type(constant).__name__)
        value = JavaEnum(desc.name if desc else "", constant)
        self.handles[index] = value
        return value

    def new_array(self, depth: int) -> list[Any]:
        desc = self.class_desc(depth + 1)
        if desc is None or not desc.name.startswith("["):
            raise self.src.fail("an array class descriptor", desc.name if desc else "null")
        values: list[Any] = []
        self.new_handle(values)
        component = desc.name[1]
        size = self.src.count("array elements", _PRIMITIVES.get(component, (1, ""))[0])
        for _ in range(size):
            values.append(self.field_value(component, depth))
        return values


def read_object(source: Input) -> Any:
    """One object from a Java serialization stream starting at ``source``'s position (with the
    stream header); afterwards ``source`` is just past it."""
    at = source.pos
    magic = source.take(4, "the Java serialization header AC ED 00 05")
    if magic != _MAGIC:
        raise source.fail("the Java serialization header AC ED 00 05", magic.hex(), at)
    return _Stream(source).content(0)
