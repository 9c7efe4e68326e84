"""Record ids keep the bytes of the input: an id is text (str) inside rnapipe and the same bytes again in every
output, whatever bytes it holds.

Ids are read and written as UTF-8 with the error handler :data:`ID_ERRORS`. Reading, a byte that is not part
of UTF-8 text becomes a surrogate escape (U+DC80 to U+DCFF, as Python's ``surrogateescape`` makes it), so that
ids that differ only in such bytes stay distinct; writing, each escape is its byte again. A lone surrogate
outside that range (an id made in Python) is written as ``surrogatepass`` writes it, and read back as it was
written. Bytes to text and back is exact; messages show an escape as ``\\xNN``
(:func:`rnapipe.errors.shown_id`).
"""

from __future__ import annotations

import codecs

ID_ERRORS = "rnapipe-id"


def _handle(err: UnicodeError):
    if isinstance(err, UnicodeEncodeError):
        out = bytearray()
        for char in err.object[err.start:err.end]:
            code = ord(char)
            out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else char.encode("utf-8", "surrogatepass")
        return bytes(out), err.end
    if isinstance(err, UnicodeDecodeError):
        data, at = err.object, err.start
        three = bytes(data[at:at + 3])
        if len(three) == 3 and three[0] == 0xED and 0xA0 <= three[1] <= 0xBF and 0x80 <= three[2] <= 0xBF:
            char = three.decode("utf-8", "surrogatepass")
            if not 0xDC80 <= ord(char) <= 0xDCFF:       # an escape's own code point is read as its bytes
                return char, at + 3
        return chr(0xDC00 + data[at]), at + 1
    raise err


codecs.register_error(ID_ERRORS, _handle)
