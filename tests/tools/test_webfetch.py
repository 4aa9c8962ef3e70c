"""WebFetch against a real HTTP server on 127.0.0.1, through the tool itself.

The rules as sentences: HTML becomes Markdown (without scripts and styles), other text comes
as it is in its own character set, a binary body is saved to a file, a redirect within the
site is followed and one to another site is reported in Claude Code's words and not
followed, and every limit (status, size, redirects, time) is an error result, never an
exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from files_harness import Harness
from web_server import PNG, WebServer, web_server

from stdio_executor.tools.base import InputError
from stdio_executor.tools.web import fetch

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[WebServer]:
    with web_server() as s:
        yield s


async def test_html_becomes_markdown_with_the_prompt_stated(
    harness: Harness, server: WebServer
) -> None:
    url = f"{server.base}/page.html"
    text = await harness.ok("WebFetch", {"url": url, "prompt": "What is new?"})
    head, _, body = text.partition("\n---\n")
    assert head.startswith(f"Fetched {url} (200 OK, text/html, ")
    assert "converted from HTML to Markdown" in head
    assert head.endswith("Prompt: What is new?\n")
    assert "# Release notes" in body
    assert "Version **2.0** adds [docs](/docs)." in body
    assert "- first\n- second" in body
    assert 'print("hi")' in body
    assert "secret" not in body and "color: red" not in body and "Tab title" not in body
    assert server.user_agents[-1].startswith("stdio-executor-WebFetch/")


async def test_text_and_json_come_as_they_are(harness: Harness, server: WebServer) -> None:
    text = await harness.ok("WebFetch", {"url": f"{server.base}/notes.txt", "prompt": "p"})
    assert text.endswith("\n---\ncafé au lait\n")
    assert "(200 OK, text/plain, 13 bytes), as text" in text
    text = await harness.ok("WebFetch", {"url": f"{server.base}/data.json", "prompt": "p"})
    assert text.endswith('\n---\n{"answer": 42}')


async def test_a_binary_body_is_saved_to_a_file(harness: Harness, server: WebServer) -> None:
    text = await harness.ok("WebFetch", {"url": f"{server.base}/image.png", "prompt": "p"})
    assert "It is binary content, not text" in text
    saved = Path(text.split("saved as it came to ", 1)[1].split(" (inspect", 1)[0])
    assert saved.suffix == ".png" and await anyio.Path(saved).read_bytes() == PNG


async def test_a_large_page_is_spilled_with_a_preview(harness: Harness, server: WebServer) -> None:
    outcome = await harness.call("WebFetch", {"url": f"{server.base}/big.html", "prompt": "p"})
    assert not outcome.is_error and outcome.truncated
    assert outcome.output_path is not None
    full = await anyio.Path(outcome.output_path).read_text()
    assert full.count("word") == 60_000
    assert isinstance(outcome.content, str) and len(outcome.content) < 10_000


async def test_a_redirect_within_the_site_is_followed(harness: Harness, server: WebServer) -> None:
    text = await harness.ok("WebFetch", {"url": f"{server.base}/moved", "prompt": "p"})
    assert f"Fetched {server.base}/page.html (200 OK" in text
    assert server.requested == ["/moved", "/page.html"]


async def test_a_redirect_to_another_site_is_reported_not_followed(
    harness: Harness, server: WebServer
) -> None:
    url = f"{server.base}/elsewhere"
    text = await harness.ok("WebFetch", {"url": url, "prompt": 'say "hi"'})
    assert text == (
        "REDIRECT DETECTED: The URL redirects to a different host.\n\n"
        f"Original URL: {url}\n"
        "Redirect URL: http://127.0.0.1:9/landing\n"
        "Status: 301 Moved Permanently\n\n"
        "To complete your request, I need to fetch content from the redirected URL. Please use "
        "WebFetch again with these parameters:\n"
        '- url: "http://127.0.0.1:9/landing"\n'
        '- prompt: "say "hi""'
    )
    assert server.requested == ["/elsewhere"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/missing", "failed: HTTP 404 Not Found."),
        ("/loop", "failed: more than 10 redirects."),
        ("/declared-huge", "is larger than 10 MB"),
        ("/streamed-huge", "is larger than 10 MB"),
    ],
)
async def test_failures_are_error_results(
    harness: Harness, server: WebServer, path: str, message: str
) -> None:
    error = await harness.error("WebFetch", {"url": f"{server.base}{path}", "prompt": "p"})
    assert message in error


async def test_a_refused_connection_is_an_error_result(harness: Harness) -> None:
    with web_server() as gone:
        url = f"{gone.base}/page.html"
    error = await harness.error("WebFetch", {"url": url, "prompt": "p"})
    assert error.startswith(f"<tool_use_error>Fetching {url} failed: ")


async def test_a_slow_page_times_out(
    harness: Harness, server: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "TIMEOUT_S", 0.5)
    outcome = await harness.call("WebFetch", {"url": f"{server.base}/slow", "prompt": "p"})
    assert outcome.is_error and outcome.final_status == "timed_out"
    assert "took longer than" in str(outcome.content)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/x", "only http and https"),
        ("https://user:pw@example.com/", "user name or password"),
        ("https://localhost/", "full domain name"),
        ("https://example.com:notaport/", "could not be parsed"),
        ("https://example.com/" + "a" * 2000, "longer than 2000 characters"),
    ],
)
def test_bad_urls_are_refused_before_running(harness: Harness, url: str, why: str) -> None:
    with pytest.raises(InputError, match=why) as info:
        harness.tool("WebFetch").validate({"url": url, "prompt": "p"})
    assert str(info.value).startswith(f'<tool_use_error>Error: Invalid URL "{url}"')


def test_http_is_upgraded_except_on_loopback_and_rules_see_the_domain(harness: Harness) -> None:
    tool = harness.tool("WebFetch")
    remote = tool.validate({"url": "http://Docs.Example.com/a?b=1", "prompt": "p"})
    assert remote.fetch_url == "https://Docs.Example.com/a?b=1"
    assert tool.rule_content(remote) == "domain:docs.example.com"
    local = tool.validate({"url": "http://127.0.0.1:8000/", "prompt": "p"})
    assert local.fetch_url == "http://127.0.0.1:8000/"
    assert tool.rule_content(local) == "domain:127.0.0.1"
