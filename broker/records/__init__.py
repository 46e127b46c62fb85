"""Record formats: v2 batches, v0/v1 message sets, codecs, builders, hot loops.

Bytes in, bytes out; no I/O. See ``batch.py`` (v2 header), ``legacy.py``
(v0/v1 entries), ``entries.py`` (framing of any magic), ``batch_info.py``
(the facts of each batch being appended, for the log), ``scan.py`` (the
chooser between the pure-Python reference loops and their compiled twin) and
``codecs.py`` (compress / decompress of batch payloads; one ``codec_*.py``
module per codec owns its framing, ``codec_output.py`` the output bound).
"""
