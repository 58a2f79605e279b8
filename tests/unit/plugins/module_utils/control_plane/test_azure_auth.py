"""Which service principal a control-plane task uses: options, then the environment, then the profile file, as
azure.azcollection orders them; what is missing is one sentence naming where it looked."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.azure_auth import (
    AuthError,
    resolve_credentials,
)

OPTIONS = {"auth_source": "auto", "client_id": "app", "secret": "s", "tenant": "t", "subscription_id": "sub",
           "cloud_environment": "AzureCloud", "profile": None}
ENVIRONMENT = {"AZURE_CLIENT_ID": "env-app", "AZURE_SECRET": "env-s", "AZURE_TENANT": "env-t",
               "AZURE_SUBSCRIPTION_ID": "env-sub"}
PROFILE = {"client_id": "file-app", "secret": "file-s", "tenant": "file-t", "subscription_id": "file-sub"}
NOTHING = dict(OPTIONS, client_id=None, secret=None, tenant=None, subscription_id=None)


def test_options_come_first_then_the_environment_then_the_profile() -> None:
    assert resolve_credentials(OPTIONS, ENVIRONMENT, lambda name: PROFILE)["client_id"] == "app"
    from_env = resolve_credentials(NOTHING, ENVIRONMENT, lambda name: PROFILE)
    expected = ("env-app", "env-sub", "the environment")
    assert (from_env["client_id"], from_env["subscription_id"], from_env["source"]) == expected
    assert resolve_credentials(NOTHING, {}, lambda name: PROFILE)["client_id"] == "file-app"


def test_the_profile_named_by_the_option_or_azure_profile_is_read() -> None:
    asked = []
    resolve_credentials(NOTHING, {"AZURE_PROFILE": "prod"}, lambda name: asked.append(name) or PROFILE)
    assert asked == ["prod"]


def test_an_auth_source_looks_only_there() -> None:
    with pytest.raises(AuthError, match=r"^No service principal found \(client_id, secret and tenant\) in the "
                                        r"environment\.$"):
        resolve_credentials(dict(OPTIONS, auth_source="env"), {}, lambda name: PROFILE)
    assert resolve_credentials(NOTHING, {"ANSIBLE_AZURE_AUTH_SOURCE": "credential_file"},
                               lambda name: PROFILE)["source"] == "~/.azure/credentials"


def test_without_a_principal_auto_falls_back_to_the_azure_cli_and_msi_is_used_only_when_asked() -> None:
    cli = resolve_credentials(NOTHING, {}, lambda name: {})
    assert (cli["kind"], cli["subscription_id"], cli["source"]) == ("cli", None, "the Azure CLI"), \
        "the CLI's default subscription, found when its token is taken"
    assert resolve_credentials(dict(OPTIONS, auth_source="cli"), {}, lambda name: PROFILE)["kind"] == "cli", \
        "asked for, the CLI even beside a principal"
    assert resolve_credentials(OPTIONS, ENVIRONMENT, lambda name: PROFILE)["kind"] == "service_principal"
    msi = resolve_credentials(dict(NOTHING, auth_source="msi", client_id="user-assigned"),
                              {"AZURE_SUBSCRIPTION_ID": "sub", "AZURE_CLIENT_ID": "a-principal"}, lambda name: {})
    assert (msi["kind"], msi["client_id"], msi["subscription_id"], msi["secret"]) == ("msi", "user-assigned", "sub", None)
    system = resolve_credentials(NOTHING, {"ANSIBLE_AZURE_AUTH_SOURCE": "msi", "AZURE_SUBSCRIPTION_ID": "sub"},
                                 lambda name: {})
    assert system["client_id"] is None, "the system-assigned identity"


def test_regression_a_managed_identity_takes_its_client_id_from_azure_client_id_as_azure_collection_does() -> None:
    """AZURE_CLIENT_ID was ignored with auth_source msi: a controller with a user-assigned identity named there (as
    azure.azcollection and azure-identity read it) asked IMDS for the system-assigned one."""
    msi = resolve_credentials(NOTHING, {"ANSIBLE_AZURE_AUTH_SOURCE": "msi", "AZURE_SUBSCRIPTION_ID": "sub",
                                        "AZURE_CLIENT_ID": "user-assigned"}, lambda name: {})
    assert msi["client_id"] == "user-assigned"


def test_regression_a_profile_named_in_the_task_wins_over_the_environment() -> None:
    """azure.azcollection reads a profile the task names before the environment; the environment won here."""
    asked = []
    chosen = resolve_credentials(dict(NOTHING, profile="prod"), ENVIRONMENT, lambda name: asked.append(name) or PROFILE)
    assert (chosen["client_id"], chosen["source"], asked) == ("file-app", "~/.azure/credentials", ["prod"])


@pytest.mark.parametrize("environ, host", [
    ({"AZURE_FEDERATED_TOKEN_FILE": "/var/run/token", "AZURE_CLIENT_ID": "c"}, "AKS workload identity"),
    ({"IDENTITY_ENDPOINT": "http://x", "IDENTITY_HEADER": "h"}, "Azure App Service or Azure Functions"),
    ({"IDENTITY_ENDPOINT": "http://x", "IDENTITY_HEADER": "h", "IDENTITY_SERVER_THUMBPRINT": "t"},
     "Azure Service Fabric"),
    ({"IDENTITY_ENDPOINT": "http://x", "IMDS_ENDPOINT": "http://y"}, "Azure Arc"),
    ({"MSI_ENDPOINT": "http://x"}, "Azure Cloud Shell"),
])
def test_regression_a_managed_identity_another_host_serves_is_named_in_one_sentence(environ: dict, host: str) -> None:
    """azure-identity finds these hosts by their variables; this asked the VM's IMDS whatever the host was."""
    with pytest.raises(AuthError, match=r"^The managed identity here is served by %s \(" % host):
        resolve_credentials(dict(NOTHING, auth_source="msi", subscription_id="sub"), environ, lambda name: {})


@pytest.mark.parametrize("params, environ, sentence", [
    (dict(NOTHING, auth_source="env"), {}, "No service principal found (client_id, secret and tenant) in the "
                                           "environment."),
    (dict(NOTHING, auth_source="msi"), {}, "No subscription_id for the managed identity: give it as an option or in "
                                           "AZURE_SUBSCRIPTION_ID."),
    (NOTHING, {"ANSIBLE_AZURE_AUTH_SOURCE": "kerberos"}, "auth_source kerberos is none of auto, env, "
                                                         "credential_file, cli and msi."),
    (dict(OPTIONS, subscription_id=None), {}, "No subscription_id: give it as an option or in AZURE_SUBSCRIPTION_ID."),
    (dict(OPTIONS, cloud_environment="http://plain"), {}, "cloud_environment http://plain is neither one of "
                                                          "AzureChinaCloud, AzureCloud, AzureUSGovernment nor an "
                                                          "https:// Resource Manager URL."),
    (dict(NOTHING, client_id="reader-app", secret="s", subscription_id="sub"), ENVIRONMENT,
     "The task's options give client_id and secret but not tenant: give all three there, or none."),
])
def test_what_cannot_be_used_is_one_sentence(params: dict, environ: dict, sentence: str) -> None:
    with pytest.raises(AuthError) as refused:
        resolve_credentials(params, environ, lambda name: {})
    assert str(refused.value).startswith(sentence)
