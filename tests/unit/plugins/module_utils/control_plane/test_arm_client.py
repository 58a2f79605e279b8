"""arm_client's token sources without a network: the Azure CLI through the task's run_command (its default
subscription taken when none is named; its refusal one sentence), and the managed identity's URL. The service
principal and the HTTP itself are proven against the simulator (tests/integration/test_control_plane_modules.py)."""
from __future__ import annotations

import json
from typing import List, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.arm_client import (
    ArmClient,
    ArmError,
)

CLI = {"kind": "cli", "client_id": None, "secret": None, "tenant": None, "subscription_id": None,
       "cloud_environment": "AzureCloud", "source": "the Azure CLI"}


def az(answer: Tuple[int, str, str], asked: List[List[str]]):
    def run(args: List[str]) -> Tuple[int, str, str]:
        asked.append(args)
        return answer
    return run


@pytest.fixture(autouse=True)
def az_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/" + name)


def test_the_cli_token_and_its_default_subscription() -> None:
    asked: List[List[str]] = []
    out = json.dumps({"accessToken": "tok", "subscription": "sub-1", "tenant": "t", "tokenType": "Bearer"})
    client = ArmClient(dict(CLI), run_command=az((0, out, ""), asked))
    assert (client.subscription_id(), client.token()) == ("sub-1", "tok")
    assert asked == [["az", "account", "get-access-token", "--resource", "https://management.azure.com/",
                      "--output", "json"]], "asked once, for Resource Manager, the login's default subscription"
    named = ArmClient(dict(CLI, subscription_id="sub-2"), run_command=az((0, out, ""), asked))
    assert named.subscription_id() == "sub-2" and named.token() == "tok"
    assert asked[-1][-2:] == ["--subscription", "sub-2"]


@pytest.mark.parametrize("answer, sentence", [
    ((1, "", "WARNING: x\nERROR: Please run 'az login' to setup account.\n"),
     "The Azure CLI gave no token (ERROR: Please run 'az login' to setup account)."),
    ((0, "not json", ""), "The Azure CLI gave no token (no reason given)."),
    ((0, json.dumps({"accessToken": "tok"}), ""), "The Azure CLI's login names no subscription: give subscription_id."),
])
def test_what_the_cli_cannot_give_is_one_sentence(answer: Tuple[int, str, str], sentence: str) -> None:
    with pytest.raises(ArmError) as refused:
        ArmClient(dict(CLI), run_command=az(answer, [])).token()
    assert str(refused.value) == sentence
