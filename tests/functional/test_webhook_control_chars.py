"""Issue 30 item 7: a control character in the Slack webhook URL never leaks the token.

http.client quotes a URL it refuses with ``repr`` (``\\x00``), JSON logging writes ``\\u0000``,
percent-encoding ``%00``: each rewrites the character between two pieces of the token, and a redaction
that looked for the raw path found neither. The redaction now works from the raw URL, before anything
escapes it, and a URL with a control character is refused before the client sees it. Every control
character (C0, DEL, C1) against every error path: connection error, HTTP error, timeout, malformed
URL; Slack is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from ecs_guardrail.adapters.alerts import SlackWebhook, WebhookUrl, control_characters, redact_webhook
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.handlers.runtime import Clients, Runtime

SECRET = ("T0SECRETA1", "B0SECRETB2", "XSECRETTOKEN3", "TOKENTAIL4")
ALERT = Alert(subject="s", text="scaled dev/api")
CONTROL = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))]
PATHS = ("connection_error", "http_error", "timeout", "malformed_url")


class _Server(BaseHTTPRequestHandler):
    mode = "http_error"
    hits = 0

    def do_POST(self):  # noqa: N802
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if type(self).mode == "timeout":
            time.sleep(1.6)  # longer than the client's 1 s timeout
        try:
            self.send_response(500 if type(self).mode != "ok" else 200)
            self.end_headers()
            self.wfile.write(b"error " + self.path.encode())  # an error body that echoes the path
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left (the timeout path)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def _base(server: str, path: str) -> str:
    _Server.mode = "timeout" if path == "timeout" else "http_error"
    return _closed_port() if path == "connection_error" else server


def _url(base: str, char: str, path: str) -> str:
    token = f"{SECRET[2]}{char}{SECRET[3]}"
    if path == "malformed_url":
        token = f"{SECRET[2]} {char}'\"{SECRET[3]}"  # a mis-paste: a space and quotes around the character
    return f"{base}/services/{SECRET[0]}/{SECRET[1]}/{token}"


def _leaks(text: str) -> list[str]:
    return [p for p in SECRET if p in text]


class _Secret:
    secret_id = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:slack-AbCdEf"

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self) -> str:
        return self.url


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("char", CONTROL, ids=lambda c: f"U+{ord(c):04X}")
def test_a_control_character_in_the_webhook_url_never_reaches_logs_or_errors(server, caplog, capsys, char, path):
    url = _url(_base(server, path), char, path)
    rt = Runtime(settings=None, history=None, clients=Clients(), webhook=_Secret(url))  # type: ignore[arg-type]
    hits = _Server.hits
    with caplog.at_level(logging.DEBUG):
        deliveries = rt.send(ALERT)
    assert deliveries and not deliveries[0].ok
    out = capsys.readouterr()
    everything = "\n".join([*(d.error or "" for d in deliveries), out.out, out.err,
                            *(f"{r.getMessage()}\n{r.exc_text or ''}" for r in caplog.records)])
    assert f"U+{ord(char):04X}" in deliveries[0].error  # says what is wrong, by code point
    assert _leaks(everything) == [], everything
    assert _Server.hits == hits  # refused before any request: the client never formats the URL


@pytest.mark.parametrize("char", CONTROL, ids=lambda c: f"U+{ord(c):04X}")
def test_redaction_hides_every_escaped_form_of_the_token(char):
    """The redaction on its own (below the refusal): whatever escape an error applies to the path."""
    url = f"https://hooks.example.net/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}{char}{SECRET[3]}"
    path = url.split("hooks.example.net", 1)[1]
    segment = path.rsplit("/", 1)[1]  # an error that quotes the token's segment alone, or rewrites the character
    texts = [repr(path), json.dumps(path), json.dumps({"error": path}), quote(path), quote(path, safe="/"),
             path.encode("unicode_escape").decode(), f"{path!a}", path, repr(segment), json.dumps(segment),
             repr(segment.encode("utf-8")), path.replace(char, ""), path.replace(char, "\ufffd"),
             path.replace(char, "?"), f"...{segment[3:]}"]
    try:  # http.client's own refusal (the text that leaked)
        http.client.HTTPConnection("127.0.0.1", 9).putrequest("POST", path)
    except (http.client.InvalidURL, UnicodeError) as exc:
        texts.append(f"{type(exc).__name__}: {exc}")
    for text in texts:
        out = redact_webhook(text, url)
        assert _leaks(out) == [], (text, out)
        assert _leaks(json.dumps(out)) == []


@pytest.mark.parametrize("path", ["connection_error", "http_error", "timeout"])
def test_every_error_path_of_a_clean_url_is_redacted(server, caplog, path):
    url = f"{_base(server, path)}/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}{SECRET[3]}"
    with caplog.at_level(logging.DEBUG):
        result = SlackWebhook(url, timeout_s=1, max_retries=0).send(ALERT)
    assert not result.ok and result.error
    assert _leaks(result.error) == [] and _leaks(caplog.text) == [], (result.error, caplog.text)


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x85", "\t"], ids=lambda c: f"U+{ord(c):04X}")
def test_the_secret_reader_refuses_a_control_character_without_quoting_it(char):
    url = f"https://hooks.slack.com/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}{char}{SECRET[3]}"
    reader = WebhookUrl.__new__(WebhookUrl)
    reader._provider = type("P", (), {"get": staticmethod(lambda *a, **k: url)})()
    reader.secret_id, reader.max_age_s = "s", 300
    with pytest.raises(ValueError) as err:
        reader.get()
    assert "control character" in str(err.value) and _leaks(str(err.value)) == []
    assert control_characters(url) == [len(url) - len(SECRET[3]) - 1]
