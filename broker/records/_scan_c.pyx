# cython: language_level=3
"""Compiled twin of ``_scan_py.py``: same functions, same results."""

from broker.errors import InvalidRecordError

from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t


def read_varint(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end):
    cdef uint32_t raw = 0
    cdef int shift = 0
    cdef uint8_t b
    if end > buf.shape[0]:
        end = buf.shape[0]
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varint past end")
        b = buf[pos]
        pos += 1
        raw |= <uint32_t>(b & 0x7F) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Found invalid record structure: varint too long")
    return <int>((raw >> 1) ^ (-(<int64_t>(raw & 1)))), pos


def read_varlong(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t end):
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef uint8_t b
    if end > buf.shape[0]:
        end = buf.shape[0]
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: varlong past end")
        b = buf[pos]
        pos += 1
        raw |= <uint64_t>(b & 0x7F) << shift
        if not (b & 0x80):
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Found invalid record structure: varlong too long")
    return <int64_t>((raw >> 1) ^ (-(raw & 1))), pos
