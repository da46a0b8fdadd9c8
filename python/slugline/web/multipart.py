"""A `multipart/form-data` body read as it arrives: small fields kept in memory (`MAX_FIELD` bytes each), one file
part streamed to a temporary file of at most `limit` bytes and checked to be UTF-8 text on the way (the caller says
what a file that is not becomes: the schema's `binary` file is any bytes, so not a malformed request), so a worker holds
a few chunks of an upload however large it is. Every way a body can be wrong is a 400 (413 past a limit, 408 for a
client that stops sending), never a 500.

The parser keeps a buffer of at most one chunk plus a delimiter: a part's bytes are passed on up to the last bytes
that could still begin the next delimiter (`\\r\\n--boundary`), which wait for the next chunk.
"""

from __future__ import annotations

import codecs
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import anyio

from slugline.common.errors import BadRequest, PayloadTooLarge, RequestTimeout

MAX_FIELD = 1024  # bytes of a form field that is not the file
MAX_HEADERS = 8192  # bytes of a part's headers
MAX_PARTS = 16
_BOUNDARY = re.compile(r'boundary="?([^";]{1,200})"?')
_NAME = re.compile(r'\bname="([^"]*)"')
_FILENAME = re.compile(r'\bfilename="([^"]*)"')


@dataclass
class Upload:
    """The form's fields, and its file (None when the form had no part named so) with its name and size."""

    fields: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    filename: str = ""
    size: int = 0
    text: bool = True  # the file is UTF-8 (else `bad_byte` is where it stops being so, from 0)
    bad_byte: int = 0


async def receive(
    content_type: str, chunks: AsyncIterator[bytes], file_field: str, folder: str, limit: int, idle: float
) -> Upload:
    """Reads the body into an `Upload` whose file is made in `folder`; `idle`: seconds the client may send nothing."""
    found = _BOUNDARY.search(content_type)
    if not content_type.lower().startswith("multipart/form-data") or found is None:
        raise BadRequest("the request body must be sent as multipart/form-data (a form with a file)")
    reader = _Reader(found.group(1).encode("latin-1"), file_field, folder, limit)
    try:
        while True:
            with anyio.fail_after(idle):
                chunk = await anext(chunks, None)
            if chunk is None:
                break
            reader.feed(chunk)
    except TimeoutError:
        reader.discard()
        raise RequestTimeout(f"the upload stopped arriving for {idle:g} s") from None
    except BaseException:
        reader.discard()
        raise
    return reader.finish()


class _Reader:
    def __init__(self, boundary: bytes, file_field: str, folder: str, limit: int) -> None:
        self.first, self.next = b"--" + boundary, b"\r\n--" + boundary
        self.file_field, self.folder, self.limit = file_field, folder, limit
        self.upload = Upload()
        self.buffer = b""
        self.state = "preamble"  # then "after" (a delimiter read), "headers", "body", "done"
        self.parts = 0
        self.name = ""
        self.value = bytearray()
        self.file: IO[bytes] | None = None
        self.text = codecs.getincrementaldecoder("utf-8")()

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while self._step():
            pass

    def _step(self) -> bool:
        """One move of the parser over the buffer; False when it needs more bytes."""
        if self.state == "done":
            self.buffer = b""
            return False
        moved: bool = getattr(self, f"_{self.state}")()
        return moved

    def _preamble(self) -> bool:
        at = self.buffer.find(self.first)
        if at < 0:
            self.buffer = self.buffer[-len(self.first) :]
            return False
        self.buffer, self.state = self.buffer[at + len(self.first) :], "after"
        return True

    def _after(self) -> bool:
        if len(self.buffer) < 2:
            return False
        end, self.buffer = self.buffer[:2], self.buffer[2:]
        if end == b"--":
            self.state, self.buffer = "done", b""
            return False
        if end != b"\r\n":
            raise BadRequest("malformed multipart body: a delimiter is not followed by a line end")
        self.state = "headers"
        return True

    def _headers(self) -> bool:
        at = self.buffer.find(b"\r\n\r\n")
        if at < 0:
            if len(self.buffer) > MAX_HEADERS:
                raise BadRequest("malformed multipart body: a part's headers are too long")
            return False
        self._start(self.buffer[:at].decode("latin-1"))
        self.buffer, self.state = self.buffer[at + 4 :], "body"
        return True

    def _body(self) -> bool:
        at = self.buffer.find(self.next)
        if at < 0:
            cut = max(0, len(self.buffer) - len(self.next) + 1)  # what could begin a delimiter waits for more
            self._take(self.buffer[:cut])
            self.buffer = self.buffer[cut:]
            return False
        self._take(self.buffer[:at])
        self._end()
        self.buffer, self.state = self.buffer[at + len(self.next) :], "after"
        return True

    def _start(self, headers: str) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise BadRequest(f"the form may hold at most {MAX_PARTS} fields")
        found = _NAME.search(headers)
        if found is None:
            raise BadRequest("malformed multipart body: a part has no name")
        self.name, self.value = found.group(1), bytearray()
        if self.name == self.file_field:
            if self.file is not None:
                raise BadRequest(f"the form holds more than one '{self.file_field}'")
            filename = _FILENAME.search(headers)
            self.upload.filename = filename.group(1) if filename else ""
            self.file = tempfile.NamedTemporaryFile(dir=self.folder, prefix="import-", delete=False)  # noqa: SIM115
            self.upload.path = Path(self.file.name)

    def _take(self, data: bytes) -> None:
        if not data:
            return
        if self.name != self.file_field:
            self.value += data
            if len(self.value) > MAX_FIELD:
                raise BadRequest(f"the form field '{self.name[:40]}' must be at most {MAX_FIELD} bytes")
            return
        assert self.file is not None
        self.upload.size += len(data)
        if self.upload.size > self.limit:
            raise PayloadTooLarge(f"the file must be at most {self.limit >> 20} MiB")
        if self.upload.text:
            try:
                self.text.decode(data)
            except UnicodeDecodeError as exc:
                self.upload.text, self.upload.bad_byte = False, self.upload.size - len(data) + exc.start
        self.file.write(data)

    def _end(self) -> None:
        if self.name == self.file_field:
            assert self.file is not None
            try:
                self.text.decode(b"", final=True)
            except UnicodeDecodeError:
                self.upload.text, self.upload.bad_byte = False, self.upload.size
            self.file.close()
        else:
            try:
                self.upload.fields[self.name] = self.value.decode()
            except UnicodeDecodeError:
                raise BadRequest(f"the form field '{self.name[:40]}' must be UTF-8 text") from None

    def finish(self) -> Upload:
        if self.state != "done":
            self.discard()
            raise BadRequest("malformed multipart body: it ends before its closing delimiter")
        return self.upload

    def discard(self) -> None:
        """The partial file goes (the request failed)."""
        if self.file is not None:
            self.file.close()
        if self.upload.path is not None:
            self.upload.path.unlink(missing_ok=True)
