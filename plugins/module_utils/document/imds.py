# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only code that talks to IMDS: HTTP with the standard library alone.

The modules and the on-VM event relay (which runs without Ansible) share it, so both follow the same
client rules.

Every request carries `Metadata: true`, never uses a proxy (whatever the
environment says), never follows a redirect and has an explicit timeout.
Connection errors, timeouts, 410, 429 and 5xx are retried with jittered
exponential backoff; 400 and 404 fail at once with IMDS's own error text.
The first request to each endpoint gets a longer timeout, because IMDS may
take up to two minutes to answer the first call after 24 hours without one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import random
import re
import socket
import time

from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import HTTPRedirectHandler, ProxyHandler, Request, build_opener

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import parse_document

# IMDS's address on every Azure VM and the api-version the collection asks for unless told otherwise: their one home
# (the modules' defaults, the relay's, and every play that leaves them unset; tests/test_one_home.py).
DEFAULT_URL = "http://169.254.169.254"
DEFAULT_API_VERSION = "2020-07-01"
SCHEDULED_EVENTS_PATH = "/metadata/scheduledevents"
COMPUTE_PATH = "/metadata/instance/compute"
COMPUTE_API_VERSION = "2021-02-01"
RETRY_STATUSES = (410, 429)
MAX_BODY_BYTES = 16 * 1024 * 1024
SUPPORTED_API_VERSIONS = ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01", "2019-04-01",
                          "2019-08-01", "2020-07-01")


HEADERS = {"Metadata": "true", "User-Agent": "azure_imds.scheduled_events"}


class _NoRedirects(HTTPRedirectHandler):
    """A 3xx answer stays an HTTPError: IMDS clients never follow redirects."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class ImdsError(Exception):
    """IMDS could not be used; the message is one sentence naming the cause."""

    def __init__(self, message, status=None, retryable=False):
        super(ImdsError, self).__init__(message)
        self.status = status
        self.retryable = retryable


def check_base_url(url):
    """Only http(s) base URLs with a host; returns it without a trailing slash."""
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ImdsError("imds_url %r is not an http:// or https:// base URL." % (url,))
    if parts.query or parts.fragment:
        raise ImdsError("imds_url %r must not carry a query or fragment." % (url,))
    return url.rstrip("/")


class ImdsClient:
    """Scheduled Events and compute metadata of the VM behind `base_url`."""

    def __init__(self, base_url=DEFAULT_URL, api_version=DEFAULT_API_VERSION, timeout=5.0, retries=4,
                 first_call_timeout=120.0, backoff=0.5, max_backoff=8.0, sleep=time.sleep, rng=None, send=None):
        """`send(method, url, body, timeout) -> bytes` does one HTTP exchange and raises ImdsError;
        the default sends from this machine with urllib. Windows hosts pass one that goes through
        ansible.windows.win_uri, so that retries and error meaning stay the same everywhere."""
        self.base_url = check_base_url(base_url)
        self.api_version = api_version
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.first_call_timeout = max(float(first_call_timeout), self.timeout)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.calls = 0
        self.attempts = 0
        self._answered = set()
        self._send = send or self._once
        self._opener = build_opener(ProxyHandler({}), _NoRedirects())  # no proxy, whatever the environment says

    # ---------------------------------------------------------------- public calls

    def get_document_body(self):
        """The raw GET body (bytes) of the scheduled-events document."""
        return self._call("GET", SCHEDULED_EVENTS_PATH, self.api_version)

    def approve(self, event_ids):
        """POST StartRequests for `event_ids` (one request for all)."""
        body = json.dumps({"StartRequests": [{"EventId": i} for i in event_ids]})
        self._call("POST", SCHEDULED_EVENTS_PATH, self.api_version, body)

    def get_compute(self):
        """`/metadata/instance/compute` as a dict."""
        body = self._call("GET", COMPUTE_PATH, COMPUTE_API_VERSION)
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ImdsError("IMDS compute metadata at %s is not JSON." % self._url(COMPUTE_PATH, COMPUTE_API_VERSION))
        if not isinstance(data, dict):
            raise ImdsError("IMDS compute metadata is not a JSON object.")
        return data

    # ---------------------------------------------------------------- retries

    def _call(self, method, path, api_version, body=None):
        url = self._url(path, api_version)
        # The slow first answer belongs to the endpoint being enabled, so the budget is per path.
        timeout = self.timeout if path in self._answered else self.first_call_timeout
        self.calls += 1
        attempt = 0
        while True:
            self.attempts += 1
            try:
                data = self._send(method, url, body, timeout)
                self._answered.add(path)
                return data
            except ImdsError as exc:
                if not exc.retryable or attempt >= self.retries:
                    if exc.retryable and self.retries:
                        raise ImdsError("%s (gave up after %d attempts)." % (str(exc).rstrip("."), attempt + 1),
                                        exc.status)
                    raise
            # After the first answer-less attempt the long budget is spent: later
            # attempts use the normal timeout so that a dead IMDS fails in bounded time.
            timeout = self.timeout
            self.sleep(self._delay(attempt))
            attempt += 1

    def _delay(self, attempt):
        """Full jitter: uniform in [0, min(cap, base * 2^attempt)]."""
        return self.rng.uniform(0, min(self.max_backoff, self.backoff * (2 ** attempt)))

    def _url(self, path, api_version):
        return "%s%s?api-version=%s" % (self.base_url, path, api_version)

    def _once(self, method, url, body, timeout):
        try:
            data = None if body is None else body.encode("utf-8")
            headers = HEADERS if data is None else dict(HEADERS, **{"Content-Type": "application/json"})
            request = Request(url, data=data, method=method, headers=headers)
            with self._opener.open(request, timeout=timeout) as response:
                data = response.read(MAX_BODY_BYTES + 1)
        except HTTPError as exc:
            raise _http_error(method, url, exc)
        except (socket.timeout, TimeoutError):
            raise timeout_error(method, url, timeout)
        except URLError as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise timeout_error(method, url, timeout)
            raise unreachable_error(url, reason)
        except (HTTPException, socket.error, ValueError) as exc:
            # Connection reset, remote disconnected, truncated body (IncompleteRead).
            raise ImdsError("the connection to IMDS at %s broke (%s)." % (url, _describe(exc)), retryable=True)
        return checked_size(url, data)


def read_document(client):
    """GET and parse the document; None for an empty body ("no document yet")."""
    return parse_document(client.get_document_body())


def checked_size(url, data):
    """The body, unless it is too big to be a Scheduled Events document."""
    if len(data) > MAX_BODY_BYTES:
        raise ImdsError("IMDS answered %s with more than %d MiB; refusing to parse it."
                        % (url, MAX_BODY_BYTES // (1024 * 1024)))
    return data


def timeout_error(method, url, timeout):
    return ImdsError("IMDS did not answer %s %s within %g s." % (method, url, timeout), retryable=True)


def unreachable_error(url, cause):
    return ImdsError("cannot reach IMDS at %s (%s)." % (url, cause), retryable=True)


def _describe(exc):
    text = str(exc)
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


def _http_error(method, url, exc):
    try:
        raw = exc.read()
    except Exception:  # a broken error body must not hide the status
        raw = b""
    location = exc.headers.get("Location") if exc.headers else None
    return status_error(method, url, exc.code, raw, exc.reason, location)


def status_error(method, url, status, raw, reason=None, location=None):
    """The ImdsError for a non-2xx answer: redirects and 400/404 final, 410, 429 and 5xx retryable."""
    if 300 <= status < 400:
        return ImdsError("IMDS answered %s %s with a redirect (HTTP %d to %s); IMDS clients never follow redirects."
                         % (method, url, status, location or "?"), status)
    retryable = status in RETRY_STATUSES or status >= 500
    text = error_text(raw, reason)
    return ImdsError("IMDS answered %s %s with HTTP %d: %s." % (method, url, status, text), status, retryable)


def error_text(raw, reason=None):
    """IMDS's own error sentence from an error body: JSON `error`, else an HTML page's title (a stand-in such as
    Microsoft's mock server answers an unknown path with a web framework's page), else the first line of the
    text, else the reason; never a page's markup."""
    try:
        data = json.loads(raw.decode("utf-8"))
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return _one_line(data["error"])
    except (UnicodeDecodeError, ValueError):
        pass
    text = raw.decode("utf-8", "replace").strip()
    if _HTML.search(text):
        title = _TITLE.search(text)
        text = _TAG.sub(" ", title.group(1) if title else "").strip()
        text = _STATUS_PREFIX.sub("", text)  # "404 Not Found" -> "Not Found": the status is said already
        if not text:
            text = reason or "an HTML page"
    return _one_line(text or reason or "no details")


_HTML = re.compile(r"^\s*<|<html|<!doctype", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_STATUS_PREFIX = re.compile(r"^\d{3}\s+")


def _one_line(text):
    line = " ".join(str(text).split())
    return (line[:200] if len(line) <= 200 else line[:197] + "...").rstrip(".")
