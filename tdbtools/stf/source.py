"""Reading STF files from disk: encodings, the SIMIS header and compression.

Real files are UTF-16LE with a BOM (the usual MSTS case) or 8-bit text without a
BOM (UTF-8, else cp1252), with CRLF or LF line ends. Files whose header starts
``SIMISA@F`` are zlib-compressed after a 16-byte header. Binary bodies are not
STF text and are refused with a clear message.
"""

from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DecodeError, Location, caret_line, caret_snippet

#: A compressed body is refused when it inflates to more than BOTH this many bytes and
#: :data:`MAX_INFLATE_RATIO` times its compressed size (a zip-bomb guard; the numbers
#: and why are in docs/security.md §4). Real MSTS text deflates 4.7x (.tdb) to 12.3x
#: (tsection.dat); deflate itself cannot exceed about 1032x.
MAX_INFLATED_BYTES = 64 << 20
MAX_INFLATE_RATIO = 64

#: Inflation works in slices of this size, so a refusal costs at most one slice more
#: than the limit.
_INFLATE_CHUNK = 1 << 20

#: Plain files larger than this are refused before they are read into memory.
MAX_FILE_BYTES = 2 << 30


@dataclass(slots=True, eq=False)
class Source:
    """The decoded text of one file, with what is needed to point into it."""

    path: str
    text: str
    encoding: str
    compressed: bool = False
    #: True when the text holds characters that Python's str.split() takes for white
    #: space but STF does not (U+0085, U+00A0, ...): words must then be split exactly.
    exact_split: bool = False
    _line_starts: list[int] | None = field(default=None, repr=False)

    @property
    def signature(self) -> str:
        """Line 1, the SIMIS signature (Open Rails discards it whatever it holds)."""
        end = self.text.find("\n")
        return (self.text if end < 0 else self.text[:end]).strip()

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def location(self, pos: int) -> Location:
        """Line and column (1-based) of a character offset."""
        starts = self._starts()
        line = bisect.bisect_right(starts, pos)
        return Location(self.path, line, pos - starts[line - 1] + 1)

    def snippet(self, loc: Location) -> str:
        # As caret_snippet(self.text, ...), without splitting the whole text each time.
        starts = self._starts()
        if not 1 <= loc.line <= len(starts):
            return ""
        a = starts[loc.line - 1]
        b = starts[loc.line] - 1 if loc.line < len(starts) else len(self.text)
        return caret_line(self.text, a, b, loc.column)


def _looks_utf16le(data: bytes) -> bool:
    # UTF-16LE without a BOM: ASCII text has a zero in every odd byte.
    sample = data[:256]
    return len(sample) >= 4 and sample[1::2].count(0) >= len(sample) // 2 * 0.9


def decode_bytes(data: bytes, path: str = "<bytes>") -> Source:
    """Turn the raw bytes of an STF file into a :class:`Source`."""
    if data[:2] == b"\xff\xfe":
        if (len(data) - 2) % 2:
            raise DecodeError(
                f"invalid UTF-16 file: odd number of bytes ({len(data)}); the file is truncated "
                "or not UTF-16",
                Location(path, 1, 1),
            )
        head = data[2:34].decode("utf-16-le", errors="replace")
        unicode_header = True
    else:
        head = data[:32].decode("latin-1")
        unicode_header = False

    if head.startswith("SIMISA@F"):
        return _decode_text(_inflate(data, path, unicode_header), path, compressed=True)
    sub = head[16:32]
    if head.startswith("SIMISA@@") and len(sub) >= 8 and sub.startswith("JINX") and sub[7] == "b":
        raise DecodeError(
            f"binary STF body (sub-header {sub[:8]!r}) is not supported; only text files "
            "('…t______') can be read",
            Location(path, 1, 1),
        )
    return _decode_text(data, path, compressed=False)


def _inflate(data: bytes, path: str, unicode_header: bool) -> bytes:
    # 16 header characters (ASCII bytes, or UTF-16 after the BOM), then a zlib stream
    # whose inflated data starts with the 16-character sub-header.
    start = 2 + 32 if unicode_header else 16
    compressed = memoryview(data)[start:]
    limit = max(MAX_INFLATED_BYTES, MAX_INFLATE_RATIO * len(compressed))
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    total = 0
    pending: bytes | memoryview = compressed
    try:
        while True:
            chunk = inflater.decompress(pending, _INFLATE_CHUNK)
            total += len(chunk)
            if total > limit:
                raise DecodeError(
                    f"compressed body inflates to more than {limit} bytes ({MAX_INFLATE_RATIO}x its "
                    f"{len(compressed)} compressed bytes and over {MAX_INFLATED_BYTES} bytes): "
                    "refused as a likely zip bomb",
                    Location(path, 1, 1),
                )
            parts.append(chunk)
            pending = inflater.unconsumed_tail
            if inflater.eof or (not pending and not chunk):
                break
    except zlib.error as exc:
        raise DecodeError(f"corrupt compressed STF file (SIMISA@F): {exc}", Location(path, 1, 1)) from None
    if not inflater.eof:
        raise DecodeError("truncated compressed STF file (zlib stream ends early)", Location(path, 1, 1))
    body = b"".join(parts)
    del parts
    if body[:2] == b"\xff\xfe":
        text_sub = body[2:34].decode("utf-16-le", errors="replace")
        kind = text_sub[7:8]
        rest = body
    elif _looks_utf16le(body):
        text_sub = body[:32].decode("utf-16-le", errors="replace")
        kind = text_sub[7:8]
        rest = b"\xff\xfe" + body
    else:
        text_sub = body[:16].decode("latin-1")
        kind = text_sub[7:8]
        rest = body
    if kind == "b":
        raise DecodeError(
            f"binary STF body (sub-header {text_sub[:8]!r}) inside a compressed file is not "
            "supported; only text files can be read",
            Location(path, 1, 1),
        )
    # Give the text a signature line like an uncompressed file: "SIMISA@@@@@@@@@@" +
    # the sub-header (which ends the first line), so line 1 is dropped as usual.
    if rest[:2] == b"\xff\xfe":
        return b"\xff\xfe" + "SIMISA@@@@@@@@@@".encode("utf-16-le") + rest[2:]
    return b"SIMISA@@@@@@@@@@" + rest


def _decode_text(data: bytes, path: str, *, compressed: bool) -> Source:
    if data[:2] == b"\xff\xfe":
        if len(data) % 2:
            raise DecodeError(
                f"invalid UTF-16 file: odd number of bytes ({len(data)}); the file is truncated "
                "or not UTF-16",
                Location(path, 1, 1),
            )
        try:
            text = data[2:].decode("utf-16-le")
        except UnicodeDecodeError as exc:
            raise _bad_utf16(data, exc, path) from None
        encoding = "utf-16-le"
    elif data[:3] == b"\xef\xbb\xbf":
        text, encoding = _decode_8bit(data[3:])
    elif _looks_utf16le(data):
        if len(data) % 2:
            raise DecodeError("invalid UTF-16 file (no BOM): odd number of bytes", Location(path, 1, 1))
        try:
            text = data.decode("utf-16-le")
        except UnicodeDecodeError as exc:
            raise _bad_utf16(data, exc, path, bom=0) from None
        encoding = "utf-16-le"
    else:
        text, encoding = _decode_8bit(data)
    if "\x00" in text:
        pos = text.index("\x00")
        src = Source(path, text, encoding)
        loc = src.location(pos)
        raise DecodeError("NUL character in text: binary data or mixed encodings", loc, src.snippet(loc))
    return Source(path, text, encoding, compressed)


def _bad_utf16(data: bytes, exc: UnicodeDecodeError, path: str, bom: int = 2) -> DecodeError:
    good = data[bom : bom + exc.start].decode("utf-16-le", errors="replace")
    line = good.count("\n") + 1
    col = len(good) - (good.rfind("\n") + 1) + 1
    shown = data[bom:].decode("utf-16-le", errors="replace")
    return DecodeError(
        f"invalid UTF-16 text ({exc.reason}) at byte {exc.start + bom}",
        Location(path, line, col),
        caret_snippet(shown, line, col),
    )


def _decode_8bit(data: bytes) -> tuple[str, str]:
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        # Old MSTS content written by Windows tools: the ANSI code page.
        return data.decode("cp1252", errors="replace"), "cp1252"


def read_source(path: str | Path) -> Source:
    """Read and decode one STF file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DecodeError(f"file too large ({size} bytes)", Location(str(p), 0, 0))
        data = p.read_bytes()
    except IsADirectoryError:
        raise DecodeError("is a directory, not a file", Location(str(p), 0, 0)) from None
    except FileNotFoundError:
        raise DecodeError("file not found", Location(str(p), 0, 0)) from None
    except OSError as exc:
        raise DecodeError(f"cannot read file: {exc.strerror or exc}", Location(str(p), 0, 0)) from None
    return decode_bytes(data, str(p))
