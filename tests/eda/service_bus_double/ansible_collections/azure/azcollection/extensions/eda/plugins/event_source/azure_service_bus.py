"""A TEST DOUBLE of azure.azcollection's azure_service_bus event source: Service Bus is out of this machine's reach.

It puts each message on the queue exactly as the real source does ({"body": the message's JSON, parsed; "meta":
{"message_id": ...}}; tests/eda/test_event_grid_filter.py ties that shape to the real source's code), reading the
messages from a JSON-lines file named by conn_str (file://<path>), one Event Grid delivery per line, as an Event
Grid subscription with a Service Bus queue handler sends them."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Dict


async def main(queue: asyncio.Queue, args: Dict[str, Any]) -> None:
    path = Path(args["conn_str"][len("file://"):])
    taken = 0
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        for number, line in enumerate(lines[taken:], start=taken):
            await queue.put({"body": json.loads(line), "meta": {"message_id": f"{args['queue_name']}-{number}"}})
        taken = len(lines)
        await asyncio.sleep(0.2)
