# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only HTTP to Azure's control plane: a service principal's token, then JSON POSTs to Resource Manager.

Standard library only, so the tasks run wherever Ansible does. TLS is always verified, against the system's CAs
or the bundle in REQUESTS_CA_BUNDLE or SSL_CERT_FILE (the variables the Azure SDK and OpenSSL read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import ssl

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible.module_utils.urls import open_url

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.azure_auth import CLOUDS


class ArmError(Exception):
    """The control plane could not be used. The message is one sentence naming the cause."""


class ArmClient(object):
    """Posts JSON to Resource Manager as the given service principal (azure_auth.resolve_credentials)."""

    def __init__(self, credentials, timeout=30.0):
        self.credentials = credentials
        self.timeout = timeout
        # None: the system's CAs, or SSL_CERT_FILE's bundle (OpenSSL reads it)
        self._ca_path = os.environ.get("REQUESTS_CA_BUNDLE") or None
        self._endpoints = None
        self._token = None

    def post(self, path, body=None):
        """-> (HTTP status, parsed JSON body or None); a connection that fails raises ArmError."""
        resource_manager = self.endpoints()[0]
        headers = {"Authorization": "Bearer %s" % self.token(), "Content-Type": "application/json"}
        data = json.dumps(body).encode("utf-8") if body is not None else b""
        return self._call(resource_manager.rstrip("/") + path, data, headers, "POST")

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
            login, audience = self.endpoints()[1:]
            form = urlencode({"grant_type": "client_credentials", "client_id": self.credentials["client_id"],
                              "client_secret": self.credentials["secret"],
                              "scope": audience.rstrip("/") + "/.default"}).encode("utf-8")
            status, answer = self._call("%s%s/oauth2/v2.0/token" % (login, self.credentials["tenant"]), form,
                                        {"Content-Type": "application/x-www-form-urlencoded"}, "POST")
            if status != 200 or not isinstance(answer, dict) or not answer.get("access_token"):
                said = answer.get("error_description") or answer.get("error") if isinstance(answer, dict) else None
                raise ArmError("The login endpoint refused client %s of tenant %s (HTTP %s: %s)."
                               % (self.credentials["client_id"], self.credentials["tenant"], status,
                                  (said or "no reason given").split("\n")[0].rstrip(".")))
            self._token = answer["access_token"]
        return self._token

    def _call(self, url, data=None, headers=None, method="GET"):
        try:
            # Never follow a redirect: it would carry the bearer token elsewhere.
            response = open_url(url, data=data, headers=headers, method=method, timeout=self.timeout,
                                validate_certs=True, ca_path=self._ca_path, follow_redirects="none")
            status, raw = response.getcode(), response.read()
        except HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (URLError, ssl.SSLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ArmError("Could not reach %s: %s." % (url.split("?")[0], str(reason).rstrip(".")))
        try:
            return status, json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            return status, None
