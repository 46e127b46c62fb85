"""Record formats: v2 batches, v0/v1 message sets, codecs, builders, hot loops.

Bytes in, bytes out; no I/O. See ``batch.py`` (v2 header), ``legacy.py``
(v0/v1 entries), ``entries.py`` (framing of any magic) and ``scan.py`` (the
chooser between the pure-Python reference loops and their compiled twin).
"""
