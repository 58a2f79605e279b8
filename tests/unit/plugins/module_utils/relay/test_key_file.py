"""key_file: the push key's file, read alike by the relay and the Event-Driven Ansible source; each refusal one
sentence."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.key_file import ConfigError, read_token


def test_a_private_file_gives_its_key_without_the_line_end(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"0123456789abcdef\n")
    path.chmod(0o600)
    assert read_token(str(path)) == b"0123456789abcdef"


@pytest.mark.parametrize("content, mode, cause", [
    (b"0123456789abcdef", 0o644, "is readable by others (mode 644); make it 0600."),
    (b"short", 0o600, "is shorter than 16 characters."),
])
def test_a_key_others_can_read_or_too_short_is_refused(tmp_path: Path, content: bytes, mode: int, cause: str) -> None:
    path = tmp_path / "token"
    path.write_bytes(content)
    path.chmod(mode)
    with pytest.raises(ConfigError, match=cause.replace("(", r"\(").replace(")", r"\)")):
        read_token(str(path))


def test_a_missing_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cannot read the token file .*missing \(.*\)\.$"):
        read_token(str(tmp_path / "missing"))
