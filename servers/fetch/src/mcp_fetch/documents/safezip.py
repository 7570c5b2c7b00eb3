"""Zip containers (OOXML, OpenDocument, EPUB) opened so that no member can expand without bound.

Checked on opening, from the central directory: the number of members, their declared sizes added
up, each member's declared expansion ratio, encryption and the compression method. Python's
`zipfile` then never yields more than a member's declared size (it stops there and checks the CRC),
so every reader built on it (ours, python-docx) is bounded by those checks.

Readers that are not built on `zipfile` (calamine, in Rust) get `verify()` first: every member is
inflated here, counting what actually comes out, so an archive whose members expand beyond their
declared sizes never reaches them.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from .model import DocumentError, DocumentLimits, DocumentTooLarge

_GRACE_BYTES = 1024 * 1024  # a member smaller than this is never judged by its ratio
_STORED, _DEFLATED = 0, 8
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.0f} MiB" if count >= 1024 * 1024 else f"{count} bytes"


class SafeZip:
    def __init__(self, data: bytes, limits: DocumentLimits, *, what: str) -> None:
        self._data = data
        self._limits = limits
        self.what = what
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
            raise DocumentError(f"The {what} is damaged: its zip container cannot be read ({exc}).") from exc
        if len(infos) > limits.max_zip_entries:
            raise DocumentTooLarge(
                f"The {what} holds {len(infos):,} files in its zip container; at most "
                f"{limits.max_zip_entries:,} are read."
            )
        declared = 0
        for info in infos:
            if info.flag_bits & 0x1:
                raise DocumentError(
                    f"The {what} is encrypted (password-protected); it cannot be read without the password, "
                    "and no password is tried."
                )
            if info.compress_type not in (_STORED, _DEFLATED):
                raise DocumentError(
                    f"The {what} uses zip compression method {info.compress_type} for {info.filename!r}, "
                    "which "
                    "office documents and e-books do not use; it is not read."
                )
            declared += info.file_size
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > _GRACE_BYTES and ratio > limits.max_zip_ratio:
                raise DocumentTooLarge(
                    f"The {what} looks like a zip bomb: {info.filename!r} would expand {ratio:,.0f}-fold "
                    f"(to {_size(info.file_size)}); it was not decompressed."
                )
        if declared > limits.max_unzipped_bytes:
            raise DocumentTooLarge(
                f"The {what} would expand to {_size(declared)}; at most {_size(limits.max_unzipped_bytes)} "
                "are decompressed."
            )
        self._infos = {info.filename: info for info in infos}

    def names(self) -> list[str]:
        return list(self._infos)

    def has(self, name: str) -> bool:
        return name in self._infos

    def read(self, name: str) -> bytes:
        """A member's bytes (never more than its declared size, which the checks above bounded)."""
        if name not in self._infos:
            raise DocumentError(f"The {self.what} is damaged: it lacks {name!r}.")
        try:
            return self._zip.read(self._infos[name])
        except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError) as exc:
            raise DocumentError(f"The {self.what} is damaged: {name!r} cannot be read ({exc}).") from exc

    def verify(self) -> None:
        """Inflate every member, counting real output: nothing may exceed its declared size."""
        total = 0
        for info in self._infos.values():
            total += self._inflated_size(info)
            if total > self._limits.max_unzipped_bytes:
                raise DocumentTooLarge(
                    f"The {self.what} expands to more than {_size(self._limits.max_unzipped_bytes)}; "
                    "it was not read."
                )

    def _inflated_size(self, info: zipfile.ZipInfo) -> int:
        start = info.header_offset
        header = self._data[start : start + _LOCAL_HEADER.size]
        if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise DocumentError(f"The {self.what} is damaged: {info.filename!r} has no local header.")
        fields = _LOCAL_HEADER.unpack(header)
        name_length, extra_length = fields[-2], fields[-1]
        offset = start + _LOCAL_HEADER.size + name_length + extra_length
        raw = memoryview(self._data)[offset : offset + info.compress_size]
        if info.compress_type == _STORED:
            return min(len(raw), info.file_size)
        inflater = zlib.decompressobj(-15)
        produced = 0
        chunk = 1024 * 1024
        for position in range(0, len(raw), chunk):
            data: bytes | memoryview = raw[position : position + chunk]
            while data:
                try:
                    out = inflater.decompress(data, info.file_size - produced + 1)
                except zlib.error as exc:
                    raise DocumentError(
                        f"The {self.what} is damaged: {info.filename!r} does not inflate ({exc})."
                    ) from exc
                produced += len(out)
                if produced > info.file_size:
                    raise DocumentTooLarge(
                        f"The {self.what} is forged: {info.filename!r} expands beyond the "
                        f"{_size(info.file_size)} it declares (a zip bomb's trick); it was not read."
                    )
                data = inflater.unconsumed_tail
                if inflater.eof:
                    return produced
        return produced
