"""Which store a URL names (plugin_utils/store/url.py), and the AWX job's refusal of a store under its home."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import (
    FILE,
    POSTGRESQL,
    SQLITE,
    StoreUrl,
    StoreUrlError,
    awx_refusal,
    parse_store_url,
)


@pytest.mark.parametrize("url, parsed", [
    ("", StoreUrl(FILE, "")),
    ("file:", StoreUrl(FILE, "")),
    ("file:/srv/se", StoreUrl(FILE, "/srv/se")),
    ("file:///srv/se", StoreUrl(FILE, "/srv/se")),
    ("/srv/se", StoreUrl(FILE, "/srv/se")),
    ("~/se", StoreUrl(FILE, "~/se")),
    ("sqlite:///srv/se/state.db", StoreUrl(SQLITE, "/srv/se/state.db")),
    ("sqlite://~/state.db", StoreUrl(SQLITE, "~/state.db")),
    ("postgresql://u:p@db/se", StoreUrl(POSTGRESQL, "postgresql://u:p@db/se")),
    ("postgres://db/se", StoreUrl(POSTGRESQL, "postgres://db/se")),
])
def test_each_url_names_its_store(url: str, parsed: StoreUrl) -> None:
    assert parse_store_url(url) == parsed


@pytest.mark.parametrize("url, cause", [("mysql://db/se", "is no store this collection knows"),
                                        ("sqlite://", "names no database file"), ("relative/dir", "is no store")])
def test_a_url_that_names_no_store_is_refused_in_one_sentence(url: str, cause: str) -> None:
    with pytest.raises(StoreUrlError, match=cause) as raised:
        parse_store_url(url)
    assert str(raised.value).count(". ") == 0 and str(raised.value).endswith(".")


HOME = "/home/runner"


@pytest.mark.parametrize("url, state_dir, memory, refused", [
    ("file:", "~/.ansible/x/control_plane", "~/.ansible/x/vms-a.json", True),  # the default
    ("file:", "/srv/cp", "~/.ansible/x/vms-a.json", True),
    ("file:", "/srv/cp", "", False),  # the memory off: nothing else under the home
    ("file:", "/srv/cp", "/srv/vms.json", False),
    ("sqlite://~/state.db", "~/cp", "~/vms.json", True),
    ("sqlite:///home/runner/state.db", "~/cp", "~/vms.json", True),
    ("sqlite:///srv/state.db", "~/cp", "~/vms.json", False),  # a volume every job mounts
    ("file:/srv/se", "~/cp", "~/vms.json", False),
    ("/home/runnerx/se", "~/cp", "~/vms.json", False),  # beside the home, not under it
    ("postgresql://awx-postgres/se", "~/cp", "~/vms.json", False),
])
def test_an_awx_job_refuses_a_store_under_its_fresh_home(url: str, state_dir: str, memory: str, refused: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", HOME)
    sentence = awx_refusal(url, "311", HOME, state_dir, memory)
    assert bool(sentence) is refused
    if refused:
        assert sentence.startswith("This run is AWX job 311 and keeps its state store under the job's home (")
        assert sentence.endswith("set maintenance_cycle_state_store to a PostgreSQL URL (postgresql://...) or to a "
                                 "persistent path (file:/dir or sqlite:///dir/state.db on a volume every job mounts).")
    assert awx_refusal(url, None, HOME, state_dir, memory) == "", "outside AWX the home lasts"
