"""Origins and URLs that integrators give us and that we put into headers of the subject's pages.

Two values cross this boundary: the origins an organization allows to frame the approval page
(they become the CSP ``frame-ancestors``) and a request's ``redirectUrl`` (its origin joins the
CSP ``form-action``; the whole URL becomes a ``Location``). Both are checked when they are given
and again, by the same functions, where a header is built from them, so a value stored before a
rule existed, or written around the API, never reaches a header unparsed.

An origin is exactly ``scheme://host[:port]``: the host a DNS name (IDNA, stored in its ASCII
form, as browsers serialize origins) or an IP literal, the port 1 to 65535 and left out when it
is the scheme's default. Nothing else: no wildcard, quote, semicolon, comma, space, path, query,
fragment or user info.
"""

from __future__ import annotations

import ipaddress
import logging
import re

import idna

from core.text import has_space_or_control

log = logging.getLogger("mandatum.origins")

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL = 2048
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PORT = re.compile(r"[0-9]{1,5}")
# what a URL may hold after its origin: RFC 3986's unreserved, reserved and percent characters,
# less the quote, angle brackets, backslash, braces, caret, backtick, pipe and anything not ASCII
_REST = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


class BadOrigin(ValueError):
    """The value is not an origin (or a URL) of the accepted shape; the message says why."""


def _host(raw: str) -> str:
    """The canonical form of a URL's host, or BadOrigin."""
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise BadOrigin("the host is not a valid IPv6 literal")
        try:
            address = ipaddress.IPv6Address(raw[1:-1])
        except ValueError as exc:
            raise BadOrigin("the host is not a valid IPv6 literal") from exc
        if address.scope_id is not None:  # fe80::1%eth0 names an interface of ours, not a site
            raise BadOrigin("the host is not a valid IPv6 literal")
        return f"[{address.compressed}]"
    if re.fullmatch(r"[0-9.]+", raw):
        try:  # dotted quad only: no 0x7f.1, 2130706433 or 0177.0.0.1 spellings
            return str(ipaddress.IPv4Address(raw))
        except ValueError as exc:
            raise BadOrigin("the host is not a valid IPv4 address") from exc
    try:
        ascii_host = idna.encode(raw, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise BadOrigin("the host is not a valid domain name") from exc
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise BadOrigin("the host is not a valid domain name")
    if re.fullmatch(r"[0-9]+|0x[0-9a-f]*", labels[-1]):  # browsers read such a host as an IPv4 address
        raise BadOrigin("the host is not a valid IPv4 address")
    return ascii_host


def _split_netloc(netloc: str) -> tuple[str, int | None]:
    if "@" in netloc:
        raise BadOrigin("user info (user:password@) is not allowed")
    if netloc.startswith("["):
        end = netloc.find("]")
        host, rest = netloc[: end + 1], netloc[end + 1 :]
    else:
        host, _, port_text = netloc.partition(":")
        rest = f":{port_text}" if ":" in netloc else ""
    if not rest:
        return host, None
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]) or not 1 <= int(rest[1:]) <= 65535:
        raise BadOrigin("the port must be a number from 1 to 65535")
    return host, int(rest[1:])


def _origin(scheme: str, netloc: str) -> tuple[str, str]:
    """(canonical origin, canonical host) of a scheme and a netloc, or BadOrigin."""
    if scheme not in DEFAULT_PORTS:
        raise BadOrigin("the scheme must be https")
    host_text, port = _split_netloc(netloc)
    if not host_text:
        raise BadOrigin("the host is missing")
    host = _host(host_text)
    shown_port = "" if port is None or port == DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{shown_port}", host


def _plain(value: str) -> str:
    if not value or len(value) > MAX_URL:
        raise BadOrigin(f"must be 1 to {MAX_URL} characters")
    if has_space_or_control(value):
        raise BadOrigin("spaces, control and bidi override characters are not allowed")
    return value


def _http_allowed(scheme: str, host: str, allow_loopback_http: bool) -> None:
    if scheme == "http" and not (allow_loopback_http and host in LOOPBACK_HOSTS):
        raise BadOrigin("the scheme must be https (http only for a local host outside production)")


def check_origin(value: str, allow_loopback_http: bool) -> str:
    """The canonical form of an origin ``scheme://host[:port]`` (https; http only on a loopback
    host when ``allow_loopback_http``), or BadOrigin. A trailing ``/`` is tolerated, nothing else."""
    text = _plain(value.strip())
    text = text[:-1] if text.endswith("/") else text
    match = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)", text)
    if not match:
        raise BadOrigin("must be an origin: scheme://host[:port], without a path")
    origin, host = _origin(match.group(1).lower(), match.group(2).lower())
    _http_allowed(match.group(1).lower(), host, allow_loopback_http)
    return origin


def check_url(value: str, allow_loopback_http: bool) -> str:
    """A well-formed absolute URL to send a person's browser to: https (http only on a loopback
    host when ``allow_loopback_http``), no user info, a valid host and port, and only URL
    characters after the origin. Returned with its origin in canonical form."""
    origin, rest = _url_parts(value, allow_loopback_http)
    return origin + rest


def _url_parts(value: str, allow_loopback_http: bool) -> tuple[str, str]:
    text = _plain(value)
    match = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)", text, flags=re.S)
    if not match:
        raise BadOrigin("must be an absolute https URL")
    scheme = match.group(1).lower()
    origin, host = _origin(scheme, match.group(2).lower())
    _http_allowed(scheme, host, allow_loopback_http)
    rest = match.group(3)
    if rest and rest[0] not in "/?#":
        raise BadOrigin("must be an absolute https URL")
    if not _REST.fullmatch(rest):
        raise BadOrigin("holds characters a URL cannot hold unencoded (quotes, spaces, <>, \\, non-ASCII)")
    return origin, rest


def origin_of_url(url: str | None, allow_loopback_http: bool) -> str | None:
    """The canonical origin of a URL that passes ``check_url``, else None (and a warning): where
    a header is built from a stored URL."""
    if not url:
        return None
    try:
        return _url_parts(url, allow_loopback_http)[0]
    except BadOrigin as exc:
        log.warning("a stored URL is not used in a header: %s", exc)
        return None


def safe_url(url: str | None, allow_loopback_http: bool) -> str | None:
    """``url`` as ``check_url`` accepts it, else None (and a warning): for a ``Location``."""
    if not url:
        return None
    try:
        return check_url(url, allow_loopback_http)
    except BadOrigin as exc:
        log.warning("a stored URL is not used in a header: %s", exc)
        return None


def header_origins(values: list[str], allow_loopback_http: bool) -> list[str]:
    """The stored origins that are still origins, each in canonical form; any other value is
    dropped with a warning, never put into a header."""
    out: list[str] = []
    for value in values:
        try:
            out.append(check_origin(value, allow_loopback_http))
        except BadOrigin as exc:
            log.warning("a stored frame origin is not used in a header: %s", exc)
    return list(dict.fromkeys(out))
