"""Run the real azure.azcollection.azure_rm inventory plugin on a config file, offline.

TEST DOUBLE for Azure only: authentication is skipped and the plugin's request queue is answered with the given
hosts (their host variables shaped as the plugin's AzureHost.hostvars builds them). Everything else is the
plugin's own code under ansible-core's InventoryManager: option parsing, its host filters, compose,
conditional_groups and keyed_groups (the Constructable machinery), group-name sanitising.

    python tests/awx/azure_rm_offline.py CONFIG.azure_rm.yml HOSTS.json  ->  JSON on stdout:
    {"queried": [URL...], "groups": {group: [host...]}, "hostvars": {host: {var: value}}}
"""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def main(config: str, hosts_file: str) -> None:
    init_plugin_loader()
    plugin = type(inventory_loader.get("azure.azcollection.azure_rm"))
    hosts: List[Dict[str, Any]] = json.loads(open(hosts_file, encoding="utf-8").read())
    queried: List[str] = []

    def credential_setup(self: Any) -> None:  # no Azure: the URLs are built with a fixed subscription
        self._clientconfig = SimpleNamespace(subscription_id=SUBSCRIPTION)

    def answer_queue(self: Any) -> None:  # what Azure would answer: the given hosts
        while not self._request_queue.empty():
            queried.append(self._request_queue.get_nowait().url)
        self._hosts = [SimpleNamespace(default_inventory_hostname=h["default_inventory_hostname"], hostvars=h)
                       for h in hosts]

    plugin._credential_setup = credential_setup
    plugin._process_queue_batch = answer_queue
    plugin._process_queue_serial = answer_queue

    inventory = InventoryManager(loader=DataLoader(), sources=[config])
    groups = {name: sorted(h.name for h in group.get_hosts())
              for name, group in inventory.groups.items() if name not in ("all", "ungrouped")}
    hostvars = {h.name: h.get_vars() for h in inventory.get_hosts()}
    json.dump({"queried": queried, "groups": groups, "hostvars": hostvars}, sys.stdout, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
