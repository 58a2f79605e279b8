# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only HTTP to Azure's control plane: a token (a service principal's, the controller's managed identity's, or
the Azure CLI's login's), then JSON POSTs to Resource Manager.

Standard library only, so the tasks run wherever Ansible does. TLS is always verified, against the system's CAs
or the bundle in REQUESTS_CA_BUNDLE or SSL_CERT_FILE (the variables the Azure SDK and OpenSSL read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import ssl
import time

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import quote, urlencode
from ansible.module_utils.urls import open_url

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.azure_auth import CLOUDS
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import DEFAULT_URL


class ArmError(Exception):
    """The control plane could not be used. The message is one sentence naming the cause."""


# The managed identity's token endpoint: the controller's IMDS, or the host azure-identity's ImdsCredential takes
# from AZURE_POD_IDENTITY_AUTHORITY_HOST (AAD pod identity; the tests' simulated VM).
IDENTITY_HOST = DEFAULT_URL
IDENTITY_PATH = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=%s"
# As azure-identity's ImdsCredential retries: 404 (the identity not assigned yet), 410 (IMDS updating), 429 and 5xx,
# five times, waiting 2 s, then twice as long each time (at most 60 s)
IDENTITY_RETRY_STATUSES = (404, 410, 429) + tuple(range(500, 600))
IDENTITY_RETRY_WAITS = (2.0, 4.0, 8.0, 16.0, 32.0)


class ArmClient(object):
    """Posts JSON to Resource Manager with the given credentials (azure_auth.resolve_credentials)."""

    def __init__(self, credentials, timeout=30.0, run_command=None):
        self.credentials = credentials
        self.timeout = timeout
        # run_command(args) -> (rc, stdout, stderr), as AnsibleModule.run_command: how `az` is run, for the CLI
        self._run_command = run_command
        # None: the system's CAs, or SSL_CERT_FILE's bundle (OpenSSL reads it)
        self._ca_path = os.environ.get("REQUESTS_CA_BUNDLE") or None
        self._endpoints = None
        self._token = None
        self._sleep = time.sleep  # between a managed identity's retries

    def post(self, path, body=None):
        """-> (HTTP status, parsed JSON body or None); a connection that fails raises ArmError."""
        return self.post_reading_headers(path, body)[:2]

    def post_reading_headers(self, path, body=None):
        """-> (HTTP status, parsed JSON body or None, {response header: value}): Resource Graph's quota is in them."""
        resource_manager = self.endpoints()[0]
        headers = {"Authorization": "Bearer %s" % self.token(), "Content-Type": "application/json"}
        data = json.dumps(body).encode("utf-8") if body is not None else b""
        return self._call(resource_manager.rstrip("/") + path, data, headers, "POST", with_headers=True)

    def endpoints(self):
        """(resource manager, login, token audience) of the credentials' cloud."""
        if self._endpoints is None:
            cloud = self.credentials["cloud_environment"]
            if cloud in CLOUDS:
                manager, login = CLOUDS[cloud]
                self._endpoints = (manager, login, manager)
            else:
                status, meta = self._call(cloud.rstrip("/") + "/metadata/endpoints?api-version=2015-01-01")
                authentication = (meta or {}).get("authentication") if isinstance(meta, dict) else None
                if status != 200 or not isinstance(authentication, dict) or not authentication.get("loginEndpoint"):
                    raise ArmError("%s/metadata/endpoints did not name a login endpoint (HTTP %s)." % (cloud, status))
                audiences = authentication.get("audiences") or [cloud]
                self._endpoints = (cloud, authentication["loginEndpoint"], audiences[0])
        return self._endpoints

    def token(self):
        if self._token is None:
            kind = self.credentials.get("kind", "service_principal")
            self._token = {"msi": self._identity_token, "cli": self._cli_token}.get(kind, self._principal_token)()
        return self._token

    def subscription_id(self):
        """The subscription: given, or (the Azure CLI) the login's default, known once a token is taken."""
        if not self.credentials.get("subscription_id"):
            self.token()
        return self.credentials["subscription_id"]

    def _principal_token(self):
        login, audience = self.endpoints()[1:]
        form = urlencode({"grant_type": "client_credentials", "client_id": self.credentials["client_id"],
                          "client_secret": self.credentials["secret"],
                          "scope": audience.rstrip("/") + "/.default"}).encode("utf-8")
        status, answer = self._call("%s%s/oauth2/v2.0/token" % (login, self.credentials["tenant"]), form,
                                    {"Content-Type": "application/x-www-form-urlencoded"}, "POST")
        if status != 200 or not isinstance(answer, dict) or not answer.get("access_token"):
            raise ArmError("The login endpoint refused client %s of tenant %s (HTTP %s: %s)."
                           % (self.credentials["client_id"], self.credentials["tenant"], status, _said(answer)))
        return answer["access_token"]

    def _identity_token(self):
        host = os.environ.get("AZURE_POD_IDENTITY_AUTHORITY_HOST") or IDENTITY_HOST
        url = host.rstrip("/") + IDENTITY_PATH % quote(self.endpoints()[2], safe="")
        if self.credentials.get("client_id"):
            url += "&client_id=" + quote(self.credentials["client_id"], safe="")
        for wait in IDENTITY_RETRY_WAITS + (None,):
            status, answer = self._call(url, headers={"Metadata": "true"}, use_proxy=False)
            if status not in IDENTITY_RETRY_STATUSES or wait is None:
                break
            self._sleep(wait)
        if status != 200 or not isinstance(answer, dict) or not answer.get("access_token"):
            raise ArmError("The managed identity%s gave no token (HTTP %s: %s)." % (
                " " + self.credentials["client_id"] if self.credentials.get("client_id") else "", status,
                _said(answer)))
        return answer["access_token"]

    def _cli_token(self):
        command = ["az", "account", "get-access-token", "--resource", self.endpoints()[2], "--output", "json"]
        if self.credentials.get("subscription_id"):
            command += ["--subscription", self.credentials["subscription_id"]]
        if shutil.which("az") is None or self._run_command is None:
            raise ArmError("There is no service principal to log in as, and no Azure CLI (az) here: give a service "
                           "principal, or install az and run az login.")
        rc, out, err = self._run_command(command)
        try:
            answer = json.loads(out or "")
        except ValueError:
            answer = None
        if rc != 0 or not isinstance(answer, dict) or not answer.get("accessToken"):
            said = (err or "").strip().splitlines()
            raise ArmError("The Azure CLI gave no token (%s)." % ((said[-1] if said else "no reason given").rstrip(".")))
        if not self.credentials.get("subscription_id"):
            if not answer.get("subscription"):
                raise ArmError("The Azure CLI's login names no subscription: give subscription_id.")
            self.credentials = dict(self.credentials, subscription_id=answer["subscription"])
        return answer["accessToken"]

    def _call(self, url, data=None, headers=None, method="GET", use_proxy=True, with_headers=False):
        try:
            # Never follow a redirect: it would carry the bearer token elsewhere.
            response = open_url(url, data=data, headers=headers, method=method, timeout=self.timeout,
                                validate_certs=True, ca_path=self._ca_path, follow_redirects="none",
                                use_proxy=use_proxy)
            status, raw, given = response.getcode(), response.read(), response.headers
        except HTTPError as exc:
            status, raw, given = exc.code, exc.read(), exc.headers
        except (URLError, ssl.SSLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ArmError("Could not reach %s: %s." % (url.split("?")[0], str(reason).rstrip(".")))
        try:
            parsed = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            parsed = None
        if with_headers:
            return status, parsed, dict(given.items()) if given is not None else {}
        return status, parsed


def _said(answer):
    said = (answer.get("error_description") or answer.get("error")) if isinstance(answer, dict) else None
    return (said if isinstance(said, str) else "no reason given").split("\n")[0].rstrip(".")
