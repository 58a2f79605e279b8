"""HTTPS end to end with a real certificate chain (a CA and a server certificate made here with `cryptography`):
the source listens on every address with the rulebooks' certfile/keyfile/cafile options, a real relay process
pushes to it over HTTPS checking the chain, and the real report_done playbook reports to the name the
certificate carries (never https://0.0.0.0), checking the chain with the source's cafile."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

from imds_simulator.fleet import FleetSpec
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import relay_key
from tests.eda.test_event_source import TOKEN, Source, load_source, started
from tests.certificates import certificate_chain
from tests.live_fleet import LiveFleet
from tests.relay.test_relay_process import RelayBench
from tests.timing import wait_for

BIN = Path(sys.executable).parent
PLAYBOOK = "azure_imds.scheduled_events.report_done"


def report_done(tmp_path: Path, extra: Dict[str, Any]) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    return subprocess.run([str(BIN / "ansible-playbook"), PLAYBOOK, "-i", "localhost,", "-c", "local",
                           "-e", json.dumps(dict(extra, ansible_python_interpreter=sys.executable))],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_https_from_the_rulebook_options_relay_push_and_done_report_check_the_chain(tmp_path: Path) -> None:
    ca_file, cert_file, key_file = certificate_chain(tmp_path)
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1))
    vm = fleet.vms[0]

    async def scenario() -> Tuple[Dict[str, Any], subprocess.CompletedProcess, subprocess.CompletedProcess, str]:
        source = Source(tmp_path, host="0.0.0.0", certfile=str(cert_file), keyfile=str(key_file),
                        cafile=str(ca_file), expected_hosts=vm)
        task = await started(source)
        relay = RelayBench(tmp_path, fleet, vm, source.port, ca_file=str(ca_file), token=relay_key(TOKEN, vm),
                           controller_url=f"https://localhost:{source.port}/push")
        relay.start()
        try:
            await asyncio.to_thread(wait_for, relay.records, 30, "the relay's first document")
            fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 900, "resources": {"names": [vm]}})
            try:
                event = (await source.event(30))["scheduled_events"]
            except asyncio.TimeoutError:
                raise AssertionError("no cycle event; the relay said: " + relay.stop())
            unchecked = await asyncio.to_thread(report_done, tmp_path, {"done_url": event["done_url"]})
            checked = await asyncio.to_thread(report_done, tmp_path, {"done_url": event["done_url"],
                                                                      "done_ca": event["done_ca"]})
        finally:
            stderr = relay.stop()
            task.cancel()
        return event, unchecked, checked, stderr

    try:
        event, unchecked, checked, stderr = asyncio.run(scenario())
    finally:
        fleet.close()
    assert event["changed"] == [vm], "the relay's pushes came over HTTPS, the chain checked with its ca_file"
    # A handshake that times out on a loaded machine is retried from the spool; what must never appear is a
    # refusal or a chain the relay could not check.
    assert "refused" not in stderr and "certificate" not in stderr.lower(), stderr
    assert event["done_url"].startswith("https://localhost:"), "a name the certificate carries, not 0.0.0.0"
    assert event["done_ca"] == str(ca_file)
    assert unchecked.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in unchecked.stdout, "the chain is checked"
    assert checked.returncode == 0, checked.stdout[-3000:]


def test_a_certificate_without_a_name_for_the_done_reports_is_one_sentence(tmp_path: Path) -> None:
    module = load_source()
    settings = module.settings_of({"token_file": "t", "certfile": "c.pem", "keyfile": "k.pem", "done_host": "ctl"})
    assert module.done_host_of(settings) == "ctl"
    wildcard = module.settings_of({"token_file": "t", "host": "0.0.0.0"})
    assert module.done_host_of(wildcard) == "127.0.0.1"
    try:
        module.settings_of({"token_file": "t", "cafile": "ca.pem"})
    except module.ConfigError as exc:
        assert "cafile checks the source's own certificate" in str(exc)
    else:
        raise AssertionError("cafile without a certificate is refused")
