"""What kind of file a trace is, before it is parsed as text.

blkstack reads block traces as blkparse's default output, the kernel's
ftrace text of the ``block_*`` tracepoints, or blktrace's own binary
output (``sda.blktrace.0``, one file per CPU): records of ``struct
blk_io_trace`` that begin with the magic ``BLK_IO_TRACE_MAGIC``
(0x65617400) or'ed with the format version, in the recording machine's
byte order (the engine reads those, ``src/trace/blktrace.rs``). Any other
binary data is refused with a message saying so instead of being read as
lines of text.
"""

from __future__ import annotations

import os
import struct
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would cost every command's start
    from typing import Union

# include/uapi/linux/blktrace_api.h
BLK_IO_TRACE_MAGIC = 0x65617400

# Bytes looked at to tell text from binary data.
SNIFF_BYTES = 4096


class TraceFormatError(ValueError):
    """A trace file that is binary data, and not blktrace's."""


def is_blktrace(head: bytes) -> bool:
    """Whether *head* starts with a blktrace record's magic (either byte order)."""
    if len(head) < 4:
        return False
    return any((struct.unpack(order + "I", head[:4])[0] & 0xFFFFFF00) == BLK_IO_TRACE_MAGIC for order in "<>")


def check_text_trace(path: Union[str, "os.PathLike[str]"]) -> None:
    """Raise :class:`TraceFormatError` if *path* holds binary data other
    than blktrace records (a NUL byte in its first 4 KiB)."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    name = os.fspath(path)
    if is_blktrace(head):
        return
    if b"\0" in head:
        raise TraceFormatError(f"{name}: binary data, not a block trace (expected blkparse or ftrace block_* text)")
