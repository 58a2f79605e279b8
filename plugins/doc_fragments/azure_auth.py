# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Azure credentials of the control-plane modules, named as azure.azcollection names them."""

    DOCUMENTATION = r"""
notes:
  - Finds its credentials as C(azure.azcollection) does. With O(auth_source=auto), a service principal in the
    module's options first, then the environment (E(AZURE_CLIENT_ID), E(AZURE_SECRET), E(AZURE_TENANT),
    E(AZURE_SUBSCRIPTION_ID), E(AZURE_CLOUD_ENVIRONMENT)), then the profile (O(profile) or E(AZURE_PROFILE),
    C(default)) of C(~/.azure/credentials), then the Azure CLI's login (C(az account get-access-token)).
    E(ANSIBLE_AZURE_AUTH_SOURCE) sets the source as it does there.
  - O(auth_source=msi) takes a token from the controller's managed identity (its IMDS, or the host in
    E(AZURE_POD_IDENTITY_AUTHORITY_HOST)); O(client_id) then names a user-assigned identity, and O(subscription_id)
    or E(AZURE_SUBSCRIPTION_ID) is required.
  - TLS is always verified, against the system's CAs or the bundle named by E(REQUESTS_CA_BUNDLE) or E(SSL_CERT_FILE).
  - Runs on the controller (C(delegate_to) C(localhost) or a play on C(localhost)) with the standard library only.
options:
  auth_source:
    description:
      - Where the credentials come from; C(auto) looks for a service principal in the options, the environment,
        then the profile, and falls back to the Azure CLI's login.
    type: str
    default: auto
    choices: [auto, env, credential_file, cli, msi]
  subscription_id:
    description:
      - The subscription; E(AZURE_SUBSCRIPTION_ID) if not given (with the Azure CLI, then its default subscription).
    type: str
  client_id:
    description:
      - The service principal's application (client) id; E(AZURE_CLIENT_ID) if not given.
      - With O(auth_source=msi), the client id of a user-assigned managed identity (none, the system-assigned one).
    type: str
  secret:
    description: The service principal's secret; E(AZURE_SECRET) if not given.
    type: str
  tenant:
    description: The tenant (directory) id; E(AZURE_TENANT) if not given.
    type: str
  profile:
    description: The profile of C(~/.azure/credentials) to read; E(AZURE_PROFILE), else C(default).
    type: str
  cloud_environment:
    description:
      - C(AzureCloud), C(AzureChinaCloud), C(AzureUSGovernment), or the C(https://) URL of a Resource Manager whose
        C(/metadata/endpoints) names its login endpoint (as for Azure Stack); E(AZURE_CLOUD_ENVIRONMENT) if not given.
    type: str
    default: AzureCloud
"""
