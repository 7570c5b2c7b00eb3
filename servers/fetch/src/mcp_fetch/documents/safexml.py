"""The one way documents parse XML: entities never resolved, no DTD loaded, no network, bounded depth.

External entities (XXE: `<!ENTITY x SYSTEM "file:///etc/passwd">`) and internal ones (the "billion
laughs" expansion) are left unexpanded: an entity reference stays a reference and is never read or
multiplied. libxml2 without `huge_tree` also refuses nesting deeper than 256 levels and text nodes
over 10 MB. Used for feeds, XML documents and the parts of OOXML, OpenDocument and EPUB files read here.
"""

from __future__ import annotations

from lxml import etree

from .model import DocumentError


def parser(*, recover: bool = False) -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        recover=recover,
    )


def parse(data: bytes, *, what: str) -> etree._Element:
    """The root element of `data`, or DocumentError saying why it is not well-formed XML."""
    try:
        root = etree.fromstring(data, parser())
    except etree.XMLSyntaxError as exc:
        if "amplification" in str(exc):
            raise DocumentError(
                f'The {what} declares entities that expand explosively (a "billion laughs" attack); it '
                "was refused without expanding them."
            ) from exc
        raise DocumentError(f"The {what} is not well-formed XML ({exc}).") from exc
    if root is None:
        raise DocumentError(f"The {what} is empty.")
    return root


def local(tag: object) -> str:
    """An element's name without its namespace ('' for comments, entities and the like)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def text_of(element: etree._Element) -> str:
    """All text inside `element`; an entity reference appears as written (`&name;`), never expanded."""
    return "".join(element.itertext())
