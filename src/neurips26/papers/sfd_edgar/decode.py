"""Input handling (spec step 1): bytes to text, binary detection, SGML submissions."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MAGIC = (
    (b"%PDF", "PDF"),
    (b"\x89PNG", "PNG image"),
    (b"GIF8", "GIF image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"PK\x03\x04", "ZIP archive (or XLSX/DOCX)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\xd0\xcf\x11\xe0", "OLE2 document (XLS/DOC)"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_\-]+)""", re.I)


def detect_binary(data: bytes) -> str | None:
    """The name of a binary format recognised by its magic number, else ``None``."""
    head = data.lstrip()[:8]
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def decode_html(data: str | bytes, *, name: str = "data") -> tuple[str, str]:
    """Decode a filing to text.

    Parameters
    ----------
    data : str or bytes
        A str is returned as is. Bytes are decoded with the charset of a ``<meta>`` or XML
        declaration if there is one, else UTF-8, else cp1252 (older filings).
    name : str
        The argument's name in error messages (callers pass their own, e.g. ``"html"``).

    Returns
    -------
    text : str
    encoding : str
        The codec that decoded it (``"str"`` for str input).

    Raises
    ------
    TypeError
        For anything but str or bytes.
    ValueError
        For PDF, image or archive bytes (naming the type), or bytes that no supported
        charset decodes (naming the byte offset).

    Examples
    --------
    >>> decode_html("<p>x</p>".encode("cp1252"))
    ('<p>x</p>', 'utf-8')
    >>> decode_html(b"%PDF-1.7 ...")
    Traceback (most recent call last):
    ...
    ValueError: data: the input is a PDF, not HTML or text
    """
    if isinstance(data, str):
        return data, "str"
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"{name} must be str or bytes, got {type(data).__name__}")
    kind = detect_binary(data)
    if kind:
        raise ValueError(f"{name}: the input is a {kind}, not HTML or text")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    candidates = []
    for pattern in (_META_CHARSET, _XML_ENCODING):
        m = pattern.search(data[:4096])
        if m:
            candidates.append(m.group(1).decode("ascii").lower())
    ignored = [c for c in candidates if _wide_declared_without_nul(c, data)]
    candidates = [c for c in candidates if c not in ignored]
    candidates += ["utf-8", "cp1252"]
    note = (f" (declared {', '.join(ignored)} ignored: the bytes hold no NUL, so they are "
            "not UTF-16/32)") if ignored else ""
    first_error: UnicodeDecodeError | None = None
    for enc in dict.fromkeys(candidates):
        try:
            return data.decode(enc), enc + note
        except (UnicodeDecodeError, LookupError) as exc:
            if isinstance(exc, UnicodeDecodeError) and first_error is None:
                first_error = exc
    pos = first_error.start if first_error else 0
    raise ValueError(
        f"{name}: bytes not decodable as {', '.join(dict.fromkeys(candidates))}; "
        f"first bad byte at offset {pos}"
    )


def _wide_declared_without_nul(charset: str, data: bytes) -> bool:
    """A declared UTF-16/32 that the bytes contradict: markup in those encodings has a NUL
    in every ASCII character, and a file that declares it in ASCII bytes has none."""
    wide = charset.replace("_", "-").startswith(("utf-16", "utf-32", "utf16", "utf32", "ucs-2"))
    return wide and b"\x00" not in data[:4096]


@dataclass(frozen=True)
class SubmissionDocument:
    """One ``<DOCUMENT>`` of an EDGAR full-submission text file."""

    type: str
    sequence: str
    filename: str
    description: str
    text: str


_DOC = re.compile(r"<DOCUMENT>(.*?)(</DOCUMENT>|(?=<DOCUMENT>)|\Z)", re.S | re.I)
_FIELD = re.compile(r"^<(TYPE|SEQUENCE|FILENAME|DESCRIPTION)>([^\n<]*)", re.M | re.I)
_TEXT = re.compile(r"<TEXT>(.*?)(</TEXT>|\Z)", re.S | re.I)


def is_submission(text: str) -> bool:
    """Whether ``text`` is an SGML full submission (``<DOCUMENT>`` blocks with ``<TYPE>``)."""
    head = text[:200_000]
    return bool(re.search(r"<DOCUMENT>", head, re.I) and re.search(r"<TYPE>", head, re.I))


def split_submission(text: str) -> list[SubmissionDocument]:
    """The ``<DOCUMENT>`` blocks of a full submission, in order.

    Raises
    ------
    ValueError
        For a ``<DOCUMENT>`` or ``<TEXT>`` that is never closed, naming its sequence number.

    Examples
    --------
    >>> docs = split_submission("<DOCUMENT>\\n<TYPE>10-K\\n<SEQUENCE>1\\n<TEXT>\\nHi\\n"
    ...                         "</TEXT>\\n</DOCUMENT>")
    >>> docs[0].type, docs[0].sequence, docs[0].text.strip()
    ('10-K', '1', 'Hi')
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out = []
    for m in _DOC.finditer(text):
        body = m.group(1)
        fields = {k.upper(): v.strip() for k, v in _FIELD.findall(body)}
        seq = fields.get("SEQUENCE", "?")
        if not m.group(2) or not m.group(2).upper().startswith("</DOCUMENT"):
            raise ValueError(f"text: <DOCUMENT> with sequence {seq} is never closed")
        t = _TEXT.search(body)
        if t is None:
            body_text = ""
        else:
            if not t.group(2):
                raise ValueError(f"text: <TEXT> of document sequence {seq} is never closed")
            body_text = t.group(1)
        out.append(
            SubmissionDocument(
                type=fields.get("TYPE", ""),
                sequence=seq,
                filename=fields.get("FILENAME", ""),
                description=fields.get("DESCRIPTION", ""),
                text=body_text,
            )
        )
    return out
