"""What kind of file a trace is, before it is parsed as text.

blkstack reads block traces as text: blkparse's default output or the
kernel's ftrace text of the ``block_*`` tracepoints. blktrace's own output
(``sda.blktrace.0``, one file per CPU) is binary: records of ``struct
blk_io_trace`` that begin with the magic ``BLK_IO_TRACE_MAGIC``
(0x65617400) or'ed with the format version, written in the recording
machine's byte order. Such a file, or any other binary data, is refused
with a message saying what it is instead of being read as lines of text.
"""

from __future__ import annotations

import os
import struct
from typing import Union

# include/uapi/linux/blktrace_api.h
BLK_IO_TRACE_MAGIC = 0x65617400

# Bytes looked at to tell text from binary data.
SNIFF_BYTES = 4096


class TraceFormatError(ValueError):
    """A trace file blkstack cannot read as text (binary blktrace, other binary data)."""


def is_blktrace(head: bytes) -> bool:
    """Whether *head* starts with a blktrace record's magic (either byte order)."""
    if len(head) < 4:
        return False
    return any((struct.unpack(order + "I", head[:4])[0] & 0xFFFFFF00) == BLK_IO_TRACE_MAGIC for order in "<>")


def check_text_trace(path: Union[str, "os.PathLike[str]"]) -> None:
    """Raise :class:`TraceFormatError` if *path* holds binary blktrace
    records or other binary data (a NUL byte in its first 4 KiB)."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    name = os.fspath(path)
    if is_blktrace(head):
        raise TraceFormatError(f"{name}: a binary blktrace file (blktrace's per-CPU output); blkstack reads "
                               f"blkparse's text: run 'blkparse -i {name}' and give its output")
    if b"\0" in head:
        raise TraceFormatError(f"{name}: binary data, not a block trace (expected blkparse or ftrace block_* text)")
