"""The test infrastructure itself: the SMTP server, the browser, a cross-origin iframe."""

from __future__ import annotations

import asyncio
import html
import smtplib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.async_api import Page, expect

from tests.support.smtp_server import SmtpServer, text_of

# ---------------------------------------------------------------- e-mail


def _send(host: str, port: int, message: EmailMessage, to: list[str]) -> None:
    with smtplib.SMTP(host, port, timeout=10) as client:
        client.send_message(message, from_addr="sender@mandatum.test", to_addrs=to)


async def test_smtp_server_receives_multipart_mail(smtp_server: SmtpServer) -> None:
    tag = uuid.uuid4().hex[:8]
    first, second = f"alice-{tag}@example.test", f"Bob-{tag}@example.test"
    message = EmailMessage()
    message["From"] = "Mandatum <sender@mandatum.test>"
    message["To"] = f"{first}, {second}"
    message["Subject"] = f"Approve the payment ({tag}) — ünïcode"
    message.set_content(f"Hello,\nplease approve: https://approve.test/{tag}\n")
    message.add_alternative(
        f"<html><body><p>Hello,</p><p>please <a href='#'>approve</a> {tag}</p></body></html>", subtype="html"
    )

    await asyncio.to_thread(_send, smtp_server.host, smtp_server.port, message, [first, second])

    got = await smtp_server.wait_for(second.upper(), timeout=5)  # recipients match case-insensitively
    assert got["Subject"] == f"Approve the payment ({tag}) — ünïcode"
    assert text_of(got) == f"Hello,\nplease approve: https://approve.test/{tag}\n"
    assert (await smtp_server.wait_for(first, timeout=1))["Subject"] == got["Subject"]
    mail = next(m for m in smtp_server.received_for(first))
    assert mail.mail_from == "sender@mandatum.test"
    assert mail.rcpt_tos == [first, second]

    # A predicate that matches nothing: the message is there, but it is not that one.
    with pytest.raises(AssertionError, match="matching the predicate"):
        await smtp_server.wait_for(first, timeout=0.2, predicate=lambda m: "nope" in str(m["Subject"]))


async def test_smtp_server_wait_for_an_unknown_recipient_fails_fast(smtp_server: SmtpServer) -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"no e-mail to nobody-\w+@example.test within 0.3s"):
        await smtp_server.wait_for(f"nobody-{uuid.uuid4().hex[:8]}@example.test", timeout=0.3)
    assert time.monotonic() - started < 2


def test_text_of_falls_back_to_the_html_without_tags() -> None:
    message = EmailMessage()
    message["Subject"] = "html only"
    message.set_content(
        "<html><head><title>T</title><style>p{color:red}</style></head><body>"
        "<p>Tom &amp; Jerry</p>\n  <p>approve\n   <b>now</b></p></body></html>",
        subtype="html",
    )
    assert text_of(message) == "Tom & Jerry\napprove now"


# ---------------------------------------------------------------- browser

Route = Callable[[BaseHTTPRequestHandler, str, bytes], tuple[int, str]]


@contextmanager
def serving(routes: dict[str, Route], host: str = "127.0.0.1") -> Iterator[int]:
    """A tiny HTTP server in a thread; each route gives (status, HTML). Yields the bound port."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bytes) -> None:
            url = urlsplit(self.path)
            route = routes.get(url.path)
            status, page = route(self, url.query, body) if route else (404, "not found")
            data = page.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(b"")

        def do_POST(self) -> None:
            self._answer(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


FORM = """<!doctype html><html><head><meta charset="utf-8"><title>Form</title></head><body>
<form method="post" action="/echo">
  <label for="name">Your name</label> <input id="name" name="name" type="text">
  <button type="submit">Send it</button>
</form></body></html>"""


def _form(_: BaseHTTPRequestHandler, query: str, body: bytes) -> tuple[int, str]:
    return 200, FORM


def _phone_form(_: BaseHTTPRequestHandler, query: str, body: bytes) -> tuple[int, str]:
    viewport = '<meta name="viewport" content="width=device-width, initial-scale=1">'
    return 200, FORM.replace("<head>", f"<head>{viewport}")


def _echo(_: BaseHTTPRequestHandler, query: str, body: bytes) -> tuple[int, str]:
    name = parse_qs(body.decode())["name"][0]
    return 200, f"<!doctype html><html><body><p id='echo'>You said: {html.escape(name)}</p></body></html>"


async def test_browser_fills_a_form_by_label_and_submits_by_role(browser_page: Page) -> None:
    with serving({"/": _form, "/echo": _echo}) as port:
        await browser_page.goto(f"http://127.0.0.1:{port}/")
        await browser_page.get_by_label("Your name").fill("Zoë <script>")
        await browser_page.get_by_role("button", name="Send it").click()
        await expect(browser_page.get_by_text("You said: Zoë <script>")).to_be_visible(timeout=5_000)
        assert browser_page.url == f"http://127.0.0.1:{port}/echo"


async def test_phone_page_is_a_touch_phone(phone_page: Page) -> None:
    # Like a real phone, a page without a viewport meta tag is laid out 980 px wide and shrunk;
    # with one, at the phone's 390 px: a phone check sees the difference.
    with serving({"/": _form, "/phone": _phone_form}) as port:
        await phone_page.goto(f"http://127.0.0.1:{port}/")
        assert await phone_page.evaluate("window.innerWidth") == 980
        await phone_page.goto(f"http://127.0.0.1:{port}/phone")
        width = await phone_page.evaluate("window.innerWidth")
        touch = await phone_page.evaluate("navigator.maxTouchPoints > 0 && 'ontouchstart' in window")
        assert (width, touch) == (390, True)
        await phone_page.get_by_label("Your name").tap()
        await expect(phone_page.get_by_label("Your name")).to_be_focused()


PARENT = """<!doctype html><html><head><meta charset="utf-8"><title>Integrator</title></head><body>
<script>
  window.received = [];
  window.addEventListener("message", (event) => {
    window.received.push({data: event.data, origin: event.origin});
  });
</script>
<iframe id="approval" title="Approval" src="{child}" width="400" height="300"></iframe>
</body></html>"""

CHILD = """<!doctype html><html><head><meta charset="utf-8"><title>Approval</title></head><body>
<button id="approve" type="button">Approve</button>
<script>
  const parentOrigin = new URLSearchParams(location.search).get("parent");
  // To an origin that is not the parent's: the browser must drop it.
  window.parent.postMessage({"wrong": 1}, "http://wrong.invalid");
  window.parent.postMessage({"hello": 1}, parentOrigin);
  document.getElementById("approve").addEventListener("click", () => {
    window.parent.postMessage({"clicked": 1}, parentOrigin);
  });
</script></body></html>"""


def _parent(_: BaseHTTPRequestHandler, query: str, body: bytes) -> tuple[int, str]:
    return 200, PARENT.replace("{child}", html.escape(parse_qs(query)["child"][0]))


async def test_cross_origin_iframe_posts_messages_to_its_parent(browser_page: Page) -> None:
    # Two servers, and two host names: the iframe is cross-origin and cross-site (a third party).
    with serving({"/child": lambda *_: (200, CHILD)}) as child_port, serving({"/": _parent}) as parent_port:
        parent_origin = f"http://127.0.0.1:{parent_port}"
        child_origin = f"http://localhost:{child_port}"
        child_url = f"{child_origin}/child?parent={parent_origin}"
        await browser_page.goto(f"{parent_origin}/?child={quote(child_url, safe='')}")

        await browser_page.wait_for_function("window.received.length >= 1", timeout=5_000)
        # The cross-origin frame is reachable too, to click in it as a person would.
        await browser_page.frame_locator("#approval").get_by_role("button", name="Approve").click()
        await browser_page.wait_for_function("window.received.length >= 2", timeout=5_000)

        received = await browser_page.evaluate("window.received")
        assert received == [
            {"data": {"hello": 1}, "origin": child_origin},
            {"data": {"clicked": 1}, "origin": child_origin},
        ]
        frame = browser_page.frame(url=lambda url: url.startswith(child_origin))
        assert frame is not None
        assert await frame.evaluate("window.origin") == child_origin
