# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Azure credentials a control-plane task uses, by azure.azcollection's conventions; pure, no I/O.

The same option names and environment variables (AZURE_CLIENT_ID, AZURE_SECRET, AZURE_TENANT,
AZURE_SUBSCRIPTION_ID, AZURE_PROFILE, AZURE_CLOUD_ENVIRONMENT, ANSIBLE_AZURE_AUTH_SOURCE) and the same profile file
(~/.azure/credentials), in the same order for auth_source auto: the task's options, then the environment, then the
profile, then the Azure CLI's login. `msi` (the controller's managed identity, from its IMDS; `client_id` names a
user-assigned one) is used only when asked for, as there. What each source needs and lacks is one sentence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

AUTH_ARGUMENT_SPEC = dict(
    auth_source=dict(type="str", default="auto", choices=["auto", "env", "credential_file", "cli", "msi"]),
    subscription_id=dict(type="str"),
    client_id=dict(type="str"),
    secret=dict(type="str", no_log=True),
    tenant=dict(type="str"),
    profile=dict(type="str"),
    cloud_environment=dict(type="str", default="AzureCloud"),
)
ENVIRONMENT = dict(subscription_id="AZURE_SUBSCRIPTION_ID", client_id="AZURE_CLIENT_ID", secret="AZURE_SECRET",
                   tenant="AZURE_TENANT", profile="AZURE_PROFILE", cloud_environment="AZURE_CLOUD_ENVIRONMENT")
SERVICE_PRINCIPAL = ("client_id", "secret", "tenant")
# Resource Manager and login endpoints of Azure's public clouds (as azure.azcollection names them); a
# cloud_environment that is an https:// URL is a Resource Manager whose /metadata/endpoints names its login.
CLOUDS = {
    "AzureCloud": ("https://management.azure.com/", "https://login.microsoftonline.com/"),
    "AzureChinaCloud": ("https://management.chinacloudapi.cn/", "https://login.chinacloudapi.cn/"),
    "AzureUSGovernment": ("https://management.usgovcloudapi.net/", "https://login.microsoftonline.us/"),
}


class AuthError(ValueError):
    """Credentials that cannot be used. The message is one sentence naming the cause and where it looked."""


def resolve_credentials(params, environ, read_profile):
    """-> {kind, client_id, secret, tenant, subscription_id, cloud_environment, source}; `kind` is
    service_principal, cli (the token and, unless given, the subscription come from `az`) or msi.

    `read_profile(name)` returns the profile's settings from ~/.azure/credentials ({} when the file or the
    profile is missing)."""
    source = environ.get("ANSIBLE_AZURE_AUTH_SOURCE") if params.get("auth_source", "auto") == "auto" \
        and environ.get("ANSIBLE_AZURE_AUTH_SOURCE") else params.get("auth_source", "auto")
    if source not in ("auto", "env", "credential_file", "cli", "msi"):
        raise AuthError("auth_source %s is none of auto, env, credential_file, cli and msi." % source)
    if source == "msi":
        return _identity(params, environ, "msi", "the managed identity")
    places = {"auto": ("options", "environment", "profile"), "env": ("environment",),
              "credential_file": ("profile",), "cli": ()}[source]
    if source == "auto" and params.get("profile"):
        places = ("profile",)  # a profile named in the task is where to look, before anything else (azure.azcollection)
    readers = {"options": ("the task's options", lambda: params),
               "environment": ("the environment", lambda: _from_environment(environ)),
               "profile": ("~/.azure/credentials", lambda: read_profile(_profile_name(params, environ)))}
    for place in places:
        where, read = readers[place]
        settings = read()  # the profile file is read only when it is the place to look
        given = [name for name in SERVICE_PRINCIPAL if settings.get(name)]
        if len(given) == len(SERVICE_PRINCIPAL):
            return _credentials(settings, params, environ, where)
        if given:  # half a principal here and the rest elsewhere would be somebody else's identity
            raise AuthError("%s give %s but not %s: give all three there, or none." % (
                where[0].upper() + where[1:], " and ".join(given),
                " and ".join(n for n in SERVICE_PRINCIPAL if n not in given)))
    if source in ("auto", "cli"):  # azure.azcollection's last resort: whoever `az login` left logged in
        return _identity(params, environ, "cli", "the Azure CLI")
    looked = ", ".join(readers[place][0] for place in places)
    raise AuthError("No service principal found (client_id, secret and tenant) in %s." % looked)


def _identity(params, environ, kind, where):
    """A token from the controller's managed identity or the Azure CLI: no secret here. The managed identity needs
    the subscription named (it may reach several); the CLI's default subscription serves when none is."""
    subscription = params.get("subscription_id") or environ.get(ENVIRONMENT["subscription_id"])
    if kind == "msi" and not subscription:
        raise AuthError("No subscription_id for the managed identity: give it as an option or in "
                        "AZURE_SUBSCRIPTION_ID.")
    cloud = _cloud(params, environ, {})
    client_id = None
    if kind == "msi":
        unsupported_identity_host(environ)
        # a user-assigned identity's client id: the option, else AZURE_CLIENT_ID (as azure.azcollection and
        # azure-identity read it)
        client_id = params.get("client_id") or environ.get(ENVIRONMENT["client_id"])
    return {"kind": kind, "client_id": client_id, "secret": None,
            "tenant": None, "subscription_id": subscription, "cloud_environment": cloud, "source": where}


# The hosts other than a VM's IMDS that serve a managed identity, by the variables azure-identity's
# ManagedIdentityCredential looks for (in its order); IMDS (and AZURE_POD_IDENTITY_AUTHORITY_HOST) is what this reads.
IDENTITY_HOSTS = (
    (("AZURE_FEDERATED_TOKEN_FILE",), "AKS workload identity"),
    (("IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT"), "Azure Service Fabric"),
    (("IDENTITY_ENDPOINT", "IDENTITY_HEADER"), "Azure App Service or Azure Functions"),
    (("IDENTITY_ENDPOINT", "IMDS_ENDPOINT"), "Azure Arc"),
    (("MSI_ENDPOINT",), "Azure Cloud Shell"),
)


def unsupported_identity_host(environ):
    """AuthError in one sentence when the environment says the managed identity is served by a host other than the
    VM's IMDS (azure-identity would go there; asking IMDS instead would give another identity, or none)."""
    for variables, name in IDENTITY_HOSTS:
        if all(environ.get(v) for v in variables):
            raise AuthError("The managed identity here is served by %s (%s set), which this collection does not "
                            "read: use a service principal or the Azure CLI's login on this controller."
                            % (name, " and ".join(variables)))


def _credentials(settings, params, environ, where):
    subscription = params.get("subscription_id") or settings.get("subscription_id") \
        or environ.get(ENVIRONMENT["subscription_id"])
    if not subscription:
        raise AuthError("No subscription_id: give it as an option or in AZURE_SUBSCRIPTION_ID.")
    return {"kind": "service_principal", "client_id": settings["client_id"], "secret": settings["secret"],
            "tenant": settings["tenant"], "subscription_id": subscription,
            "cloud_environment": _cloud(params, environ, settings if settings is not params else {}), "source": where}


def _cloud(params, environ, profile):
    """An option set to other than its default, then the environment, then the profile (the option's default,
    AzureCloud, must not hide AZURE_CLOUD_ENVIRONMENT)."""
    given = params.get("cloud_environment") if params.get("cloud_environment") != "AzureCloud" else None
    cloud = given or environ.get(ENVIRONMENT["cloud_environment"]) or profile.get("cloud_environment") or "AzureCloud"
    if cloud not in CLOUDS and not cloud.startswith("https://"):
        raise AuthError("cloud_environment %s is neither one of %s nor an https:// Resource Manager URL."
                        % (cloud, ", ".join(sorted(CLOUDS))))
    return cloud


def _from_environment(environ):
    return dict((name, environ.get(variable)) for name, variable in ENVIRONMENT.items() if environ.get(variable))


def _profile_name(params, environ):
    return params.get("profile") or environ.get(ENVIRONMENT["profile"]) or "default"
