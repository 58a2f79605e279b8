"""A strict simulator of the Azure Instance Metadata Service's Scheduled Events.

One discrete-event engine (`engine`), two clocks: live HTTP mode (`server`) and
offline virtual-clock mode (`offline`). Scenarios are data (`scenarios/*.json`).
Run `python -m imds_simulator --help`.
"""
__all__ = ["engine", "fleet", "scenario", "server", "offline", "wire"]
