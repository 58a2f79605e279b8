"""The Windows VM host: win_uri options and how its answers map to IMDS errors, its state through slurp, win_file
and win_copy, and the lock it declares it does not keep."""
from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import MAX_BODY_BYTES, ImdsError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.lock import argument_spec, run_lock
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.windows_host import (
    WindowsVm,
    answer_of,
    state_text_of,
    win_uri_args,
    windows_path,
)

URL = "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"


@pytest.mark.parametrize("given, expected", [
    ("~/.ansible/azure_imds_scheduled_events/state.json", r"%USERPROFILE%\.ansible\azure_imds_scheduled_events\state.json"),
    ("~", "%USERPROFILE%"),
    (r"C:\ProgramData\se\state.json", r"C:\ProgramData\se\state.json"),
    ("C:/ProgramData/se/state.json", r"C:\ProgramData\se\state.json"),
    ("~user/state.json", r"~user\state.json"),  # only the current user's ~ has a meaning we know
])
def test_windows_paths_put_the_profile_in_place_of_a_leading_tilde(given: str, expected: str) -> None:
    assert windows_path(given) == expected


def test_every_request_carries_the_metadata_header_and_never_a_proxy_or_redirect() -> None:
    args = win_uri_args("POST", URL, '{"StartRequests": []}', 2.2)
    assert args["headers"] == {"Metadata": "true"}
    assert args["use_proxy"] is False and args["follow_redirects"] == "none"
    assert args["url_timeout"] == 3  # whole seconds, never shorter than asked
    assert args["content_type"] == "application/json" and json.loads(args["body"]) == {"StartRequests": []}
    assert {200, 301, 404, 410, 429, 500, 503} <= set(args["status_code"]), "every status comes back to be judged"
    assert "body" not in win_uri_args("GET", URL, None, 0.2) and win_uri_args("GET", URL, None, 0.2)["url_timeout"] == 1


def answer(status: int, content: str = "", **extra: object) -> dict:
    return dict(changed=False, status_code=status, status_description="x", content=content, **extra)


def test_a_2xx_answer_is_its_body_and_an_empty_one_is_empty() -> None:
    assert answer_of("GET", URL, 5, answer(200, '{"DocumentIncarnation": 1, "Events": []}')).startswith(b"{")
    assert answer_of("GET", URL, 5, answer(200, "")) == b""


@pytest.mark.parametrize("status, retryable", [(400, False), (404, False), (410, True), (429, True), (500, True),
                                               (503, True)])
def test_error_statuses_keep_the_client_retry_rules_and_imds_text(status: int, retryable: bool) -> None:
    with pytest.raises(ImdsError) as caught:
        answer_of("GET", URL, 5, answer(status, '{"error": "Bad request. Required metadata header not specified"}'))
    assert caught.value.status == status and caught.value.retryable is retryable
    assert "HTTP %d: Bad request. Required metadata header not specified." % status in str(caught.value)


def test_a_redirect_is_refused_and_names_its_target() -> None:
    with pytest.raises(ImdsError, match="never follow redirects") as caught:
        answer_of("GET", URL, 5, answer(302, "", location="http://elsewhere.invalid/"))
    assert "http://elsewhere.invalid/" in str(caught.value) and not caught.value.retryable


@pytest.mark.parametrize("message, expected", [
    ("Unhandled exception occurred when sending web request. Exception: The operation has timed out.",
     "did not answer GET"),
    ("Unhandled exception occurred when sending web request. Exception: Unable to connect to the remote server",
     "cannot reach IMDS at"),
])
def test_send_failures_are_retryable_like_connection_errors(message: str, expected: str) -> None:
    with pytest.raises(ImdsError, match=expected) as caught:
        answer_of("GET", URL, 5, {"failed": True, "msg": message})
    assert caught.value.retryable


def test_other_win_uri_failures_are_final_and_name_win_uri() -> None:
    with pytest.raises(ImdsError, match="ansible.windows.win_uri failed on the VM") as caught:
        answer_of("GET", URL, 5, {"failed": True, "msg": "Unsupported parameters for (win_uri) module: x"})
    assert not caught.value.retryable


def test_an_oversized_answer_is_refused() -> None:
    with pytest.raises(ImdsError, match="refusing to parse"):
        answer_of("GET", URL, 5, answer(200, "x" * (MAX_BODY_BYTES + 1)))


def test_slurp_results_become_state_text_missing_or_unreadable() -> None:
    text = '{"version": 1}'
    assert state_text_of("p", {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}) == text
    assert state_text_of("p", {"failed": True, "msg": r"Path C:\x\state.json is not found"}) is None
    with pytest.raises(StateUnreadable, match="is a directory"):
        state_text_of("p", {"failed": True, "msg": r"Path C:\x is a directory"})
    with pytest.raises(StateUnreadable, match="not UTF-8"):
        state_text_of("p", {"content": base64.b64encode(b"\xff\xfe").decode()})


class Calls:
    """Records each module and action run on the VM, answering each with `answers` (by name) or success."""

    def __init__(self, **answers: dict) -> None:
        self.made: list = []
        self.answers = answers

    def __call__(self, name: str, args: dict) -> dict:
        self.made.append((name, args))
        return self.answers.get(name.rsplit(".", 1)[-1], {"changed": True})


def test_the_state_is_written_with_its_folder_first_and_a_failure_is_one_sentence() -> None:
    calls = Calls()
    WindowsVm({}, calls, calls, print).write_state(r"%USERPROFILE%\se\state.json", "{}\n")
    assert calls.made == [("ansible.windows.win_file", {"path": r"%USERPROFILE%\se", "state": "directory"}),
                          ("ansible.windows.win_copy", {"content": "{}\n", "dest": r"%USERPROFILE%\se\state.json"})]
    denied = Calls(win_copy={"failed": True, "msg": "Access is denied."})
    with pytest.raises(OSError, match=r"could not write C:\\s\.json on the VM: Access is denied\.$"):
        WindowsVm({}, denied, denied, print).write_state(r"C:\s.json", "{}")


def test_a_windows_vm_keeps_no_lock_and_says_so_where_one_is_asked_for() -> None:
    warnings: list = []
    params = dict((name, spec.get("default")) for name, spec in argument_spec().items())
    result = run_lock(dict(params, path=r"C:\s.json.lock", owner="run 1", state="held"),
                      WindowsVm({}, Calls(), Calls(), warnings.append))
    assert result == {"changed": False, "lock": {"path": r"C:\s.json.lock", "owner": "run 1", "taken": False,
                                                 "held_by": None, "supported": False}}
    assert warnings == [WindowsVm.capabilities.no_lock]
